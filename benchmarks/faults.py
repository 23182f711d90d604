"""A classroom's faults, hundreds of them, against one `make run`: does every page come back true?

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.faults [--faults 200] [--pages 2] [--seed 55]
        [--restarts 2] [--saves 40] [--out .cache/faults.md]

Starts `make run` on a free port (harness.server.Server, a preheated kernel per page), opens `--pages`
dashboard pages, each in a Chromium of its own behind a proxy of its own (harness.faults.Proxy), and
injects faults into all of them at once, round after round, until `--faults` have been made:

- a network cut of 0.5 to 10 s (Chromium told it is offline, or only the server unreachable) just
  after a typed move, while a move is typed, during a drag, during the stability map's work (an N
  typed: the map is computed again on its thread), during Play;
- the tab asleep: frozen (no task, no timer) with its network gone, for 5 to 30 s, and once per page
  for 2 minutes;
- the page's kernel killed just after a typed move: the page must say so, and its Reload must draw
  the settings of its share link;
- `--restarts` times, the server stopped with every page open and started again (on another port,
  behind the same proxies) a few seconds later: each page must say the server cannot be reached, then
  that its kernel stopped; its Reload must draw the settings of its share link (a fault per page);
- then `--saves` faults on a student's exercise.ipynb in JupyterLab (harness.saves), 0.5 to 10 s
  each: a save during a cut, a save in flight when the network drops (lost, or arrived with its
  answer lost), an edit and save offline, the server stopped and started again. The student's
  next save must hold, the edit in the file.

After each fault the page must be true (harness.faults.truth: every chart its kernel's run for the
settings its share link names, every readout that link's value, nothing said about the connection)
within `--settle` seconds; while its connection is down for more than 1.5 s it must say so within 3 s.
Printed: a table per kind (faults, said while down, true, seconds from the network's return to the
page true: p50 / p95 / max) and every failure; kept in `--out`. For a save, "said" means the save
made during the fault did not claim to have saved, and "true" that no save was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.faults import (
    Proxy,
    drag,
    lost_move,
    network_down,
    play,
    says_down,
    share_link,
    truth,
    typed,
    words_seen,
)
from harness.faults import open_page as opened
from harness.lab import LabServer
from harness.saves import KINDS as SAVES
from harness.saves import TOKEN, open_exercise, save_fault
from harness.server import WATCH_S, Server
from harness.support.visits import charts_shown
from widgets.model import Model

ROOT = Path(__file__).resolve().parent.parent
CUTS = ("typed before", "typed during", "drag", "map", "play")
SAID_S = 3.0


@dataclass
class Outcome:
    kind: str
    down: float  # seconds the network (or the kernel, or the server) was gone
    said: float | None  # seconds until the page said so (None: never, or not asked)
    took: float | None  # seconds from the fault's end to the page true (None: never)
    wrong: list = field(default_factory=list)


@dataclass
class Visitor:
    number: int
    proxy: Proxy
    page: object = None
    model: Model = field(default_factory=Model)
    errors: list = field(default_factory=list)


async def open_page(browser, visitor: Visitor) -> None:
    visitor.page, visitor.errors = await opened(browser, visitor.proxy.url)


async def cut(visitor: Visitor, kind: str, rng: random.Random, settle: float) -> Outcome:
    page, seconds = visitor.page, round(rng.uniform(0.5, 10.0), 1)
    offline = rng.random() < 0.7
    move = None  # (name, value) typed: it must reach the kernel, or the page must say it did not
    if kind == "typed before":
        move = await typed(page, rng)
    elif kind == "map":
        move = await typed(page, rng, "N")
    elif kind == "play":
        await play(page)
    down = asyncio.ensure_future(network_down(page, visitor.proxy, seconds, offline))
    if kind == "drag":
        await drag(page, rng.choice(("lr", "w0", "N")), rng, seconds=min(seconds, 1.5))
    said = await says_down(page, min(seconds, SAID_S))
    if kind == "typed during":
        move = await typed(page, rng)
    await down
    words = asyncio.ensure_future(words_seen(page, 12))
    # Play runs on for its play time (10 s), each frame a run.
    wrong, took = await truth(page, visitor.model, settle + (15 if kind == "play" else 0))
    if await lost_move(page, move, words) == "unsaid":
        wrong = [f"{move[0]} = {move[1]} lost with nothing said", *wrong]
    if said is None and seconds > 1.5:
        wrong = ["never said the connection was down", *wrong]
    name = f"cut {'offline' if offline else 'server unreachable'}, {kind}"
    return Outcome(name, seconds, said, None if wrong else took, wrong)


async def asleep(visitor: Visitor, seconds: float, rng: random.Random, settle: float) -> Outcome:
    page = visitor.page
    await typed(page, rng)
    session = await page.context.new_cdp_session(page)
    await session.send("Page.setWebLifecycleState", {"state": "frozen"})
    await network_down(page, visitor.proxy, seconds)
    await session.send("Page.setWebLifecycleState", {"state": "active"})
    await session.detach()
    wrong, took = await truth(page, visitor.model, settle)
    return Outcome(
        "asleep, network gone" + (" (minutes)" if seconds >= 60 else ""),
        seconds,
        None,
        None if wrong else took,
        wrong,
    )


async def reloaded(visitor: Visitor, link: str, settle: float) -> tuple[list[str], float]:
    """Click the notice's Reload; the new page must draw the settings of `link` (its query)."""
    page = visitor.page
    start = time.monotonic()
    await page.get_by_role("button", name="Reload").click()
    await charts_shown(page)
    visitor.model = Model()
    wrong, _ = await truth(page, visitor.model, settle)
    now = await share_link(page)
    if now.split("?", 1)[-1] != link.split("?", 1)[-1]:
        wrong.append(f"the reload drew {now.split('?', 1)[-1]}, the link was {link.split('?', 1)[-1]}")
    return wrong, time.monotonic() - start


