"""The served dashboard in headless Chromium: a slider move until every chart has redrawn, against a
bare ipywidgets echo on the same server, and the time from navigation to the first and to every chart.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.browser [--json PATH] [--profile]

One Voila server serves the repository directory, so the explorer (/voila/render/app.ipynb) and the echo
page (/voila/render/benchmarks/echo.ipynb, a slider and a label that a kernel-side observer sets) share
it. The server is `make run` itself, with its voila command pointed at the directory instead of
app.ipynb (a wrapper put first as make's BIN): make's exported environment, its voila options and
voila.json (read from the working directory) stay in force whatever they become. `--voila-args` adds
options after make's. Chromium is Debian's, launched with benchmarks.protocol's CHROMIUM_ARGS.

Moves are keyboard presses on a slider's `.noUi-handle` (ArrowRight and ArrowLeft in turn), one page's
move then the other's, a gap between moves, plus up to one frame (1/60 s) at random: a move's wait
ends on an animation frame, so with a fixed gap every key came at the same point of the page's frame
cycle, and what waits for a frame (the charts' drawing events) moved with that point from run to
run (the echo's frame 10.2 ms after its key in one run, 17.3 to 19.4 ms in seven others, medians).
Times are taken in the page from the keydown event. A page has settled when the animation frame
that paints its last change has rendered, taken the same way on both (the target's measure,
`ratios`): a MutationObserver sees the change (the echo's label text; any element of any
`.js-plotly-plot`) and requests the frame, whose callback posts a message that runs as the task
after the frame's style, layout and paint. A move waits until every chart has finished drawing
since the key, at its last `plotly_afterplot`, `plotly_animated` or `plotly_relayout` event within
the gap; the report also gives each page's last change itself and those drawing events (`ratios`).
The page's websocket is wrapped, so each move also splits into: value sent, kernel busy and idle
(the kernel's own timestamps), figure messages received, and charts redrawn.

Navigation: each visit is a new browser context; the first chart and all charts count as drawn on the
first animation frame where they have a `.scatterlayer .trace` (or a heatmap), in ms from the navigation
start. Before each visit the script waits until the server and its kernels are idle (a preheated pool
refilled). `--profile` adds Chromium's CPU profile of 15 more moves and of one more visit.

Prints a table (stdout; progress on stderr) and asserts nothing about the figures; it exits non-zero
with a message when a wait times out, the server does not come up, or a chart on the explorer never
redraws after a move (retried on fresh pages first: see --page-tries).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import numpy as np

from benchmarks.protocol import BATCH, CHART_DRAWN, CHROMIUM, CHROMIUM_ARGS, free_port, is_kernel

ROOT = Path(__file__).resolve().parent.parent
APP = "/voila/render/app.ipynb"
ECHO = "/voila/render/benchmarks/echo.ipynb"
SHARED_QUERY = "lr=0.05&N=50&B=8&loss=both&w0=1.5"
VIEWPORT = {"width": 1280, "height": 900}
KEYS = ("ArrowRight", "ArrowLeft")
FRAME_S = 1 / 60  # Chromium's frames, headless too (measured: 16.7 ms apart, median)
# The explorer's sliders, by label (--control).
SLIDERS = ("lr", "N", "B", "w0", "true w", "noise", "momentum")
# The page a control is moved on, where the default's would not show its moves: momentum moves the
# overlaid run of the momentum optimizer only.
QUERIES = {"momentum": "optimizer=momentum"}
# The other controls: two buttons pressed in turn (Enter on each), by their text. The loss view
# starts at "sum", so its first press is "mean"; the stability map at "lr × B".
BUTTONS = {
    "loss": ("mean", "sum"),
    "preset": ("Oscillating", "Smooth convergence"),
    "map": ("lr × momentum", "lr × B"),
}
TOGGLES = ("loss", "map")  # BUTTONS that are one control's choices, found beside its label
CONTROLS = SLIDERS + tuple(BUTTONS)
MAIN_THREAD = {"TaskDuration": "task", "LayoutDuration": "layout", "RecalcStyleDuration": "style"}
BIG_MESSAGE = 4096  # bytes; larger message bodies are skimmed, not parsed, in the page


CLOSE_ERRORS: list[str] = []  # errors while pages close, e.g. a refused POST /voila/api/shutdown


class BenchError(RuntimeError):
    """A wait that timed out or a server that failed: the run stops with this message."""


# In the page, before any of its scripts: the websocket wrapped, keydowns, long tasks, chart events.
PAGE_SCRIPT = r"""
(() => {
  if (window.__bench) return;
  const B = (window.__bench = {
    ws: [], keys: [], ap: [], dom: [], frames: [], charts: [], longtasks: [],
    nav: { first: null, all: null, drawn: 0 }, framePending: false,
    expected: __EXPECTED__, move: null, hookMs: 0,
  });
  const BATCH = __BATCH__;  // widgets.batch.BATCH
  const BIG = __BIG__;  // message bodies parsed whole up to this size; larger ones only skimmed
  const text = new TextDecoder();
  const u64 = (view, at) => view.getUint32(at, true) + view.getUint32(at + 4, true) * 2 ** 32;
  const find = (re, s) => { const m = re.exec(s); return m ? m[1] : undefined; };
  function skim(head) {  // the fields we need from the start of a large JSON body
    const keys = [...head.matchAll(/"(revision|value)"\s*:/g)].map((m) => m[1]);
    return {
      msg_type: find(/"msg_type"\s*:\s*"([^"]+)"/, head),
      comm_id: find(/"comm_id"\s*:\s*"([^"]+)"/, head),
      data: { method: find(/"method"\s*:\s*"([^"]+)"/, head), keys,
              figure: /"revision"\s*:/.test(head),
              batch: head.includes(`"${BATCH}"`) },
    };
  }

  // A widget state that carries a chart's new figure (widgets.surface.Surface's revision).
  const drawing = (state) => "revision" in state;

  function decode(u8) {  // a Uint8Array: v1.kernel.websocket.jupyter.org, else the older binary framing
    const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
    const n = u64(view, 0);
    const part = (from, to) => text.decode(u8.subarray(from, to));
    if (n >= 5 && n < 1024 && u64(view, 8) === 8 * (n + 1)) {
      const at = [];
      for (let i = 0; i < n; i++) at.push(u64(view, 8 + 8 * i));
      at.push(u8.byteLength);
      const big = at[5] - at[4] > BIG;
      return { channel: part(at[0], at[1]), header: JSON.parse(part(at[1], at[2])),
               parent: JSON.parse(part(at[2], at[3])),
               content: big ? skim(part(at[4], at[4] + 4096)) : JSON.parse(part(at[4], at[5])) };
    }
    const start = view.getUint32(4, true);
    const end = view.getUint32(0, true) > 1 ? view.getUint32(8, true) : u8.byteLength;
    return whole(part(start, end));
  }
  function whole(body) {  // a JSON message as one string
    if (body.length > BIG) {
      const head = skim(body.slice(0, 4096));
      return { header: { msg_type: head.msg_type }, content: head };
    }
    const m = JSON.parse(body);
    return { channel: m.channel, header: m.header, parent: m.parent_header, content: m.content };
  }

  function record(dir, data) {
    const t = performance.now();
    try {
      let m, size;
      if (typeof data === "string") { m = whole(data); size = data.length; }
      else {
        const u8 = data instanceof ArrayBuffer ? new Uint8Array(data)
          : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        m = decode(u8);
        size = u8.byteLength;
      }
      const e = { t, dir, size, channel: m.channel };
      if (m.header) { e.type = m.header.msg_type; e.id = m.header.msg_id; e.date = m.header.date; }
      if (m.parent) e.parent = m.parent.msg_id;
      const c = m.content;
      if (c) {
        e.state = c.execution_state;
        e.comm = c.comm_id;
        const d = c.data || {};
        e.method = d.method;
        if (d.state) {
          e.keys = Object.keys(d.state);
          e.figure = drawing(d.state);
        } else if (d.method === "custom" && d.content && d.content.kind === BATCH) {
          // widgets/batch.py: the updates of one callback in one message
          const states = d.content.messages.map((part) => (part[1] && part[1].state) || {});
          e.keys = [...new Set(states.flatMap((state) => Object.keys(state)))];
          e.figure = states.some(drawing);
          e.batch = true;
        } else if (d.keys) {
          e.keys = d.keys;
          e.figure = d.figure;
          e.batch = d.batch;
        }
      }
      B.ws.push(e);
    } catch (error) {
      B.ws.push({ t, dir, error: String(error) });
    }
    B.hookMs += performance.now() - t;
  }

  const Native = window.WebSocket;
  class Watched extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => record("in", event.data));
    }
    send(data) {
      record("out", data);
      return super.send(data);
    }
  }
  window.WebSocket = Watched;

  window.addEventListener("keydown", (event) => B.keys.push(event.timeStamp), true);
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) B.longtasks.push([e.startTime, e.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch (error) {}

  // The animation frame after a change, which paints it, as [the time of its callbacks, the end of
  // its rendering]: a message posted from the frame's callback runs as the next task, after the
  // frame's style, layout and paint. The same for both pages (the echo's label, every chart).
  const frameAfter = () => {
    if (B.framePending) return;
    B.framePending = true;
    requestAnimationFrame(() => {
      const at = performance.now();
      B.framePending = false;  // a change after this callback is painted by the next frame
      const channel = new MessageChannel();
      channel.port1.onmessage = () => B.frames.push([at, performance.now()]);
      channel.port2.postMessage(null);
    });
  };

  // A chart has finished an operation: a full redraw (afterplot), a data-only animation without
  // redraw (animated), a layout change drawn alone (relayout: a title).
  const DRAWN = __DRAWN__;
  const drawn = (gd) => gd.querySelector(".scatterlayer .trace, .heatmaplayer .hm") !== null;
  B.hook = () => {  // every chart on the page, in page order, with its afterplot events counted
    for (const gd of document.querySelectorAll(".js-plotly-plot")) {
      if (gd.__bench === undefined && typeof gd.on === "function") {
        const i = B.charts.length;
        gd.__bench = i;
        B.charts.push(gd);
        for (const event of DRAWN) gd.on(event, () => B.ap.push([performance.now(), i]));
        // When the chart's elements last changed (a mutation), and the frame that painted it.
        new MutationObserver(() => {
          B.dom.push([performance.now(), i]);
          frameAfter();
        }).observe(gd, { subtree: true, childList: true, attributes: true, characterData: true });
      }
    }
    return B.charts.length;
  };
  B.title = (gd) => {
    const title = gd.layout && gd.layout.title;
    return String((title && (title.text || title)) || "?").split("<")[0];
  };
  const tick = () => {
    let n = 0;
    for (const gd of document.querySelectorAll(".js-plotly-plot")) if (drawn(gd)) n++;
    const now = performance.now();
    B.nav.drawn = n;
    if (n > 0 && B.nav.first === null) B.nav.first = now;
    if (B.expected && n >= B.expected && B.nav.all === null) B.nav.all = now;
    if (B.nav.all === null) requestAnimationFrame(tick);
  };
  if (B.expected !== 0) requestAnimationFrame(tick);  // 0: a page without charts

  const start = (extra) => (B.move = {
    keyIdx: B.keys.length, wsIdx: B.ws.length, apIdx: B.ap.length, domIdx: B.dom.length,
    frameIdx: B.frames.length, ltIdx: B.longtasks.length,
    hookMs: B.hookMs, changed: null, ...extra,
  });
  B.armEcho = (selector) => {
    const label = document.querySelector(selector);
    const move = start({ text0: label.textContent });
    if (B.observer) B.observer.disconnect();
    B.observer = new MutationObserver(() => {
      if (move.changed === null && label.textContent !== move.text0) {
        move.changed = performance.now();
        frameAfter();
      }
    });
    B.observer.observe(label, { childList: true, characterData: true, subtree: true });
    return move.text0;
  };
  B.armCharts = () => start({ n: B.hook() }).n;
  B.failed = () => {  // the text of an output where the notebook failed (Voila renders it in the page)
    for (const e of document.querySelectorAll(".jp-OutputArea-output")) {
      const text = e.textContent;
      if (/error when executing cell|Traceback \(most recent/.test(text)) return text.slice(0, 400);
    }
    return null;
  };
  B.redrawn = () => {
    const m = B.move, key = B.keys[m.keyIdx], seen = new Set();
    if (key === undefined) return seen;
    for (let j = m.apIdx; j < B.ap.length; j++) if (B.ap[j][0] >= key) seen.add(B.ap[j][1]);
    return seen;
  };
  // The charts have settled when one has drawn since the key and none has a change it has not
  // drawn (widgets/surface.js marks those data-pending): a control need not change every chart
  // (w0 leaves the per-step factors as they are).
  const pending = () => B.charts.filter((gd) => gd.dataset.pending !== undefined);
  B.done = () =>
    B.move.n === undefined ? B.move.changed !== null : B.redrawn().size >= 1 && pending().length === 0;
  B.missing = () => {
    const seen = B.redrawn();
    const late = pending();
    return B.charts.filter((gd, i) => late.includes(gd) || (!seen.size && !seen.has(i))).map(B.title);
  };
  B.collect = () => {
    const m = B.move;
    return { key: B.keys[m.keyIdx], keys: B.keys.slice(m.keyIdx), ws: B.ws.slice(m.wsIdx),
             ap: B.ap.slice(m.apIdx), dom: B.dom.slice(m.domIdx), frames: B.frames.slice(m.frameIdx),
             longtasks: B.longtasks.slice(m.ltIdx),
             changed: m.changed, n: m.n,
             origin: performance.timeOrigin, hookMs: B.hookMs - m.hookMs,
             titles: B.charts.map((gd) => B.title(gd).split(/[:=]/)[0].trim()) };
  };
})();
"""


# The server --------------------------------------------------------------------------------------

WRAPPER = """#!/bin/bash
# Written by benchmarks/browser.py as make's $(BIN)/python: make run's `python -m voila` command,
# serving the repository directory; every other use of python passes through.
if [ "$1" != -m ] || [ "$2" != voila ]; then exec PYTHON "$@"; fi
shift 2
args=()
served=
for arg in "$@"; do
  if [ "$arg" = app.ipynb ] && [ -z "$served" ]; then args+=(.); served=1; else args+=("$arg"); fi
done
if [ -z "$served" ]; then
  echo "benchmarks/browser.py: make run's voila command has no app.ipynb argument: $*" >&2
  exit 2
fi
args+=(EXTRA)
printf '%s\\n' "${args[@]}" > "$(dirname "$0")/argv"
env | grep -E '^(JAX|XLA|VOILA|JUPYTER)' | sort > "$(dirname "$0")/env"
exec PYTHON -m voila "${args[@]}"
"""


def write_wrapper(bin_dir: Path, python: Path, extra_args: list[str]) -> Path:
    """bin_dir/python: `python` itself, except that make run's `python -m voila app.ipynb ...`
    serves the repository directory with `extra_args` added, and leaves its arguments and the
    JAX/XLA/VOILA/JUPYTER environment in bin_dir/argv and bin_dir/env."""
    script = WRAPPER.replace("PYTHON", shlex.quote(str(python))).replace(
        "EXTRA", " ".join(shlex.quote(a) for a in extra_args)
    )
    path = bin_dir / "python"
    path.write_text(script)
    path.chmod(0o755)
    return path


class Server:
    """`make run` serving the repository directory on a free loopback port; always stopped."""

    def __init__(self, extra_args: list[str], timeout: float):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.dir = Path(tempfile.mkdtemp(prefix="scanlab-bench-"))
        self.log_path = self.dir / "server.log"
        self.known: dict[int, float] = {}  # pid -> create time of every process seen in the tree
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        python = Path(sys.executable)  # the environment's (make's VENV: .venv unless set)
        if not python.exists():
            raise BenchError(f"{python} is missing: run `make run` once to set up .venv")
        write_wrapper(bin_dir, python, extra_args)
        self.log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"PORT={self.port}", "HOST=127.0.0.1", f"BIN={bin_dir}"],
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # make and voila share the group: one signal stops both
        )
        try:
            self._wait_until_serving(timeout)
            self.argv = (bin_dir / "argv").read_text().split("\n")[:-1]
            self.env = (bin_dir / "env").read_text().split("\n")[:-1]
        except BaseException:
            self.stop()
            raise

    def _wait_until_serving(self, timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.base + "/", timeout=5) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if self.process.poll() is not None:
                raise BenchError(f"the server exited ({self.process.returncode}):\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"the server did not answer within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.3)

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def log_tail(self, n: int = 3000) -> str:
        return re.sub(r"\x1b\[[0-9;]*m", "", self.log_text())[-n:]

    def count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.log_text()))

    def _tree(self):
        import psutil

        try:
            processes = [psutil.Process(self.process.pid)]
            processes += processes[0].children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        for p in processes:
            try:
                self.known.setdefault(p.pid, p.create_time())
            except psutil.NoSuchProcess:
                pass
        return processes

    def cpu_seconds(self) -> float:
        import psutil

        total = 0.0
        for p in self._tree():
            try:
                times = p.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                pass
        return total

    def wait_idle(self, timeout: float, *, at_least: float = 1.5, window: float = 1.0, cores: float = 0.1):
        """Until the server and its kernels have used under `cores` of a CPU for `window` seconds
        (a preheated pool refilled)."""
        time.sleep(at_least)
        deadline = time.monotonic() + timeout
        last, since = self.cpu_seconds(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.25)
            now, used = time.monotonic(), self.cpu_seconds()
            if used - last > cores * (now - since) + 0.02:
                last, since = used, now
            elif now - since >= window:
                return
        raise BenchError(f"the server never went idle within {timeout:.0f} s")

    def kernels(self) -> int:
        """Kernel processes the server is running now."""
        count = 0
        for p in self._tree():
            try:
                count += is_kernel(p.cmdline())
            except Exception:  # gone meanwhile
                pass
        return count

    def stop(self):
        import psutil

        self._tree()
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        # Kernels run in their own sessions; voila shuts them down on SIGTERM. Any it left behind:
        for pid, created in self.known.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created:
                    p.wait(timeout=5)
            except psutil.TimeoutExpired:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# Pages -------------------------------------------------------------------------------------------


class Page:
    """A page in a new browser context, instrumented, with its console errors collected."""

    def __init__(
        self, browser, url: str, name: str, errors: list, expected: int | None = None, profile: bool = False
    ):
        self.name = name
        self.errors = errors
        self.closing = False
        self.context = browser.new_context(viewport=VIEWPORT)
        self.context.add_init_script(
            PAGE_SCRIPT.replace("__EXPECTED__", json.dumps(expected))
            .replace("__BIG__", str(BIG_MESSAGE))
            .replace("__BATCH__", json.dumps(BATCH))
            .replace("__DRAWN__", json.dumps(CHART_DRAWN))
        )
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self._error(f"page error: {error}"))
        self.page.on("response", self._response)
        self.cdp = self.context.new_cdp_session(self.page)
        self.cdp.send("Performance.enable")
        if profile:  # from before the navigation: see profile_summary
            self.cdp.send("Profiler.enable")
            self.cdp.send("Profiler.setSamplingInterval", {"interval": 500})
            self.cdp.send("Profiler.start")
        self.started = time.perf_counter()
        try:
            self.page.goto(url, wait_until="commit", timeout=60_000)
        except Exception as error:
            self.close()
            raise BenchError(f"{name}: {url} did not load: {error}") from None

    def metrics(self) -> dict:
        """Chromium's cumulative main-thread times, in ms."""
        values = {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}
        return {name: values.get(name, 0.0) * 1000 for name in MAIN_THREAD}

    def _console(self, message):
        # Every error counts: the page asks nothing of other hosts (no CDN fonts, tests/test_dashboard.py).
        if message.type == "error":
            self._error(f"console error: {message.text}")

    def _error(self, text: str):
        # While the page closes (Voila's own kernel shutdown on unload), apart: see CLOSE_ERRORS.
        (CLOSE_ERRORS if self.closing else self.errors).append(f"{self.name}: {text}")

    def _response(self, response):
        if response.status >= 400:
            request = response.request
            self._error(f"HTTP {response.status} for {request.method} {response.url}")

    def wait(self, expression: str, timeout: float, what: str, arg=None, polling="raf"):
        try:
            self.page.wait_for_function(expression, arg=arg, timeout=timeout * 1000, polling=polling)
        except Exception as error:  # playwright's TimeoutError, or the page gone
            recent = "\n  ".join(e.splitlines()[0] for e in self.errors[-5:])
            raise BenchError(
                f"{self.name}: {what} not within {timeout:.0f} s ({type(error).__name__})"
                + (f"\n  page errors:\n  {recent}" if recent else "")
            ) from None

    def check_notebook(self):
        failed = self.evaluate("() => window.__bench.failed()")
        if failed:
            raise BenchError(f"{self.name}: the notebook failed on the server; the page shows: {failed}")

    def evaluate(self, expression: str, arg=None):
        return self.page.evaluate(expression, arg)

    def close(self):
        self.closing = True
        try:
            # Runs Voila's unload beacon (POST /voila/api/shutdown/<kernel>), as a closing tab would.
            self.page.close(run_before_unload=True)
        finally:
            self.context.close()


def _wait_for_charts(page: Page, timeout: float, expected: int | None = None) -> int:
    """The number of charts, once every one on the page is drawn and no new one came for 3 s."""
    page.wait(
        "() => window.__bench && (window.__bench.nav.first !== null || window.__bench.failed() !== null)",
        timeout,
        "the first chart",
    )
    page.check_notebook()
    deadline, last, since = time.monotonic() + timeout, -1, time.monotonic()
    while True:
        count, drawn = page.evaluate(
            "() => [document.querySelectorAll('.js-plotly-plot').length, window.__bench.nav.drawn]"
        )
        if (count, drawn) != last:
            last, since = (count, drawn), time.monotonic()
        elif count == drawn and (count == expected or time.monotonic() - since >= 3):
            return count
        if time.monotonic() > deadline:
            raise BenchError(f"{page.name}: charts still coming after {timeout:.0f} s ({drawn} of {count})")
        time.sleep(0.2)


class Mover:
    """Keyboard moves on one page's slider (the arrow keys, right then left), or on two buttons
    (`handle` a pair: Enter on each in turn), timed in the page."""

    def __init__(self, page: Page, handle, kind: str, label: str = ""):
        self.page, self.handle, self.kind, self.label = page, handle, kind, label
        self.presses = 0
        self.records: list[dict] = []
        self.jitter = random.Random(kind)  # the same draws in every run

    def move(self, gap_s: float, timeout: float, keep: bool = True) -> dict:
        before = self.page.metrics()
        if self.kind == "echo":
            self.page.evaluate("(selector) => window.__bench.armEcho(selector)", self.label)
        else:
            self.page.evaluate("() => window.__bench.armCharts()")
        pair = isinstance(self.handle, tuple)
        target = self.handle[self.presses % 2] if pair else self.handle
        key = "Enter" if pair else KEYS[self.presses % 2]
        self.presses += 1
        try:
            target.press(key, timeout=timeout * 1000)
        except Exception as error:
            raise BenchError(f"{self.page.name}: could not press {key} on the control: {error}") from None
        try:
            self.page.wait("() => window.__bench.done()", timeout, f"{self.kind} move {self.presses} ({key})")
        except BenchError as error:
            missing = self.page.evaluate("() => window.__bench.missing()") if self.kind == "charts" else []
            if missing:  # still not redrawn now: dead, not slow
                raise DeadCharts(f"{error}\n  charts that never redrew: {missing}", missing) from None
            raise
        time.sleep(gap_s + self.jitter.uniform(0, FRAME_S))
        record = self.page.evaluate("() => window.__bench.collect()")
        after = self.page.metrics()
        record["main_thread"] = {MAIN_THREAD[k]: after[k] - before[k] for k in MAIN_THREAD}
        if keep:
            self.records.append(record)
        return record


class DeadCharts(BenchError):
    def __init__(self, message: str, missing: list[str]):
        super().__init__(message)
        self.missing = missing


# Analysis ----------------------------------------------------------------------------------------


def _epoch_ms(date: str) -> float:
    return datetime.fromisoformat(date).timestamp() * 1000


def _frame_after(record: dict, t: float) -> tuple[float, float] | None:
    """The first animation frame whose callbacks ran at or after `t` (page clock): (their time, the
    end of its rendering), or None when the move's wait ended first."""
    frames = [tuple(frame) for frame in record.get("frames", ()) if frame[0] >= t]
    return min(frames) if frames else None


def analyse_move(record: dict) -> dict:
    """One move's times in ms after the keydown, the kernel's own ones mapped onto the page clock.
    "framed": the end of the rendering of the frame after the page's last change (the echo's label
    changes once), which paints it; "frame_at": when that frame's callbacks ran (where Plotly's and
    the front end's drawing events come); "frame_ms": the one to the other."""
    key, origin, ws = record["key"], record["origin"], record["ws"]
    values = (m for m in ws if m.get("dir") == "out" and "value" in (m.get("keys") or []))
    sent = next(values, None)  # the slider's comm_msg
    out: dict = {f"main_{k}_ms": v for k, v in record.get("main_thread", {}).items()}
    out["instrumentation_ms"] = record["hookMs"]
    if record.get("n") is None:
        out["done"] = record["changed"] - key
        last = record["changed"]
    else:
        # Each chart is done at its last drawing event of the move (within the gap after it): a
        # chart may get an animation and a title relayout, and the move is done when all are.
        firsts: dict[int, float] = {}
        lasts: dict[int, float] = {}
        for t, chart in record["ap"]:
            if t >= key:
                firsts.setdefault(chart, t)
                lasts[chart] = t
        out["first_afterplot"] = min(firsts.values()) - key
        for chart, t in lasts.items():
            out[f"chart {chart + 1}: {record['titles'][chart]}"] = t - key
        out["done"] = max(lasts.values()) - key
        out["afterplots"] = len(record["ap"])
        # The same move timed as the echo's is: the last change of the charts' elements (a
        # mutation), and the frame that paints it.
        changed = [t for t, _ in record.get("dom", ()) if t >= key]
        last = max(changed, default=None)
        if last is not None:
            out["dom_done"] = last - key
        # The line charts alone, the stability map left out (its targets differ): painted when the
        # frame after their last change has rendered.
        maps = {i for i, title in enumerate(record["titles"]) if title.startswith("Stability map")}
        lines = [t for t, chart in record.get("dom", ()) if t >= key and chart not in maps]
        painted = _frame_after(record, max(lines)) if lines else None
        if painted is not None:
            out["lines_framed"] = painted[1] - key
    frame = _frame_after(record, last) if last is not None else None
    if frame is not None:
        out["frame_at"] = frame[0] - key
        out["framed"] = frame[1] - key
        out["frame_ms"] = frame[1] - frame[0]
    if sent is None:
        return out
    out["sent"] = sent["t"] - key
    replies = [m for m in ws if m.get("dir") == "in" and m.get("parent") == sent["id"]]
    busy = next((m for m in replies if m.get("state") == "busy"), None)
    idle = next((m for m in replies if m.get("state") == "idle"), None)
    if replies:
        out["first_reply_in"] = replies[0]["t"] - key
    if busy and idle:
        out["kernel_busy"] = _epoch_ms(busy["date"]) - origin - key
        out["kernel_idle"] = _epoch_ms(idle["date"]) - origin - key
        out["kernel_ms"] = out["kernel_idle"] - out["kernel_busy"]
        out["idle_in"] = idle["t"] - key
    figures = [m for m in replies if m.get("figure")]
    if figures:
        out["last_figure_msg_in"] = figures[-1]["t"] - key
    comm = [m for m in replies if m.get("type") == "comm_msg"]
    out["reply_msgs"] = len(comm)
    out["reply_batches"] = sum(1 for m in comm if m.get("batch"))
    out["reply_kb"] = sum(m.get("size", 0) for m in comm) / 1024
    back = [m for m in ws if m.get("dir") == "out" and m is not sent and m.get("type") == "comm_msg"]
    out["js_to_kernel_msgs"] = len(back)
    out["js_to_kernel_kb"] = sum(m.get("size", 0) for m in back) / 1024
    return out


def summary(values: list[float]) -> dict:
    a = np.asarray(values, dtype=np.float64)
    return {
        "n": int(a.size),
        "min": float(a.min()),
        "median": float(np.median(a)),
        "p95": float(np.percentile(a, 95)),
        "max": float(a.max()),
    }


def summarise_moves(records: list[dict]) -> dict:
    moves = [analyse_move(r) for r in records]
    fields = sorted({k for m in moves for k in m})
    return {k: summary([m[k] for m in moves if k in m]) for k in fields}


def analyse_visit(nav: dict) -> dict:
    """A visit's times in ms from the navigation start."""
    ws_in = [m for m in nav["ws"] if m.get("dir") == "in" and m["t"] <= nav["all"]]
    big = max(ws_in, key=lambda m: m.get("size", 0), default=None)
    return {
        "html_ms": nav["response_end"],
        "dom_content_loaded_ms": nav["dcl"],
        "first_ws_message_ms": ws_in[0]["t"] if ws_in else None,
        "largest_message_ms": big["t"] if big else None,
        "largest_message_mb": big["size"] / 2**20 if big else None,
        "largest_message_type": big.get("type") if big else None,
        "ws_in_mb": sum(m.get("size", 0) for m in ws_in) / 2**20,
        "html_mb": nav["html_bytes"] / 2**20,
        "resources": nav["resources"],
        "resources_mb": nav["resource_bytes"] / 2**20,
        "last_resource_ms": nav["last_resource_end"],
        "largest_resource": nav["largest_resource"],
        "first_chart_ms": nav["first"],
        "all_charts_ms": nav["all"],
        "longtask_ms": sum(d for s, d in nav["longtasks"] if s < nav["all"]),
    }


# The runs ----------------------------------------------------------------------------------------


def open_echo(browser, server: Server, errors: list, timeout: float) -> Mover:
    page = Page(browser, server.base + ECHO, "echo", errors, expected=0)
    page.wait("() => document.querySelector('.echo') !== null", timeout, "the echo label")
    handle = page.page.locator(".widget-slider .noUi-handle")
    if handle.count() != 1:
        raise BenchError(f"echo: expected one slider, found {handle.count()}")
    return Mover(page, handle, "echo", ".echo")


def open_explorer(
    browser, server: Server, errors: list, expected: int, timeout: float, control: str = "lr"
) -> Mover:
    query = f"?{QUERIES[control]}" if control in QUERIES else ""
    page = Page(browser, server.base + APP + query, "explorer", errors, expected)
    _wait_for_charts(page, timeout, expected)
    if control in BUTTONS:
        scope = page.page.locator(".widget-toggle-buttons").filter(
            has=page.page.locator("label", has_text=re.compile(f"^{re.escape(control)}$"))
        )
        scope = scope if control in TOGGLES else page.page
        buttons = tuple(scope.get_by_role("button", name=name, exact=True) for name in BUTTONS[control])
        if any(button.count() != 1 for button in buttons):
            raise BenchError(f"explorer: expected one button each of {BUTTONS[control]}")
        return Mover(page, buttons, "charts")
    slider = page.page.locator(".widget-slider").filter(
        has=page.page.locator("label", has_text=re.compile(f"^{re.escape(control)}$"))
    )
    if slider.count() != 1:
        raise BenchError(f"explorer: expected one slider labelled {control!r}, found {slider.count()}")
    return Mover(page, slider.locator(".noUi-handle"), "charts")


def run_moves(browser, server: Server, args, expected: int, errors: list, log) -> dict:
    echo = open_echo(browser, server, errors, args.load_timeout)
    explorer = None
    dead: list[list[str]] = []
    try:
        for attempt in range(args.page_tries):
            explorer = open_explorer(browser, server, errors, expected, args.load_timeout, args.control)
            try:
                for _ in range(args.warmup):
                    explorer.move(args.gap, args.timeout, keep=False)
                break
            except DeadCharts as error:
                dead.append(error.missing)
                log(f"!! explorer page {attempt + 1}: {error}")
                explorer.page.close()
                explorer = None
        if explorer is None:
            raise BenchError(
                f"explorer: on {args.page_tries} fresh pages some charts never redrew after a move: {dead}"
            )
        for _ in range(args.warmup):
            echo.move(args.gap, args.timeout, keep=False)
        log(f"moves: {args.moves} per page, interleaved, {args.gap * 1000:.0f} ms apart")
        for _ in range(args.moves):
            echo.move(args.gap, args.timeout)
            explorer.move(args.gap, args.timeout)
        profile = profile_moves(explorer, args) if args.profile else None
        return {
            "echo": summarise_moves(echo.records),
            "explorer": summarise_moves(explorer.records),
            "charts": expected,
            "dead_chart_pages": dead,
            "profile": profile,
            "raw": {"echo": echo.records, "explorer": explorer.records} if args.raw else None,
        }
    finally:
        echo.page.close()
        if explorer is not None:
            explorer.page.close()


def profile_moves(explorer: Mover, args, moves: int = 15) -> dict:
    """Where the page's main thread spends an explorer move: Chromium's sampling profiler over `moves`
    more moves (not among the timed ones)."""
    cdp = explorer.page.context.new_cdp_session(explorer.page.page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 250})
    cdp.send("Profiler.start")
    for _ in range(moves):
        explorer.move(args.gap, args.timeout, keep=False)
    profile = cdp.send("Profiler.stop")["profile"]
    cdp.detach()
    return {"moves": moves, **profile_summary(profile, moves)}


