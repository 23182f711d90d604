"""The page probe of benchmarks.browser: a dashboard or echo page in a fresh Chromium context, with
browser_page.js installed before any of the page's scripts (the websocket wrapped, keydowns, long
tasks, each chart's changes, drawing events and painting frame), and keyboard moves timed in it.

    page = Page(browser, url, "explorer", errors, expected=6)
    charts = wait_for_charts(page, timeout)
    record = Mover(page, handle, "charts").move(gap_s, timeout)  # the page's own record of one move

benchmarks/browser_report.py turns the records into figures. A move waits for the charts a person
sees: a chart scrolled out of view holds its change without drawing it (widgets/surface.js marks it
data-held, not data-pending) and draws it when it comes into view, so the page's charts below the
window (at 1280x900: the per-step factor and the stability map) take no part in a move.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from harness.js import call
from harness.protocol import BATCH, CHART_DRAWN

HERE = Path(__file__).resolve().parent
VIEWPORT = {"width": 1280, "height": 900}
KEYS = ("ArrowRight", "ArrowLeft")
FRAME_S = 1 / 60  # Chromium's frames, headless too (measured: 16.7 ms apart, median)
MAIN_THREAD = {"TaskDuration": "task", "LayoutDuration": "layout", "RecalcStyleDuration": "style"}
BIG_MESSAGE = 4096  # bytes; larger message bodies are skimmed, not parsed, in the page


CLOSE_ERRORS: list[str] = []  # errors while pages close, e.g. a refused POST /voila/api/shutdown


class BenchError(RuntimeError):
    """A wait that timed out or a page that failed: the run stops with this message (a server that
    failed raises harness.server.ServerError)."""


class Page:
    """A page in a new browser context, instrumented, with its console errors collected."""

    def __init__(
        self, browser, url: str, name: str, errors: list, expected: int | None = None, profile: bool = False
    ):
        self.name = name
        self.errors = errors
        self.closing = False
        self.context = browser.new_context(viewport=VIEWPORT)
        options = {"expected": expected, "big": BIG_MESSAGE, "batch": BATCH, "drawn": CHART_DRAWN}
        self.context.add_init_script(call(HERE / "browser_page.js", options))
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


def wait_for_charts(page: Page, timeout: float, expected: int | None = None) -> int:
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


def page_state(page: Page) -> str:
    """What a page that timed out shows: its charts, and any error output in it."""
    try:
        return page.evaluate(call(HERE / "browser_timed_out.js"))
    except Exception as error:  # the page itself is gone
        return f"(the page could not be read: {error})"
