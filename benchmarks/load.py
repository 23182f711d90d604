"""A class on one machine: S dashboard sessions at once, each moving sliders, against one `make run`.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.load [--sessions 30] [--arrive 60] [--duration 60]
        [--browsers 2] [--think 1.0] [--env NAME=VALUE] [--make NAME=VALUE] [--url URL]
        [--out .cache/load.md] [--json PATH]

Starts `make run` on a free port (harness.server.Server; `--env NAME=VALUE` adds to its environment,
e.g. thread settings; `--make NAME=VALUE` to its command line) unless `--url` names a running server.
It is served as docs/classroom.md says to serve a class: a preheated kernel for every session
(`POOL_SIZE=S`) and no refill during the class (`FILL_DELAY=3600`), unless `--make POOL_SIZE=...`
says otherwise (`--make POOL_SIZE=1`: voila.json's one kernel, the others started as visitors
come). Its kernel cap is lifted to S + the pool (`MAX_KERNELS`) unless `--make MAX_KERNELS=...`
says otherwise (`--make MAX_KERNELS=` keeps voila.json's cap: sessions over it get HTTP 503). It
waits for make run's "The dashboard is ready for N visitors" (serving/kernels.py), the moment a
teacher lets the class in, then opens S sessions staggered evenly over `--arrive` seconds. Each
session is a new page: a preheated kernel while the pool lasts, else a new one. `--browsers K` of
them are headless Chromium pages (Debian's chromium via
Playwright), the rest harness.protocol clients that speak the widget protocol over the kernel
websocket as a page's widget manager does.

Each session, once its widget state is in, moves sliders until `--duration` seconds after the last
session opened (so that all S move at once for that long; the early ones move longer): a random control of
lr, N, B and w0, a step from its current value (as an arrow key or a short drag would), then waits for the
answer and thinks for a random 0.5x to 1.5x `--think` seconds. Protocol clients time each move from
sending the update to the kernel's `status: idle` for it (every chart's update sent: "answered"); an N or
w0 move also waits for the stability map, which the kernel recomputes on a worker thread, to say it is
current again ("settled"). Browser pages, each a Chromium process of its own as each student's is,
press an arrow key on the slider's handle and time it to the trajectory chart's drawing events in the
page (harness.protocol.CHART_DRAWN); then they check that every chart on the page holds the run
its share link names, as its kernel computed it (harness.pages), within CURRENT_S: a page with a
chart still on an older run is counted as behind.

Recorded: the page's HTML (GET) and first widget state per session (the first-chart proxy for protocol
clients; browser pages report their real first chart: the first Plotly trace drawn, from navigation
start), move times p50 / p95 / max, unanswered moves (none within 30 s), kernel errors (every iopub
`error` message, kernel status `dead` / `restarting`, websockets closed by the server), memory (RSS and
PSS from /proc/PID/smaps_rollup of voila and all its kernels, sampled every 2 s, as benchmarks.memory
reads them) and CPU (the kernels', the server's, this load client's with its Chromium, and the machine's),
and the machine's memory in use (total less available: everything, Chromium and this client included).
A second table gives each minute of the class: sessions open, moves answered or redrawn, and their
p50 / p95.

Bounded: sessions that have not opened by `--open-timeout` count as failed, and a hard deadline
(`--deadline`, default arrive + duration + open timeout + 60 s) cancels whatever is still running; a
watchdog thread stops the server and exits if even that hangs. The server and every kernel it started
are stopped at the end. Prints one markdown table and writes it to `--out` (default .cache/load.md).
Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import random
import re
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

from benchmarks.memory import rollup
from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.js import call
from harness.pages import settled
from harness.protocol import CHART_DRAWN, ProtocolError, Session
from harness.server import ROOT, Server
from harness.stats import summary
from widgets.model import Model

MOVED = ("lr", "N", "B", "w0")
ANSWER_S = 30.0  # a move not answered by then is "unanswered"
CURRENT_S = 10.0  # a browser page whose charts do not draw a move's run by then is behind
SETTLE_S = 30.0  # the stability map's recompute, likewise
SAMPLE_S = 2.0


def log(*parts) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *parts, file=sys.stderr, flush=True)


# Moves ------------------------------------------------------------------------------------------


def step(name: str, value, rng: random.Random):
    """A slider step from `value`, as arrow keys or a short drag make it, kept in range."""
    if name == "lr":
        return float(f"{min(max(value * 10 ** rng.uniform(-0.3, 0.3), 1e-4), 10.0):.4g}")
    if name == "N":
        return int(min(max(value + rng.choice((-1, 1)) * rng.randint(1, 40), 1), 1000))
    if name == "B":
        return int(min(max(value + rng.choice((-1, 1)) * rng.randint(1, 16), 1), 512))
    return round(min(max(value + rng.choice((-1, 1)) * rng.uniform(0.1, 1.5), -10.0), 10.0), 1)


@dataclasses.dataclass
class Move:
    control: str
    seconds: float | None  # to the kernel's idle (protocol) or the trajectory's redraw (browser)
    settled: float | None = None  # N and w0 (protocol): until the stability map is current again
    figures: int = 0
    browser: bool = False
    at: float = 0.0  # time.monotonic() when the move was made
    current: bool | None = None  # browser: every chart then drew the page's new run (harness.pages)


@dataclasses.dataclass
class Visit:
    index: int
    browser: bool
    arrived: float  # seconds after the first arrival
    page_s: float | None = None  # GET until the whole HTML (protocol)
    state_s: float | None = None  # until every widget's state (protocol): the first-chart proxy
    first_chart_s: float | None = None  # browser: navigation start to the first trace drawn
    failed: str | None = None
    opened_at: float | None = None  # time.monotonic() when its widget state (or first chart) was in
    moves: list[Move] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    statuses: list[str] = dataclasses.field(default_factory=list)
    closed: str | None = None


def _map_current(session: Session, status_id: str) -> bool:
    value = str(session.models.get(status_id).state.get("value", "")) if status_id in session.models else ""
    return "Computing" not in value


class Class:
    """When every session has opened (or failed to), and so when moving stops: `duration` after that."""

    def __init__(self, count: int, duration: float):
        self.left, self.duration = count, duration
        self.all_open: float | None = None  # time.monotonic() when the last session opened

    def opened(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.all_open = time.monotonic()

    def moving(self) -> bool:
        return self.all_open is None or time.monotonic() < self.all_open + self.duration


async def protocol_visit(visit: Visit, url: str, group: Class, think: float, open_timeout: float, rng):
    try:
        session = await asyncio.wait_for(Session.open(url, timeout=open_timeout), open_timeout)
    except (TimeoutError, OSError, ProtocolError) as error:
        visit.failed = f"open: {type(error).__name__}: {error}"[:200]
        group.opened()
        return
    group.opened()
    visit.opened_at = time.monotonic()
    visit.page_s, visit.state_s = session.page_seconds, session.state_seconds
    log(f"session {visit.index:2d} open: page {visit.page_s:.1f} s, state {visit.state_s:.1f} s")
    try:
        statuses = [
            w.model_id for w in session.find("HTMLModel") if "Stability map for" in str(w.state.get("value"))
        ]
        status_id = statuses[0] if statuses else ""
        values = {name: session.control_value(name) for name in MOVED}
        while group.moving() and not session.closed:
            name = rng.choice(MOVED)
            values[name] = step(name, values[name], rng)
            answer = await session.update(session.control(name), {"value": values[name]}, timeout=ANSWER_S)
            move = Move(name, answer.seconds, figures=answer.figure_updates, at=answer.sent)
            if answer.answered and name in ("N", "w0") and status_id:
                if await session.wait_for(lambda s: _map_current(s, status_id), SETTLE_S):
                    move.settled = time.monotonic() - answer.sent
            visit.moves.append(move)
            await asyncio.sleep(think * rng.uniform(0.5, 1.5))
    finally:
        visit.errors = [f"{e.get('ename')}: {str(e.get('evalue'))[:100]}" for e in session.errors]
        visit.statuses, visit.closed = list(session.statuses), session.closed
        await session.close(shutdown=True)  # what the page's beforeunload does
    log(f"session {visit.index:2d} done: {len(visit.moves)} moves")


PAGE_HOOK = call(Path(__file__).with_name("load_hook.js"), CHART_DRAWN)


async def browser_visit(
    visit: Visit, playwright, url: str, group: Class, think: float, open_timeout: float, rng, model
):
    # A browser process per page, as each student has: pages of one browser share its main threads,
    # and one that is not in front does not draw.
    browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)[:200]))
    try:
        try:
            await page.goto(url, wait_until="commit", timeout=open_timeout * 1000)
            first = await page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .scatterlayer .trace').length > 0 "
                "&& performance.now()",
                timeout=open_timeout * 1000,
                polling=50,
            )
            visit.first_chart_s = await first.json_value() / 1000
            await page.wait_for_function(PAGE_HOOK, timeout=open_timeout * 1000, polling=200)
            _, settings = await settled(page, model, lambda _: True, CURRENT_S)  # the page's first run
        except Exception as error:  # Playwright's TimeoutError, a closed page
            visit.failed = f"open: {type(error).__name__}: {str(error)[:160]}"
            group.opened()
            return
        group.opened()
        visit.opened_at = time.monotonic()
        log(f"browser {visit.index:2d} open: first chart {visit.first_chart_s:.1f} s")
        while group.moving():
            name = rng.choice(MOVED)
            handle = (
                page.locator(".widget-slider")
                .filter(has=page.locator("label", has_text=re.compile(f"^{re.escape(name)}$")))
                .locator(".noUi-handle")
            )
            try:
                await handle.focus()
                before, at = await page.evaluate("performance.now()"), time.monotonic()
                await handle.press(rng.choice(("ArrowLeft", "ArrowRight")))
                drawn = await page.wait_for_function(
                    f"() => window.__load.drawn > {before} && window.__load.drawn",
                    timeout=ANSWER_S * 1000,
                    polling="raf",
                )
                move = Move(name, (await drawn.json_value() - before) / 1000, browser=True, at=at)
            except Exception:  # not redrawn in time (an edge of the range moves nothing, too)
                move = Move(name, None, browser=True, at=time.monotonic())
            # Whether every chart then holds the run the page's share link names, which the page's
            # kernel computed: a chart left on the previous run is behind.
            wrong, settings = await settled(
                page, model, lambda now, before=settings: now != before, CURRENT_S
            )
            if wrong != ["not moved"]:
                move.current = not wrong
                if wrong:
                    log(f"browser {visit.index:2d} behind after {name}: {wrong[:3]}")
            visit.moves.append(move)
            await asyncio.sleep(think * rng.uniform(0.5, 1.5))
    finally:
        visit.errors = errors
        with contextlib.suppress(Exception):
            await page.close(run_before_unload=True)
        with contextlib.suppress(Exception):
            await browser.close()
    log(f"browser {visit.index:2d} done: {len(visit.moves)} moves")


# Sampling ---------------------------------------------------------------------------------------


def _rollup(pid: int) -> dict | None:
    """benchmarks.memory's rollup, or None for a process that has gone (or cannot be read)."""
    try:
        return rollup(pid)
    except (OSError, KeyError, ValueError):
        return None