def profile_summary(profile: dict, per: int = 1, until_ms: float | None = None) -> dict:
    """Self time by script and inclusive time by named function, in ms per `per`, of the samples up to
    `until_ms` after the profile started."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    parent = {child: node["id"] for node in profile["nodes"] for child in node.get("children", ())}

    def script(frame) -> str:
        url = frame.get("url", "")
        return url.split("?")[0].rsplit("/", 1)[-1] or url[:40] if url else "(native)"

    def label(frame) -> str:
        return f"{frame['functionName'] or '(anonymous)'} [{script(frame)}]"

    by_script: dict[str, float] = {}
    inclusive: dict[str, float] = {}
    elapsed = 0.0
    for node_id, delta in zip(profile["samples"], profile["timeDeltas"], strict=True):
        elapsed += delta / 1000
        if until_ms is not None and elapsed > until_ms:
            break
        ms = delta / 1000 / per
        frame = nodes[node_id]["callFrame"]
        name = frame["functionName"]
        key = name if name.startswith("(") else script(frame)
        by_script[key] = by_script.get(key, 0.0) + ms
        seen = set()
        while node_id in nodes:
            frame = nodes[node_id]["callFrame"]
            name = frame["functionName"]
            if name and not name.startswith("(") and len(name) > 3 and label(frame) not in seen:
                seen.add(label(frame))
                inclusive[label(frame)] = inclusive.get(label(frame), 0.0) + ms
            node_id = parent.get(node_id)

    def top(d: dict, n: int) -> dict:
        return dict(sorted(d.items(), key=lambda kv: -kv[1])[:n])

    return {"self_by_script_ms": top(by_script, 12), "inclusive_ms": top(inclusive, 30)}


def profile_visit(browser, server: Server, url: str, expected: int, errors: list, timeout: float) -> dict:
    """Where a visit's main thread goes until every chart is drawn (one more visit, not timed)."""
    page = Page(browser, url, "profiled visit", errors, expected, profile=True)
    try:
        page.wait("() => window.__bench.nav.all !== null", timeout, f"{expected} charts", polling=100)
        profile = page.cdp.send("Profiler.stop")["profile"]
        all_ms = page.evaluate("() => window.__bench.nav.all")
    finally:
        page.close()
    # The profile starts just before the navigation, the page's clock at it: close enough to cut there.
    return {"all_charts_ms": all_ms, **profile_summary(profile, until_ms=all_ms)}


