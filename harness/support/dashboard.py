"""One page of the served dashboard in Chromium, for the browser tests: `Dashboard` (its console watched
for errors, its charts read as Plotly drew them, in a context it shares with the other pages of its
browser and options), `chart_context` (a context whose pages define `scanlabChart(title)`), the
version warnings the pinned front-end stack logs (STACK_MISMATCHES), and `expected_weights` (the run
a page must draw, from core)."""

import re
import time

import numpy as np

import core
from harness.protocol import Message
from harness.support.reference import batches_for
from widgets.axes import SignedLog
from widgets.batch import LIVE
from widgets.stability import BOX, TRACES_PER_LOSS


def _text(frame) -> str:
    return frame.decode("utf-8", "replace") if isinstance(frame, bytes) else frame


# In every page: the chart whose title starts with `title` (undefined if none), the one laid out
# where one is hidden (the stability map keeps a figure of each kind, the other one hidden).
CHART_TITLED = """window.scanlabChart = (title) => {
    const found = [...document.querySelectorAll('.js-plotly-plot')]
        .filter(g => g.layout && g.layout.title && String(g.layout.title.text || '').startsWith(title));
    return found.find(g => g.clientWidth > 0) || found[0];
};"""


def chart_context(browser, **options):
    """A browser context whose pages define scanlabChart (CHART_TITLED), for Dashboard's methods."""
    context = browser.new_context(**options)
    context.add_init_script(CHART_TITLED)
    return context


# The contexts Dashboard's pages open in: one per browser and set of options, as one visitor's tabs
# share a browser's cache. A page in a fresh context fetched and compiled Voila's and Plotly.js's
# scripts anew: 0.6 of the 4.9 CPU seconds a page took to open (docs/testing.md).
_CONTEXTS: dict[tuple, object] = {}


def shared_context(browser, **options):
    """`chart_context(browser, **options)`, made once per browser and options and kept open with it."""
    key = (id(browser), tuple(sorted((name, repr(value)) for name, value in options.items())))
    context = _CONTEXTS.get(key)
    if context is None or context.browser is not browser or not browser.is_connected():
        context = _CONTEXTS[key] = chart_context(browser, **options)
    return context


# Voila 0.5.13 (the newest) is built on JupyterLab 4.2.5, while its own widget manager was built
# against 4.5.10 and jupyterlab_widgets 3.0.17 (which ipywidgets 8.1.9 requires) against 4.6.2: every
# page logs these 13 warnings, with or without JupyterLab installed. (module, required version).
STACK_PINS = {"voila": "0.5.13", "jupyterlab_widgets": "3.0.17"}
STACK_MISMATCHES = frozenset(
    [(f"@jupyterlab/{m}", "^4.6.2") for m in ("console", "logconsole", "mainmenu", "notebook")]
    + [(f"@jupyterlab/{m}", "^4.6.2") for m in ("outputarea", "rendermime", "settingregistry", "translation")]
    + [("@jupyterlab/services", "^7.6.2"), ("@jupyterlab/services", "^7.5.10")]
    + [("@jupyterlab/rendermime", "^4.5.10"), ("@jupyterlab/statedb", "^4.5.10")]
    + [("@jupyterlab/coreutils", "^6.5.10")]
)
_MISMATCH = re.compile(
    r"Unsatisfied version \S+ from \S+ of shared singleton module (?P<a>\S+) \(required (?P<b>\S+)\)"
    r"|No satisfying version \((?P<d>\S+)\) of shared module (?P<c>\S+) found"
)


def version_mismatch(text: str):
    """(module, required version) of a module-federation version warning, else None."""
    found = _MISMATCH.search(text)
    if not found:
        return None
    return (found["a"], found["b"]) if found["a"] else (found["c"], found["d"])