class Sampler(threading.Thread):
    """Every SAMPLE_S: memory of voila and each kernel, their threads, and the machine's CPU."""

    def __init__(self, server: Server | None):
        super().__init__(name="load-sampler", daemon=True)
        self.server = server
        self.stop_event = threading.Event()
        self.samples: list[dict] = []
        self.cpu_seconds: dict[int, float] = {}  # last cpu_times total seen per pid (kernels, voila)
        self.kinds: dict[int, str] = {}
        self.threads: dict[int, int] = {}
        self.machine_busy: list[float] = []
        self.machine_used: list[float] = []  # GiB in use on the machine (total less available)
        self.kernel_env: dict[str, set] = {}  # the --env names as the kernels really have them
        self.watch_env: tuple[str, ...] = ()
        psutil.cpu_percent(None)

    def processes(self) -> list[tuple[str, psutil.Process]]:
        if self.server is None:
            return []
        found = [("kernel", p) for p in self.server.kernels()]
        voila = self.server.voila()
        return found + ([("voila", voila)] if voila else [])

    def sample(self) -> None:
        rows = []
        for kind, process in self.processes():
            memory = _rollup(process.pid)
            if kind == "kernel" and self.watch_env:
                with contextlib.suppress(psutil.Error):
                    environ = process.environ()
                    for name in self.watch_env:
                        self.kernel_env.setdefault(name, set()).add(environ.get(name, "(unset)"))
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                self.cpu_seconds[process.pid] = times.user + times.system
                self.kinds[process.pid] = kind
                self.threads[process.pid] = max(self.threads.get(process.pid, 0), process.num_threads())
            if memory:
                rows.append({"kind": kind, "pid": process.pid, **memory})
        busy = psutil.cpu_percent(None)
        self.machine_busy.append(busy)
        memory = psutil.virtual_memory()
        self.machine_used.append((memory.total - memory.available) / 2**30)
        self.samples.append({"t": time.monotonic(), "rows": rows, "busy": busy})

    def run(self) -> None:
        while not self.stop_event.wait(SAMPLE_S):
            with contextlib.suppress(Exception):
                self.sample()

    def peak(self) -> dict:
        best = {"pss": 0.0, "rss": 0.0, "kernels": 0, "kernel_pss": [], "voila_rss": 0.0}
        for sample in self.samples:
            kernels = [r for r in sample["rows"] if r["kind"] == "kernel"]
            pss = sum(r["pss"] for r in sample["rows"])
            if pss > best["pss"]:
                best = {
                    "pss": pss,
                    "rss": sum(r["rss"] for r in sample["rows"]),
                    "kernels": len(kernels),
                    "kernel_pss": [r["pss"] for r in kernels],
                    "kernel_rss": [r["rss"] for r in kernels],
                    "voila_rss": sum(r["rss"] for r in sample["rows"] if r["kind"] == "voila"),
                }
        return best