def visit(browser, server: Server, url: str, name: str, expected: int, errors: list, timeout: float) -> dict:
    before = server.count(r"Using pre-heated kernel")
    page = Page(browser, url, name, errors, expected)
    try:
        try:
            page.wait(
                "() => window.__bench.nav.all !== null || window.__bench.failed() !== null",
                timeout,
                f"{expected} charts",
                polling=100,
            )
            page.check_notebook()
        except BenchError as error:
            state, log = _page_state(page), server.log_tail(1500)
            raise BenchError(f"{error}\n  {state}\n  server log (end):\n{log}") from None
        wall = (time.perf_counter() - page.started) * 1000
        nav = page.evaluate(
            """() => {
                const n = performance.getEntriesByType('navigation')[0] || {}, B = window.__bench;
                const r = performance.getEntriesByType('resource').filter((e) => e.responseEnd <= B.nav.all);
                const big = r.reduce((a, e) => (a && a.decodedBodySize >= e.decodedBodySize ? a : e), null);
                return {
                    first: B.nav.first, all: B.nav.all, ws: B.ws, longtasks: B.longtasks,
                    response_end: n.responseEnd, dcl: n.domContentLoadedEventEnd,
                    html_bytes: n.decodedBodySize, resources: r.length,
                    resource_bytes: r.reduce((a, e) => a + e.decodedBodySize, 0),
                    largest_resource: big && [big.name.split('?')[0].split('/').pop(), big.decodedBodySize],
                    last_resource_end: r.reduce((a, e) => Math.max(a, e.responseEnd), 0),
                };
            }"""
        )
    finally:
        page.close()
    out = analyse_visit(nav)
    out["wall_ms"] = wall
    out["preheated"] = server.count(r"Using pre-heated kernel") > before
    return out