async def kernel_killed(visitor: Visitor, server: Server, rng: random.Random, settle: float) -> Outcome:
    page = visitor.page
    kernel_id = await page.evaluate("() => window.jupyterapp.widgetManager.kernel.id")
    await typed(page, rng)
    await asyncio.sleep(rng.uniform(0, 0.3))  # mid-move
    link = await share_link(page)
    killed = [p.pid for p in server.kernels() if f"kernel-{kernel_id}.json" in " ".join(p.cmdline())]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    start = time.monotonic()
    wrong = []
    try:
        await page.locator(".scanlab-kernel-stopped").wait_for(timeout=30_000)
        said = time.monotonic() - start
    except Exception:  # noqa: BLE001 - the page never said so
        return Outcome("kernel killed mid-move", 0, None, None, ["never said its kernel stopped"])
    link = await share_link(page)  # what the page shows when it says so
    wrong, took = await reloaded(visitor, link, settle)
    return Outcome("kernel killed mid-move", 0, said, None if wrong else took, wrong)


async def restart(visitors, servers: list, rng: random.Random, settle: float, log: Path) -> list[Outcome]:
    links = [await share_link(v.page) for v in visitors]
    await asyncio.to_thread(servers[-1].stop)
    stopped = time.monotonic()
    saids = await asyncio.gather(*(says_down(v.page, SAID_S + 5) for v in visitors))
    await asyncio.sleep(rng.uniform(1, 5))
    log = log.with_name(f"faults-server{len(servers)}.log")
    server = Server(args=[f"POOL_SIZE={len(visitors) + 1}"], log=log)
    servers.append(server)
    await asyncio.to_thread(server.wait_ready)
    for v in visitors:
        v.proxy.target = server.port
    down = time.monotonic() - stopped
    outcomes = []
    for v, link, said in zip(visitors, links, saids, strict=True):
        try:
            await v.page.locator(".scanlab-kernel-stopped").wait_for(timeout=30_000)
        except Exception:  # noqa: BLE001
            outcomes.append(Outcome("server restarted", down, said, None, ["never said its kernel stopped"]))
            continue
        wrong, took = await reloaded(v, link, settle)
        if said is None:
            wrong = ["never said the server could not be reached", *wrong]
        outcomes.append(Outcome("server restarted", down, said, None if wrong else took, wrong))
    return outcomes


async def saves(playwright, count: int, rng: random.Random, settle: float) -> list[Outcome]:
    """`count` save faults on an exercise.ipynb of its own (module docstring)."""
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "student-01"
        folder.mkdir()
        shutil.copyfile(ROOT / "exercise.ipynb", folder / "exercise.ipynb")
        lab = await asyncio.to_thread(LabServer(folder, TOKEN).start)
        proxy = await Proxy(lab.port).start()
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await open_exercise(browser, proxy, lab)
            for _ in range(count):
                kind, down = rng.choice(SAVES), round(rng.uniform(0.5, 10.0), 1)
                saved = await save_fault(page, proxy, lab, kind, down, settle)
                said = None if saved.said[0] == "the first save: saved" else 0.0
                outcome = Outcome(f"exercise save: {kind}", down, said, saved.took, saved.wrong)
                verdict = "ok" if not saved.wrong else saved.wrong
                print(f"     {outcome.kind}: down {down:.1f} s, then saved after {saved.took}: {verdict};"
                      f" {saved.said}", file=sys.stderr, flush=True)  # fmt: skip
                outcomes.append(outcome)
        finally:
            await proxy.close()
            await browser.close()
            await asyncio.to_thread(lab.stop)
    return outcomes


def quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return f"{statistics.median(values):.1f} / {p95:.1f} / {values[-1]:.1f}"


def table(outcomes: list[Outcome]) -> str:
    kinds = sorted({o.kind for o in outcomes})
    lines = [
        "| fault | n | down (s) | said it (of those down > 1.5 s) | true "
        "| s to true after: p50 / p95 / max |",
        "|---|---|---|---|---|---|",
    ]
    for kind in [*kinds, "all"]:
        chosen = [o for o in outcomes if kind in ("all", o.kind)]
        down = [o.down for o in chosen]
        # A frozen tab runs no script: it cannot say anything until it wakes, and then it is back.
        asked = [
            o
            for o in chosen
            if not o.kind.startswith("asleep") and (o.down > 1.5 or o.kind.startswith(("kernel", "server")))
        ]
        said = f"{sum(o.said is not None for o in asked)} of {len(asked)}" if asked else "-"
        true = sum(not o.wrong for o in chosen)
        span = f"{min(down):.1f}-{max(down):.1f}" if down else "-"
        lines.append(
            f"| {kind} | {len(chosen)} | {span} | {said} | {true} of {len(chosen)} | "
            f"{quantiles([o.took for o in chosen if o.took is not None])} |"
        )
    return "\n".join(lines)


async def run(args) -> tuple[list[Outcome], list[Server]]:
    """The faults' outcomes, and the servers they ran against (the first, then each started again)."""
    from playwright.async_api import async_playwright

    rng = random.Random(args.seed)
    log = Path(args.out).with_name("faults-server0.log")
    servers = [Server(args=[f"POOL_SIZE={args.pages + 1}"], log=log)]
    outcomes: list[Outcome] = []
    async with async_playwright() as playwright:
        browsers, visitors = [], []
        try:
            await asyncio.to_thread(servers[0].wait_ready)
            for number in range(args.pages):
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                browsers.append(browser)
                visitors.append(Visitor(number, await Proxy(servers[0].port).start()))
            await asyncio.gather(*(open_page(b, v) for b, v in zip(browsers, visitors, strict=True)))
            rounds = args.faults // args.pages + 1
            restarts = {round(rounds * (i + 1) / (args.restarts + 1)) for i in range(args.restarts)}
            long_sleep = rounds // 2
            for number in range(rounds):
                if len(outcomes) >= args.faults:
                    break
                if number in restarts:
                    done = await restart(visitors, servers, rng, args.settle, log)
                else:

                    def fault(v, number=number):
                        draw = rng.random()
                        if number == long_sleep:
                            return asleep(v, 120.0, rng, args.settle)
                        if draw < 0.08:
                            return kernel_killed(v, servers[-1], rng, args.settle)
                        if draw < 0.18:
                            return asleep(v, round(rng.uniform(5, 30), 1), rng, args.settle)
                        return cut(v, rng.choice(CUTS), rng, args.settle)

                    done = await asyncio.gather(*(fault(v) for v in visitors))
                for o in done:
                    mark = "ok" if not o.wrong else f"WRONG {o.wrong[:3]}"
                    print(
                        f"{len(outcomes) + 1:4d} {o.kind}: down {o.down:.1f} s, said {o.said}, "
                        f"true after {o.took}: {mark}",
                        file=sys.stderr,
                        flush=True,
                    )
                    outcomes.append(o)
            outcomes += await saves(playwright, args.saves, rng, args.settle)
        finally:
            for v in visitors:
                await v.proxy.close()
            for b in browsers:
                await b.close()
            for server in servers:
                await asyncio.to_thread(server.stop)
    return outcomes, servers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=200)
    parser.add_argument("--pages", type=int, default=2)
    parser.add_argument("--seed", type=int, default=55)
    parser.add_argument("--restarts", type=int, default=2)
    parser.add_argument("--saves", type=int, default=40, help="exercise saves under faults, after the rest")
    parser.add_argument("--settle", type=float, default=30.0)
    parser.add_argument("--out", default=".cache/faults.md")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    outcomes, servers = asyncio.run(run(args))
    wrong = [o for o in outcomes if o.wrong]
    peaks = ", ".join(f"{server.peak_rss >> 20}" for server in servers)
    text = "\n".join(
        [
            f"{len(outcomes)} faults on {args.pages} pages in {(time.monotonic() - start) / 60:.1f} min "
            f"(seed {args.seed}); {len(wrong)} pages left untrue. Voila's most resident memory, looked at "
            f"every {WATCH_S:g} s: {peaks} MB (a server each).",
            "",
            table(outcomes),
            *([""] + [f"- {o.kind} (down {o.down:.1f} s): {o.wrong[:4]}" for o in wrong] if wrong else []),
        ]
    )
    print(text)
    Path(args.out).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