# The run ----------------------------------------------------------------------------------------


async def run(args, url: str) -> tuple[list[Visit], float, float | None]:
    """The visits, this client's CPU seconds (Chromium included, measured before it closes), and when
    every session was open (time.monotonic(), None if that never happened)."""
    rng = random.Random(args.seed)
    count = args.sessions
    browsers = min(args.browsers, count)
    # Browser pages spread through the arrivals, never the first (the preheated kernel's) session.
    browser_at = (
        {min(round((i + 0.5) * count / browsers), count - 1) for i in range(browsers)} if browsers else set()
    )
    visits = [Visit(i, i in browser_at, i * args.arrive / max(count - 1, 1)) for i in range(count)]
    playwright = None
    # Each browser page's charts are checked against a Model of its own (harness.pages), made
    # before anyone arrives.
    models = {v.index: Model() for v in visits if v.browser}
    if browsers:
        from playwright.async_api import async_playwright

        playwright = await async_playwright().start()
    group = Class(count, args.duration)
    start = time.monotonic()
    client_before = _client_cpu()
    client_cpu = 0.0

    async def one(visit: Visit):
        await asyncio.sleep(max(visit.arrived - (time.monotonic() - start), 0))
        own = random.Random(rng.random())
        if visit.browser:
            await browser_visit(
                visit, playwright, url, group, args.think, args.open_timeout, own, models[visit.index]
            )
        else:
            await protocol_visit(visit, url, group, args.think, args.open_timeout, own)

    tasks = [asyncio.create_task(one(v)) for v in visits]
    try:
        done, pending = await asyncio.wait(tasks, timeout=args.deadline)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for visit, task in zip(visits, tasks, strict=True):
            if task in pending:
                visit.failed = visit.failed or "cancelled at the hard deadline"
            elif task.exception() is not None:
                visit.failed = visit.failed or f"{type(task.exception()).__name__}: {task.exception()}"[:200]
    finally:
        client_cpu = _client_cpu() - client_before
        if playwright is not None:
            await playwright.stop()
    return visits, client_cpu, group.all_open