def _page_state(page: Page) -> str:
    """What a page that timed out shows: its charts, and any error output in it."""
    try:
        return page.evaluate(
            """() => {
                const gds = document.querySelectorAll('.js-plotly-plot');
                const out = [...document.querySelectorAll('.jp-OutputArea-output')]
                    .map((e) => e.innerText).filter((t) => /error|traceback|exception/i.test(t));
                return `${window.__bench.nav.drawn} of ${gds.length} charts drawn; error outputs: `
                    + (JSON.stringify(out).slice(0, 1500) || 'none');
            }"""
        )
    except Exception as error:  # the page itself is gone
        return f"(the page could not be read: {error})"


def run_navigation(browser, server: Server, args, expected: int, errors: list, log) -> dict:
    urls = {"plain": server.base + APP, "shared": server.base + APP + "?" + args.query}
    visits: dict[str, list[dict]] = {name: [] for name in urls}
    for i in range(args.visits):
        for name, url in urls.items():
            label = f"visit {name} {i + 1}"
            for attempt in (1, 2):  # one retry: a failed visit is kept among the errors
                server.wait_idle(args.idle_timeout)
                try:
                    result = visit(browser, server, url, label, expected, errors, args.visit_timeout)
                    break
                except BenchError as error:
                    errors.append(f"{label}: FAILED (attempt {attempt}): {str(error).splitlines()[0]}")
                    if attempt == 1:
                        log(f"!! {label}, attempt {attempt}: {error}")
                    if attempt == 2:
                        raise
            visits[name].append(result)
            log(
                f"visit {name} {i + 1}: first chart {result['first_chart_ms'] / 1000:.2f} s, all "
                f"{result['all_charts_ms'] / 1000:.2f} s, html {result['html_ms'] / 1000:.2f} s, "
                f"{result['ws_in_mb']:.1f} MB over the websocket, {result['resources']} resources "
                f"{result['resources_mb']:.1f} MB (largest {result['largest_resource']})"
                + (", preheated kernel" if result["preheated"] else "")
            )
    out: dict = {}
    if args.profile:
        server.wait_idle(args.idle_timeout)
        out["profiled_visit"] = profile_visit(
            browser, server, urls["plain"], expected, errors, args.visit_timeout
        )
    for name, runs in visits.items():
        fields = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        out[name] = {k: summary([r[k] for r in runs if r[k] is not None]) for k in fields}
        out[name]["preheated"] = sum(r["preheated"] for r in runs)
        out[name]["visits"] = runs if args.raw else None
    return out