class Dashboard:
    """One page of the dashboard, with the console watched for errors."""

    def __init__(self, browser, url, viewport=(1280, 900), **options):
        # A context that outlives the page: a page-owned context closes with the page and drops the
        # request Voila sends on unload to shut the page's kernel down.
        width, height = viewport
        self.context = shared_context(browser, viewport={"width": width, "height": height}, **options)
        self.page = self.context.new_page()
        self.errors = []
        self.requests = []  # every address the page asked for
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", self._console)
        self.page.on("dialog", self._dialog)
        self.frames_sent = []  # what the page sent over its websockets
        self.frames_received = []  # and what it received
        self.page.on("websocket", self._watch)
        self.page.goto(url, timeout=60_000)
        self.page.wait_for_function(
            "() => document.querySelectorAll('.js-plotly-plot').length >= 6", timeout=90_000, polling=200
        )

    def _watch(self, socket):
        socket.on("framesent", lambda frame: self.frames_sent.append(frame))
        socket.on("framereceived", lambda frame: self.frames_received.append(frame))

    def sent(self, text: str) -> int:
        """How many of the frames the page sent over its websockets contain `text`."""
        return sum(text in _text(frame) for frame in self.frames_sent)

    def wait_for_sent(self, text: str, timeout_ms: int = 30_000) -> None:
        """Wait until the page has sent a frame containing `text` (Playwright's sync API records
        frames only while it waits with the page, hence `wait_for_timeout`, never `time.sleep`)."""
        for _ in range(timeout_ms // 50):
            if self.sent(text):
                return
            self.page.wait_for_timeout(50)
        raise AssertionError(f"the page never sent {text!r} within {timeout_ms} ms")

    def widget_messages(self, since: int) -> list[dict]:
        """The data of each widget message the page received after its first `since` frames."""
        received = [Message.from_frame(frame) for frame in self.frames_received[since:]]
        return [m.content["data"] for m in received if m.msg_type == "comm_msg"]

    def _dialog(self, dialog):
        self.errors.append(f"a dialog opened: {dialog.message}")  # an injected alert()
        dialog.dismiss()

    def _console(self, message):
        # A shared module of another version than an extension was built for is only a warning to
        # the page; beyond the pinned stack's own (STACK_MISMATCHES) it is a broken install.
        if message.type == "error" or version_mismatch(message.text) not in STACK_MISMATCHES | {None}:
            self.errors.append(message.text)

    def in_view(self, chart_title: str | None = None) -> None:
        """Scroll the chart of that title (every chart in turn, for None) into view, and wait until
        each has drawn what it holds: a chart out of view holds its changes undrawn until it comes
        into view (widgets/surface.js), and what Plotly has drawn is read from it here."""
        self.page.evaluate(
            """async (title) => {
                const charts = title === null ? [...document.querySelectorAll('.js-plotly-plot')]
                                              : [scanlabChart(title)];
                for (const gd of charts) {
                    gd.scrollIntoView({block: 'nearest'});
                    const start = performance.now();
                    while ((gd.dataset.held !== undefined || gd.dataset.pending !== undefined)
                           && performance.now() - start < 20000) {
                        await new Promise((resolve) => requestAnimationFrame(resolve));
                    }
                }
            }""",
            chart_title,
        )

    def trace_y(self, chart_title: str, index: int | None = None) -> list:
        """The y values Plotly has drawn for a trace (by default the first one shown): its calcdata,
        which a full redraw and an animation frame both recompute (a trace's `data` is set before
        the frame is drawn)."""
        self.in_view(chart_title)
        return self.page.evaluate(
            """([title, index]) => {
                const gd = scanlabChart(title);
                if (index === null) index = gd._fullData.findIndex(t => t.visible === true);
                return gd.calcdata[index].map(p => (typeof p.y === 'number' ? p.y : NaN));
            }""",
            [chart_title, index],
        )

    def drawn(self, chart_title: str) -> dict:
        """The first trace as drawn (its SVG line and calcdata) and as set (its data), and the y
        axis's range."""
        self.in_view(chart_title)
        return self.page.evaluate(
            """(title) => {
                const gd = scanlabChart(title);
                const nan = (v) => (typeof v === 'number' ? v : NaN);
                return {line: gd.querySelector('.scatterlayer .trace path.js-line').getAttribute('d'),
                        drawn: gd.calcdata[0].map(p => nan(p.y)), data: Array.from(gd.data[0].y, nan),
                        range: gd._fullLayout.yaxis.range};
            }""",
            chart_title,
        )

    def stability_map(self) -> dict:
        """The map as drawn: each panel's outcome heatmap (calcdata) and its current-setting box (a
        layout shape: [x0, x1] and [y0, y1])."""
        self.in_view("Stability map")
        return self.page.evaluate(
            """([perLoss, white]) => {
                const gd = scanlabChart('Stability map');
                const nan = (v) => (typeof v === 'number' ? v : NaN);
                const z = (i) => Array.from(gd.calcdata[i][0].z, (row) => Array.from(row, nan));
                const box = (shape) => [[shape.x0, shape.x1], [shape.y0, shape.y1]];
                const boxes = gd.layout.shapes.filter((s) => s.line.color === white);
                return {z: [z(0), z(perLoss)], box: boxes.map(box)};
            }""",
            [TRACES_PER_LOSS, BOX["color"]],
        )

    def click_map(self, x: float, y: float) -> None:
        """Click the stability map's sum panel where its axes have (x, y), as a visitor does."""
        self.page.mouse.click(*self._map_point(x, y))

    def hover_map(self, x: float, y: float) -> str:
        """The words the stability map's sum panel shows with the mouse over (x, y) of its axes."""
        self.page.mouse.move(*self._map_point(x, y))
        label = self.page.locator(".js-plotly-plot .hoverlayer .hovertext")
        label.first.wait_for(timeout=10_000)
        return " ".join(label.evaluate_all("(found) => found.map((e) => e.textContent)"))

    def _map_point(self, x: float, y: float) -> tuple[float, float]:
        shown = self.page.locator(".js-plotly-plot:visible")  # not the other kind's hidden figure
        shown.filter(has_text="Stability map").scroll_into_view_if_needed()
        x_px, y_px = self.page.evaluate(
            """([x, y]) => {
                const gd = scanlabChart('Stability map');
                const box = gd.getBoundingClientRect(), xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
                return [box.left + xa._offset + xa.d2p(x), box.top + ya._offset + ya.d2p(y)];
            }""",
            [x, y],
        )
        return x_px, y_px

    def layers(self) -> list:
        """Per chart on the page: how many scatter traces and heatmaps are drawn (SVG groups)."""
        return self.page.evaluate(
            """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => [
                gd.querySelectorAll('.scatterlayer .trace').length,
                gd.querySelectorAll('.heatmaplayer .hm').length])"""
        )

    def count_drawings(self) -> None:
        """From now on, count per chart how it draws each change (widgets/surface.js): points moved
        by Plotly.animate (`plotly_animated`), the whole chart by Plotly.react (`plotly_afterplot`,
        which a relayout of axis ranges fires too), the layout by Plotly.relayout (`plotly_relayout`)."""
        self.page.evaluate(
            """() => {
                window.scanlabTest = [...document.querySelectorAll('.js-plotly-plot')]
                    .map(gd => {
                        const count = {title: gd.layout.title.text.slice(0, 20), animated: 0, redrawn: 0,
                                       relayout: 0};
                        gd.on('plotly_animated', () => count.animated++);
                        gd.on('plotly_afterplot', () => count.redrawn++);
                        gd.on('plotly_relayout', () => count.relayout++);
                        return count;
                    });
            }"""
        )

    def drawings(self) -> list[dict]:
        return self.page.evaluate("() => window.scanlabTest")

    def redrawn_differently(self) -> list[str]:
        """Each chart drawn again from scratch by Plotly.newPlot, from its data and layout as they are
        now, next to it: the SVG elements whose drawing differs (lines, points, heatmaps, axes'
        ticks)."""
        return self.page.evaluate(
            """async () => {
                const drawing = (gd) => [...gd.querySelectorAll(
                    '.scatterlayer .trace path, .heatmaplayer image, .xtick text, .ytick text')].map(node =>
                    ['class', 'd', 'transform', 'href', 'display']
                        .map(name => node.getAttribute(name)).join(' '));
                const differ = [];
                for (const gd of document.querySelectorAll('.js-plotly-plot')) {
                    const title = gd.layout.title.text;
                    // What is drawn and what it is drawn from, at one moment: a frame may arrive
                    // while the copy is drawn.
                    const now = drawing(gd);
                    const [data, layout] = [structuredClone(gd.data), structuredClone(gd.layout)];
                    const fresh = document.createElement('div');
                    // The size the chart took from its place on the page (its layout has none).
                    fresh.style.width = `${gd.clientWidth}px`;
                    fresh.style.height = `${gd.clientHeight}px`;
                    document.body.appendChild(fresh);
                    await Plotly.newPlot(fresh, data, layout);
                    const redrawn = drawing(fresh);
                    for (let i = 0; i < Math.max(now.length, redrawn.length); i++) {
                        if (now[i] !== redrawn[i]) differ.push(`${title}: ${now[i]} | ${redrawn[i]}`);
                    }
                    Plotly.purge(fresh);
                    fresh.remove();
                }
                return differ;
            }"""
        )

    def trajectory(self) -> np.ndarray:
        """The weights the trajectory has drawn: on a diverging run's signed log scale (the chart's
        layout.meta.signed_log), the drawn positions mapped back to weights."""
        drawn = np.asarray(self.trace_y("Trajectory"), dtype=np.float64)
        c = self.page.evaluate("() => (scanlabChart('Trajectory').layout.meta || {}).signed_log ?? null")
        if c is None:
            return drawn
        scale = SignedLog(c)
        return np.array([scale.weight(v) if np.isfinite(v) else np.nan for v in drawn])

    def wait_for_trajectory(self, done, what: str) -> np.ndarray:
        """The trajectory's weights once done(weights) holds."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            now = self.trajectory()
            if done(now):
                return now
            time.sleep(0.05)
        raise AssertionError(f"the trajectory chart never {what}")

    def wait_for_trajectory_change(self, before: np.ndarray) -> np.ndarray:
        return self.wait_for_trajectory(
            lambda now: now.shape != before.shape or not np.array_equal(now, before, equal_nan=True),
            "changed",
        )

    def slider(self, label: str):
        return self.page.locator(".widget-slider").filter(
            has=self.page.locator("label", has_text=re.compile(f"^{re.escape(label)}$"))
        )

    def close(self):
        """Close the tab as a visitor does, so that its kernel is shut down (tests/test_lifecycle.py);
        the context is closed with the browser."""
        self.page.close(run_before_unload=True)


# Back to the page as it opened: every scrolled box at its top, nothing focused.
AS_OPENED = """() => {
    for (const e of [document.scrollingElement, ...document.querySelectorAll('*')]) {
        if (e && (e.scrollTop || e.scrollLeft)) { e.scrollTop = 0; e.scrollLeft = 0; }
    }
    if (document.activeElement) document.activeElement.blur();
}"""


class PagesToRead:
    """Pages of the dashboard kept open for the tests of a module that only read them (a page
    costs about 3 s and 7 CPU seconds to open here): `pages(query, viewport, **options)` opens one
    the first time it is asked for and lends the same page after that. A page is lent for a test
    (`lend`) and handed back (`hand_back`): scrolled back to its top; a page that sent its kernel
    a widget message, or logged an error, while lent fails the test (a test that moves a control
    opens a Dashboard of its own)."""

    def __init__(self, browser, url: str):
        self.browser, self.url = browser, url
        self.pages: dict[tuple, Dashboard] = {}
        self.lent: list[tuple[Dashboard, int]] = []

    def lend(self, query: str = "", viewport=(1280, 900), **options) -> Dashboard:
        key = (query, viewport, tuple(sorted(options.items())))
        if key not in self.pages:
            self.pages[key] = Dashboard(self.browser, self.url + query, viewport=viewport, **options)
            # The charts can be drawn before the page's last opening message (the batch's LIVE, a
            # round trip after its code ran) has left it: a slow machine counted it as a test's.
            self.pages[key].wait_for_sent(LIVE)
        page = self.pages[key]
        page.page.evaluate(AS_OPENED)  # also hands Playwright the frames that came meanwhile
        self.lent.append((page, page.sent('"comm_msg"')))
        return page

    def hand_back(self) -> list[str]:
        """Take back the lent pages; what each did that a page to read must not do."""
        problems = []
        for page, sent in self.lent:
            page.page.evaluate(AS_OPENED)
            if page.sent('"comm_msg"') != sent:
                problems.append(
                    f"{page.page.url} sent its kernel a widget message while lent: a test that moves "
                    "a control opens a Dashboard of its own"
                )
            problems += page.errors
            page.errors = []
        self.lent = []
        return problems

    def close(self) -> None:
        for page in self.pages.values():
            page.close()
        self.pages = {}


def expected_weights(settings):
    """The weights the trajectory chart must draw for `settings` (w's, under the w, b model)."""
    x, y = batches_for(settings)
    if settings.model == "w,b":  # the trajectory's first line is w's
        params = {"w": settings.w0, "b": settings.b0}
        return core.pytree_history(params, settings.lr, x, y).params["w"].astype(np.float64)
    return core.training_history(settings.w0, settings.lr, x, y).weights.astype(np.float64)