def _quantiles(values) -> tuple[float, float, float] | None:
    """(median, p95, max) of the values that are not None; None when there are none."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    stats = summary(values)
    return stats["median"], stats["p95"], stats["max"]


def _fmt(q, unit: str = "s", scale: float = 1.0, digits: int = 2) -> str:
    if q is None:
        return "n/a"
    return " / ".join(f"{v * scale:.{digits}f}" for v in q) + f" {unit}"


def table(
    args,
    visits: list[Visit],
    sampler: Sampler,
    env: dict,
    wall: float,
    client_cpu: float,
    start: float,
    all_open: float | None,
    ready: dict | None = None,
) -> str:
    """The markdown tables; `all_open` is when the last session opened (time.monotonic(), like `start`);
    `ready`, what was measured at make run's ready line (seconds, memory), when it started one."""
    proto = [v for v in visits if not v.browser]
    pages = [v for v in visits if v.browser]
    opened = [v for v in visits if not v.failed or v.moves]
    moves = [m for v in visits for m in v.moves if not m.browser]
    browser_moves = [m for v in visits for m in v.moves if m.browser]
    answered = [m for m in moves if m.seconds is not None]
    together = [m for m in answered if all_open is not None and m.at >= all_open]
    errors = [e for v in visits for e in v.errors]
    dead = [s for v in visits for s in v.statuses]
    closed = [v.closed for v in visits if v.closed and "client" not in v.closed]
    failures = sorted({v.failed for v in visits if v.failed})
    peak = sampler.peak()
    cpu = {kind: 0.0 for kind in ("kernel", "voila")}
    for pid, seconds in sampler.cpu_seconds.items():
        cpu[sampler.kinds[pid]] += seconds
    threads = [n for pid, n in sampler.threads.items() if sampler.kinds.get(pid) == "kernel"]
    busy = sampler.machine_busy
    cores = psutil.cpu_count()
    waits = [m for m in moves if m.control in ("N", "w0") and m.seconds is not None]
    unsettled = sum(1 for m in waits if m.settled is None)
    first_charts = ", ".join(f"{v.first_chart_s:.1f} s" if v.first_chart_s else "none" for v in pages)
    kernel_memory = (
        f"{statistics.median(peak['kernel_pss']):.0f} / {statistics.median(peak['kernel_rss']):.0f} MB"
        if peak["kernel_pss"]
        else "n/a"
    )
    ms = {"unit": "ms", "scale": 1000, "digits": 0}
    rows = [
        *(
            [
                (
                    'make run started to "The dashboard is ready for N visitors"',
                    f'{ready["seconds"]:.0f} s (Voila\'s "filled" line {ready["filled_s"]:.0f} s)'
                    if ready.get("filled_s") is not None
                    else f"{ready['seconds']:.0f} s",
                ),
                (
                    "the pool waiting, before any visitor: voila + kernels PSS / RSS",
                    f"{ready['pss'] / 1024:.2f} / {ready['rss'] / 1024:.2f} GiB ({ready['kernels']} kernels)",
                ),
            ]
            if ready
            else []
        ),
        (
            "sessions that opened / asked",
            f"{len(opened)} / {len(visits)}"
            + (f" (failed: {'; '.join(failures)[:300]})" if failures else ""),
        ),
        ("page HTML (GET), p50 / p95 / max", _fmt(_quantiles(v.page_s for v in proto))),
        (
            "first widget state (first-chart proxy), p50 / p95 / max",
            _fmt(_quantiles(v.state_s for v in proto)),
        ),
        (
            "first widget state of the first session (preheated kernel)",
            f"{proto[0].state_s:.2f} s" if proto and proto[0].state_s else "n/a",
        ),
        ("Chromium: first chart drawn, from navigation start, each page", first_charts or "no pages"),
        (
            "moves answered / sent (protocol clients)",
            f"{len(answered)} / {len(moves)} ({len(moves) - len(answered)} unanswered within {ANSWER_S:g} s)",
        ),
        (
            "move to the kernel's idle (every chart sent), p50 / p95 / max",
            _fmt(_quantiles(m.seconds for m in answered), **ms),
        ),
        (
            "all sessions open, seconds after the start",
            f"{all_open - start:.0f} s" if all_open is not None else "never",
        ),
        (
            f"&nbsp; moves made while all {len(visits)} were open, p50 / p95 / max",
            _fmt(_quantiles(m.seconds for m in together), **ms) + f" ({len(together)} moves)",
        ),
        *(
            (
                f"&nbsp; {name}, p50 / p95 / max",
                _fmt(_quantiles(m.seconds for m in answered if m.control == name), **ms),
            )
            for name in MOVED
        ),
        (
            "N / w0 move until the stability map is current, p50 / p95 / max",
            _fmt(_quantiles(m.settled for m in waits), **ms)
            + (f" ({unsettled} not within {SETTLE_S:g} s)" if unsettled else ""),
        ),
        (
            "Chromium: key to trajectory redrawn, p50 / p95 / max",
            _fmt(_quantiles(m.seconds for m in browser_moves), **ms)
            + f" ({sum(m.seconds is not None for m in browser_moves)} of {len(browser_moves)} moves)",
        ),
        (
            "Chromium: moves whose every chart drew the page's new run; pages behind",
            f"{sum(m.current is True for m in browser_moves)} of "
            f"{sum(m.current is not None for m in browser_moves)} moves; "
            f"{sum(any(m.current is False for m in v.moves) for v in pages)} of {len(pages)} pages "
            f"with a chart still on an older run {CURRENT_S:g} s after a move",
        ),
        (
            "kernel errors (iopub error messages; page errors)",
            str(len(errors)) + (f": {'; '.join(sorted(set(errors)))[:300]}" if errors else ""),
        ),
        ("dead / restarting kernels; websockets closed by the server", f"{len(dead)}; {len(closed)}"),
        (
            "memory at its peak, voila + kernels: PSS / RSS",
            f"{peak['pss'] / 1024:.2f} / {peak['rss'] / 1024:.2f} GiB ({peak['kernels']} kernels)",
        ),
        ("&nbsp; per kernel PSS / RSS, median; voila RSS", f"{kernel_memory}; {peak['voila_rss']:.0f} MB"),
        (
            "CPU seconds: kernels / voila / this client with Chromium",
            f"{cpu['kernel']:.0f} / {cpu['voila']:.0f} / {client_cpu:.0f} "
            f"(wall {wall:.0f} s x {cores} cores = {wall * cores:.0f} core-s)",
        ),
        (
            "machine memory in use (total less available): with the pool ready / at its peak",
            (f"{ready['machine_used']:.2f}" if ready else "n/a")
            + (f" / {max(sampler.machine_used):.2f} GiB" if sampler.machine_used else " / n/a")
            + f" of {psutil.virtual_memory().total / 2**30:.1f} GiB",
        ),
        (
            f"machine CPU busy, mean / max of {SAMPLE_S:g} s samples",
            f"{statistics.mean(busy):.0f} / {max(busy):.0f} %" if busy else "n/a",
        ),
        (
            "threads per kernel, median / max",
            f"{statistics.median(threads):.0f} / {max(threads)}" if threads else "n/a",
        ),
    ]
    env_text = " ".join(f"{k}={v}" for k, v in env.items()) or "make run's own"
    if args.make:
        env_text += f"; make run {' '.join(args.make)}"
    if sampler.kernel_env:
        seen = "; ".join(f"{k}: {' | '.join(sorted(v))}" for k, v in sampler.kernel_env.items())
        env_text += f" (in the kernels: {seen})"
    head = (
        f"Load: {len(visits)} sessions ({len(proto)} protocol clients, {len(pages)} Chromium pages) arriving "
        f"over {args.arrive:g} s, each moving lr / N / B / w0 for {args.duration:g} s "
        f"(think {args.think:g} s). "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cores} CPUs, "
        f"{psutil.virtual_memory().total / 2**30:.1f} GiB; server environment: {env_text}."
    )
    return (
        "\n".join([head, "", "| figure | measured |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)])
        + "\n\n"
        + per_minute(visits, start)
    )


def per_minute(visits: list[Visit], start: float) -> str:
    """What the class saw, minute by minute from the first arrival: sessions open at the minute's end,
    protocol moves answered / sent with their p50 / p95, Chromium moves redrawn / made with theirs.
    A move belongs to the minute it was made in."""
    moves = [m for v in visits for m in v.moves]
    if not moves:
        return "No moves were made.\n"
    last = int((max(m.at for m in moves) - start) // 60)
    lines = [
        "| minute | sessions open | protocol moves answered / sent | p50 / p95"
        " | Chromium moves redrawn / made | p50 / p95 |",
        "|---|---|---|---|---|---|",
    ]
    ms = {"unit": "ms", "scale": 1000, "digits": 0}
    for minute in range(last + 1):
        end = start + 60 * (minute + 1)
        inside = [m for m in moves if start + 60 * minute <= m.at < end]
        proto = [m for m in inside if not m.browser]
        pages = [m for m in inside if m.browser]
        open_ = sum(1 for v in visits if v.opened_at is not None and v.opened_at < end)

        def p50_p95(values):
            q = _quantiles(values)
            return _fmt(q[:2], **ms) if q else "n/a"

        lines.append(
            f"| {minute + 1} | {open_} | {sum(m.seconds is not None for m in proto)} / {len(proto)}"
            f" | {p50_p95(m.seconds for m in proto)}"
            f" | {sum(m.seconds is not None for m in pages)} / {len(pages)}"
            f" | {p50_p95(m.seconds for m in pages)} |"
        )
    return "\n".join(lines) + "\n"


def _client_cpu() -> float:
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "chromium" in child.name() or "chrome" in child.name() or "node" in child.name():
                total += sum(child.cpu_times()[:2])
    return total


def _pool_size(make_args: list[str]) -> int:
    """The preheated pool that `make run` will keep: POOL_SIZE=N among the make arguments, else 1."""
    sizes = [int(item.split("=", 1)[1]) for item in make_args if item.startswith("POOL_SIZE=") and item[10:]]
    return max([1, *sizes])


def server_args(sessions: int, make_args: list[str]) -> list[str]:
    """make run's arguments for a class of `sessions`: as docs/classroom.md serves one (a preheated
    kernel each, no refill during the class), a kernel cap with room for every session and the pool;
    what `make_args` sets itself is kept."""
    named = {item.split("=", 1)[0] for item in make_args}
    added = []
    if "POOL_SIZE" not in named:
        added.append(f"POOL_SIZE={sessions}")
        if "FILL_DELAY" not in named:
            added.append("FILL_DELAY=3600")
    if "MAX_KERNELS" not in named:
        added.append(f"MAX_KERNELS={sessions + _pool_size(make_args + added)}")
    return make_args + added


READY = re.compile(r"The dashboard is ready for (\d+) visitors?")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30, help="concurrent sessions (default 30)")
    parser.add_argument("--arrive", type=float, default=60.0, help="seconds over which they arrive (60)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds each moves sliders (60)")
    parser.add_argument("--browsers", type=int, default=2, help="how many sessions are Chromium pages (2)")
    parser.add_argument("--think", type=float, default=1.0, help="mean pause between moves, seconds (1)")
    parser.add_argument("--open-timeout", type=float, default=300.0, help="seconds a page may take to open")
    parser.add_argument("--deadline", type=float, help="hard limit in seconds for the sessions")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for make run (repeatable)")
    parser.add_argument(
        "--make",
        action="append",
        default=[],
        help="NAME=VALUE on make run's command line, e.g. MAX_KERNELS=31",
    )
    parser.add_argument("--url", help="a running dashboard instead of a new make run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / ".cache" / "load.md")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    args = parser.parse_args(argv)
    if args.deadline is None:
        args.deadline = args.arrive + args.duration + args.open_timeout + 60
    env = dict(item.split("=", 1) for item in args.env)
    if not args.url:
        args.make = server_args(args.sessions, args.make)

    launched = time.monotonic()
    server = None if args.url else Server(env=env, args=args.make, log=ROOT / ".cache" / "load-server.log")
    stopped = threading.Event()

    def watchdog():  # the event loop itself stuck: stop everything anyway
        if not stopped.wait(args.deadline + 180):
            log("watchdog: past the hard deadline; stopping the server")
            if server is not None:
                server.stop()
            os._exit(3)

    threading.Thread(target=watchdog, name="load-watchdog", daemon=True).start()
    sampler = Sampler(server)
    sampler.watch_env = tuple(env)
    ready = None
    try:
        if server is not None:
            log(f"starting make run on {server.url}")
            # A class starts when make run says the preheated pool is ready (serving/kernels.py);
            # Voila's own "filled" line is timed too (its log has no timestamps: polled from the start).
            deadline = time.monotonic() + 180 + 30 * _pool_size(args.make)
            filled = None
            while time.monotonic() < deadline and not READY.search(text := server.log_text()):
                if server.process.poll() is not None:
                    raise SystemExit(f"make run exited:\n{server.log_tail()}")
                if filled is None and "is filled with" in text:
                    filled = time.monotonic() - launched
                time.sleep(0.2)
            seconds = time.monotonic() - launched
            log(f"ready line after {seconds:.0f} s ({len(server.kernels())} kernels)")
            sampler.sample()
            rows = sampler.samples[-1]["rows"]
            ready = {
                "seconds": seconds,
                "filled_s": filled,
                "pss": sum(r["pss"] for r in rows),
                "rss": sum(r["rss"] for r in rows),
                "kernels": sum(r["kind"] == "kernel" for r in rows),
                "machine_used": sampler.machine_used[-1],
            }
        url = args.url or server.url
        sampler.sample()
        sampler.start()
        start = time.monotonic()
        visits, client_cpu, all_open = asyncio.run(run(args, url))
        wall = time.monotonic() - start
        sampler.stop_event.set()
        sampler.join(10)
        sampler.sample()
    finally:
        sampler.stop_event.set()
        if server is not None:
            log("stopping the server and its kernels")
            server.stop()
        stopped.set()
    text = table(args, visits, sampler, env, wall, client_cpu, start, all_open, ready)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "visits": [dataclasses.asdict(v) for v in visits],
                    "samples": sampler.samples,
                    "cpu_seconds": {str(pid): s for pid, s in sampler.cpu_seconds.items()},
                    "kinds": {str(pid): k for pid, k in sampler.kinds.items()},
                    "threads": {str(pid): n for pid, n in sampler.threads.items()},
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