# Report ------------------------------------------------------------------------------------------


def ratios(moves: dict) -> dict:
    """Explorer / echo, median and p95 (each the ratio of the two pages' own statistics), by how a move's
    end is timed: "ratio" the target's, both pages until the animation frame that paints their last
    change has rendered; "lines" the same with the line charts alone (the map left out); "mutation"
    both to that change; "events" the explorer's last drawing event against the echo's label (the
    target's measure until 2026-12-01; the charts' front end and Plotly.animate emit that event in
    the callbacks of the frame after drawing, against a change before its frame); "floor" the
    callbacks of the echo's frame / the echo's label, about what the "events" ratio of charts drawn
    at no cost would be (the frame comes at a random point of the wait: a typical figure, not a
    bound)."""
    echo, explorer = moves["echo"], moves["explorer"]

    def over(a: dict, a_key: str, b: dict, b_key: str) -> dict:
        return {
            stat: (a.get(a_key) or {}).get(stat, math.nan) / (b.get(b_key) or {}).get(stat, math.nan)
            for stat in ("median", "p95")
        }

    return {
        "ratio": over(explorer, "framed", echo, "framed"),
        "lines": over(explorer, "lines_framed", echo, "framed"),
        "mutation": over(explorer, "dom_done", echo, "done"),
        "events": over(explorer, "done", echo, "done"),
        "floor": over(echo, "frame_at", echo, "done"),
    }


def report(results: dict) -> str:
    moves, nav, load = results["moves"], results["navigation"], results["load_average"]
    echo, explorer = moves["echo"], moves["explorer"]
    r = results["ratios"]
    nan = {"median": math.nan, "p95": math.nan}
    framed_n = {page: (moves[page].get("framed") or {}).get("n", 0) for page in ("echo", "explorer")}
    control = results.get("control", "lr")  # figures kept from before --control moved lr

    def row(words: str, values: dict, digits: int = 1) -> str:
        return f"  {words:<62}{values['median']:7.{digits}f} {values['p95']:7.{digits}f}"

    lines = [
        f"ScanLab browser benchmark, {results['when']}, {os.cpu_count()} CPUs, load average "
        f"{load['start'][0]:.1f} at the start, {load['end'][0]:.1f} at the end",
        f"server: {' '.join(results['server']['argv'])}",
        f"        {' '.join(results['server']['env']) or '(no JAX/VOILA environment)'}",
        "",
        f"{control} moved against the echo until the page has settled, "
        f"{echo['done']['n']} moves per page (ms)   median     p95",
        "  each page until the frame that paints its last change has rendered (the target's measure):",
        row("echo: IntSlider -> Label text", echo.get("framed", nan)),
        row(f"explorer: {control} -> every chart ({moves['charts']} charts)", explorer.get("framed", nan)),
        row("ratio explorer / echo (the map's target with N, w0: <= 3)", r["ratio"], 2),
        row("explorer: the line charts alone (the map left out)", explorer.get("lines_framed", nan)),
        row("ratio line charts / echo (target <= 1.5)", r.get("lines", nan), 2),
        *(
            [
                f"    (of {echo['done']['n']} moves a page, the frame came within the wait on "
                f"{framed_n['echo']} of the echo's, {framed_n['explorer']} of the explorer's)"
            ]
            if min(framed_n.values()) < echo["done"]["n"]
            else []
        ),
        "  each page to its last change, before that frame (a mutation of the page):",
        row("echo label (its one change)", echo["done"]),
        row("explorer, the charts' elements", explorer.get("dom_done", nan)),
        row("ratio explorer / echo", r["mutation"], 2),
        "  the explorer's last drawing event (in the frame after drawing) / the echo's label:",
        row("explorer, every chart's last drawing event", explorer["done"]),
        row("ratio explorer / echo (the target's measure until 2026-12-01)", r["events"], 2),
        row("echo's frame's callbacks / echo label: that ratio, free charts", r["floor"], 2),
        "",
        "where an explorer move goes, median ms after the keydown (echo alongside)     explorer    echo",
    ]
    rows = [
        ("value message sent", "sent"),
        ("kernel busy (kernel clock)", "kernel_busy"),
        ("kernel idle (kernel clock)", "kernel_idle"),
        ("  kernel time, busy to idle", "kernel_ms"),
        ("first reply in the browser", "first_reply_in"),
        ("last figure message in the browser", "last_figure_msg_in"),
        ("idle status in the browser", "idle_in"),
        ("first chart drawn (its first drawing event)", "first_afterplot"),
        ("every chart drawn (its last drawing event) / echo label", "done"),
        ("the frame that paints the last change: its callbacks", "frame_at"),
        ("  its rendering, from its callbacks to the next task", "frame_ms"),
        ("drawing events per move", "afterplots"),
        ("main thread busy per move, gap included: all tasks", "main_task_ms"),
        ("  of which layout", "main_layout_ms"),
        ("  of which style recalculation", "main_style_ms"),
        ("  of which this benchmark's websocket wrapper", "instrumentation_ms"),
        ("messages from the kernel (comm_msg)", "reply_msgs"),
        ("  their size, KB", "reply_kb"),
        ("  of them batches of widget updates (widgets/batch.py)", "reply_batches"),
        ("messages to the kernel after the value", "js_to_kernel_msgs"),
        ("  their size, KB", "js_to_kernel_kb"),
    ]
    for words, key in rows:
        a = f"{explorer[key]['median']:8.1f}" if key in explorer else "       -"
        b = f"{echo[key]['median']:8.1f}" if key in echo else "       -"
        lines.append(f"  {words:<66}{a}{b}")
    charts = sorted((v["median"], k) for k, v in explorer.items() if k.startswith("chart "))
    lines.append("each chart drawn, median ms after the keydown (the step from the one before)")
    before = 0.0
    for t, name in charts:
        lines.append(f"  {name[:64]:<66}{t:8.1f}  (+{t - before:.1f})")
        before = t
    if nav:
        lines += ["", "navigation to the charts, a fresh context each, from navigation start (s)"]
        lines.append(f"  {'':<68}{'min':>6}{'median':>8}{'max':>6}")
    for name, data in nav.items():
        if name not in ("plain", "shared"):
            continue
        label = "plain URL" if name == "plain" else f"shared link ?{results['query']}"
        visits = data["first_chart_ms"]["n"]
        lines.append(f"  {label}  ({visits} visits, {data['preheated']} on a preheated kernel)")
        for words, key in (
            ("HTML received", "html_ms"),
            ("DOMContentLoaded", "dom_content_loaded_ms"),
            ("last script or style loaded", "last_resource_ms"),
            ("first websocket message", "first_ws_message_ms"),
            ("first chart drawn", "first_chart_ms"),
            ("all charts drawn (target <= 3, aim 2)", "all_charts_ms"),
            ("largest websocket message arrived", "largest_message_ms"),
        ):
            low, mid, high = (data[key][k] / 1000 for k in ("min", "median", "max"))
            lines.append(f"    {words:<66}{low:6.2f}{mid:8.2f}{high:6.2f}")
        mb = {k: data[k]["median"] for k in ("resources_mb", "ws_in_mb", "largest_message_mb")}
        lines.append(
            f"    medians: {mb['resources_mb']:.1f} MB of scripts and styles; over the websocket "
            f"{mb['ws_in_mb']:.2f} MB, the largest message {mb['largest_message_mb']:.2f} MB; "
            f"main-thread long tasks {data['longtask_ms']['median'] / 1000:.2f} s"
        )
    if moves.get("dead_chart_pages"):
        lines += ["", f"!! explorer pages where charts never redrew (retried): {moves['dead_chart_pages']}"]
    visit_ms = f"{dig(nav, 'profiled_visit', 'all_charts_ms') or 0:.0f}"
    for title, profile in (
        (
            f"main thread per explorer move, gap included ({dig(moves, 'profile', 'moves')} moves profiled)",
            moves.get("profile"),
        ),
        (
            f"main thread during one more visit, until all charts drawn ({visit_ms} ms)",
            nav.get("profiled_visit"),
        ),
    ):
        if not profile:
            continue
        lines += ["", f"{title}: self time by script, ms"]
        lines += [f"  {v:7.1f}  {k}" for k, v in profile["self_by_script_ms"].items()]
        lines.append("  inclusive time by named function (minified names are the bundles' own), ms:")
        lines += [f"  {v:7.1f}  {k}" for k, v in profile["inclusive_ms"].items()]
    errors = results["console_errors"]
    lines += ["", f"console and page errors ({len(errors)}):" if errors else "console and page errors: none"]
    lines += [f"  {e[:300]}" for e in errors]
    closing = results["errors_while_closing_pages"]
    lines.append(
        f"errors while pages closed: {len(closing)}"
        + (f", e.g. {closing[0][:200]}" if closing else "")
        + f"; kernels still running once the browser had closed every page: {results['kernels_at_end']}"
    )
    return "\n".join(lines)


def dig(data, *keys):
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _shown_sources(text: str) -> list[str]:
    """app.ipynb's code lines in the page's text (none while voila.json strips sources)."""
    notebook = json.loads((ROOT / "app.ipynb").read_text())
    lines = {
        line.strip()
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
        if len(line.strip()) > 12
    }
    return sorted(line for line in lines if line in text)


def _summary(results: dict) -> dict:
    """The headline figures, flat, for a table elsewhere (ms; navigation in s)."""
    moves = results["moves"]
    out = {
        "charts": moves["charts"],
        "moves_per_page": moves["explorer"]["done"]["n"],
        # The target's measure: each page to the frame that paints its last change (`ratios`).
        **{
            f"{page}_framed_{stat}_ms": (moves[page].get("framed") or {}).get(stat)
            for page in ("echo", "explorer")
            for stat in ("median", "p95")
        },
        **{f"{name}_{stat}": value for name, r in results["ratios"].items() for stat, value in r.items()},
        "explorer_kernel_median_ms": moves["explorer"].get("kernel_ms", {}).get("median"),
    }
    for name, data in results["navigation"].items():
        if name not in ("plain", "shared"):
            continue
        for key in ("first_chart_ms", "all_charts_ms"):
            for stat in ("min", "median", "max"):
                out[f"nav_{name}_{key[:-3]}_{stat}_s"] = data[key][stat] / 1000
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--moves", type=int, default=30, help="timed moves per page (default 30)")
    parser.add_argument("--warmup", type=int, default=4, help="untimed moves per page first (default 4)")
    parser.add_argument(
        "--gap", type=float, default=0.3, help="seconds between moves (default 0.3), plus up to a frame"
    )
    parser.add_argument("--visits", type=int, default=5, help="fresh visits per URL (default 5)")
    parser.add_argument("--query", default=SHARED_QUERY, help=f"the shared link's query ({SHARED_QUERY})")
    parser.add_argument(
        "--voila-args",
        default="",
        help="options after make run's own, e.g. '--VoilaConfiguration.preheat_kernel=False'",
    )
    parser.add_argument("--timeout", type=float, default=20, help="seconds a move may take (default 20)")
    parser.add_argument("--load-timeout", type=float, default=120, help="seconds a page may take (120)")
    parser.add_argument("--visit-timeout", type=float, default=45, help="seconds a visit may take (45)")
    parser.add_argument("--idle-timeout", type=float, default=90, help="seconds for the server to go idle")
    parser.add_argument("--page-tries", type=int, default=3, help="fresh explorer pages before giving up")
    parser.add_argument(
        "--control", choices=CONTROLS, default="lr", help="the explorer's control to move (default lr)"
    )
    parser.add_argument("--skip-navigation", action="store_true")
    parser.add_argument(
        "--profile", action="store_true", help="CPU-profile 15 more explorer moves and one more visit (CDP)"
    )
    parser.add_argument("--raw", action="store_true", help="keep every raw move and visit in --json")
    args = parser.parse_args(argv)
    if args.moves < 1 or args.visits < 1 or args.page_tries < 1:
        parser.error("--moves, --visits and --page-tries must be at least 1")

    def log(message: str):
        print(message, file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    errors: list[str] = []
    server = None
    load_start = list(os.getloadavg())
    try:
        from playwright.sync_api import sync_playwright

        if not os.path.exists(CHROMIUM):
            raise BenchError("Chromium is missing: apt-get install chromium (make chromium)")
        chromium_args = list(CHROMIUM_ARGS)
        log("starting the server (make run, serving the repository directory)")
        server = Server(shlex.split(args.voila_args), args.load_timeout)
        log(f"  {' '.join(server.argv)}\n  {' '.join(server.env)}")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=chromium_args)
            try:
                log("warming up: one visit to the explorer")
                first = Page(browser, server.base + APP, "warm-up visit", errors)
                try:
                    expected = _wait_for_charts(first, args.load_timeout)
                    shown = _shown_sources(first.page.inner_text("body"))
                    if shown:
                        raise BenchError(f"the page shows code ({shown}): is voila.json in force?")
                finally:
                    first.close()
                log(f"  {expected} charts; sources stripped (voila.json in force)")
                moves = run_moves(browser, server, args, expected, errors, log)
                navigation = (
                    {}
                    if args.skip_navigation
                    else run_navigation(browser, server, args, expected, errors, log)
                )
            finally:
                browser.close()
        time.sleep(2)
        kernels = server.kernels()
        results = {
            "when": datetime.now().isoformat(timespec="seconds"),
            "load_average": {"start": load_start, "end": list(os.getloadavg())},
            "server": {"argv": server.argv, "env": server.env},
            "query": args.query,
            "control": args.control,
            "moves": moves,
            "ratios": ratios(moves),
            "navigation": navigation,
            "console_errors": errors,
            "errors_while_closing_pages": CLOSE_ERRORS,
            "kernels_at_end": kernels,
        }
        results["summary"] = _summary(results)
    except BenchError as error:
        print(f"benchmarks.browser FAILED: {error}", file=sys.stderr)
        if errors:
            print("console and page errors:\n  " + "\n  ".join(errors[-20:]), file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
