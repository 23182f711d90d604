"""The served dashboard in a real Chromium: `make run` serves app.ipynb, the keyboard and the readouts
drive the charts, presets and shared links land where they say.

Chromium is Debian's (/usr/bin/chromium, installed by .ci/run); Playwright drives it. The server is
started with the README's own command, `make run PORT=...`, on loopback. These tests never skip: a
missing browser is a failure.
"""

import math
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page

import core
from harness.support.dashboard import (
    STACK_MISMATCHES,
    STACK_PINS,
    Dashboard,
    expected_weights,
    version_mismatch,
)
from harness.support.reference import batches_for
from widgets.model import MAP_BATCH_SIZES, MAP_LRS, MAP_MOMENTA
from widgets.settings import DEFAULTS, PRESETS, RANGES, to_query

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = os.environ.get("SCANLAB_SCREENSHOT")  # where to save the page, e.g. docs/screenshot.png


def test_the_tolerated_version_warnings_are_the_pinned_stacks():
    # When Voila or jupyterlab_widgets moves, STACK_MISMATCHES is checked again, not carried along.
    from importlib.metadata import version

    assert {name: version(name) for name in STACK_PINS} == STACK_PINS
    text = (
        "Unsatisfied version 4.2.5 from _JUPYTERLAB.CORE_OUTPUT of shared singleton module "
        "@jupyterlab/console (required ^4.6.2)"
    )
    assert version_mismatch(text) in STACK_MISMATCHES
    assert version_mismatch(text.replace("^4.6.2", "^4.7.0")) not in STACK_MISMATCHES
    text = "No satisfying version (^4.6.2) of shared module @jupyterlab/outputarea found in shared scope"
    assert version_mismatch(text) == ("@jupyterlab/outputarea", "^4.6.2")


@pytest.fixture
def dashboard(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url)
    yield page
    assert page.errors == [], page.errors
    page.close()


PLANE = "Loss landscape: the steps on L(w, b)"  # the w, b model's chart, in the landscape's place


def test_the_w_b_model_draws_the_carry_on_the_contours_of_the_loss(dashboard):
    page = dashboard.page
    assert not dashboard.slider("b0").is_visible() and not dashboard.slider("x mean").is_visible()
    page.get_by_role("button", name="w, b", exact=True).click()
    settings = DEFAULTS._replace(model="w,b")
    expected = expected_weights(settings)
    dashboard.wait_for_trajectory(lambda now: np.allclose(now, expected, rtol=1e-6), "showed the w, b run")
    assert dashboard.slider("b0").is_visible() and dashboard.slider("x mean").is_visible()
    x, y = batches_for(settings)
    run = core.pytree_history({"w": 0.0, "b": 0.0}, settings.lr, x, y)
    page.wait_for_function(
        f"() => scanlabChart({PLANE!r}) && scanlabChart({PLANE!r}).calcdata", timeout=20_000
    )
    drawn = page.evaluate(
        """(title) => {
            const gd = scanlabChart(title), nan = (v) => (typeof v === 'number' ? v : NaN);
            const visible = gd.getBoundingClientRect().width > 0;
            return {visible, contours: gd.calcdata[0].filter(p => typeof p.x === 'number').length,
                    w: gd.calcdata[1].map(p => nan(p.x)), b: gd.calcdata[1].map(p => nan(p.y)),
                    lines: gd.querySelectorAll('.scatterlayer .trace path.js-line').length};
        }""",
        PLANE,
    )
    assert drawn["visible"] and drawn["contours"] > 100 and drawn["lines"] >= 2
    np.testing.assert_allclose(drawn["w"], run.params["w"], rtol=1e-6)
    np.testing.assert_allclose(drawn["b"], run.params["b"], rtol=1e-6)
    assert not page.locator(
        ".js-plotly-plot", has_text="Loss landscape: the steps drawn on L(w)"
    ).is_visible()
    status = page.inner_text(".scanlab-status")
    assert "final {w: " in status and "distance to (w*, b*)" in status


# The font size of the page's markdown cells (every one has the same).
MARKDOWN_FONT = """() => [...new Set([...document.querySelectorAll('.jp-RenderedHTMLCommon')]
    .map(e => getComputedStyle(e).fontSize))].join()"""


def test_first_page_shows_the_default_run(page_to_read):
    dashboard = page_to_read()
    np.testing.assert_allclose(dashboard.trajectory(), expected_weights(DEFAULTS), rtol=1e-6)
    body = dashboard.page.inner_text("body")
    assert "converging, no step overshooting its batch's optimum" in body
    assert "Explorer.from_environment" not in dashboard.page.content()  # sources are stripped
    font = dashboard.page.evaluate(MARKDOWN_FONT)  # the projector's larger text: its page only
    assert font and "," not in font and font != "18px", font
    if SCREENSHOT:  # the page down to its last chart (the map): Voila scrolls inside its own
        # container, so the window grows to hold it instead
        bottom = (
            "() => Math.max(...[...document.querySelectorAll('.js-plotly-plot')]"
            ".map(gd => gd.getBoundingClientRect().bottom))"
        )
        height = math.ceil(dashboard.page.evaluate(bottom)) + 40
        dashboard.page.set_viewport_size({"width": 1280, "height": height})
        dashboard.page.wait_for_timeout(1500)
        dashboard.page.screenshot(path=SCREENSHOT)
        dashboard.page.set_viewport_size({"width": 1280, "height": 900})  # as the page opened


def test_a_move_reaches_the_page_as_one_message(dashboard):
    # widgets/batch.py: the kernel's answer to a slider move is its echo of the value and one batch
    # holding every widget's change (six charts, the captions shown, status, share link), which the page hands
    # to each widget as if it had come alone.
    handle = dashboard.slider("lr").locator(".noUi-handle")
    handle.focus()
    for key in ("ArrowRight", "ArrowLeft"):  # the axes' ranges then hold both values' points
        before = dashboard.trajectory()
        handle.press(key)
        dashboard.wait_for_trajectory_change(before)
    dashboard.page.wait_for_timeout(500)
    dashboard.in_view()  # every chart, those out of view too, has drawn both values
    before = dashboard.trajectory()
    captions = dashboard.page.locator(".scanlab-caption:visible").all_inner_texts()
    link = dashboard.page.locator(".widget-text", has_text="share link").locator("input")
    share = link.input_value()
    dashboard.count_drawings()
    start = len(dashboard.frames_received)
    handle.press("ArrowRight")
    dashboard.wait_for_trajectory_change(before)
    dashboard.page.wait_for_timeout(500)
    widget_messages = dashboard.widget_messages(since=start)
    assert [data["method"] for data in widget_messages] == ["echo_update", "custom"], widget_messages
    batch = widget_messages[1]["content"]
    assert batch["kind"] == "scanlab-batch" and len(batch["messages"]) >= 10
    # Each line chart moved its points in one frame, without a redraw; the map moved its box alone
    # (a layout shape), without drawing its heatmaps again; and what each shows is what Plotly
    # draws from the same data and layout from scratch. The texts followed. (The charts out of view
    # draw the move as they come into view.)
    dashboard.in_view()
    counts = dashboard.drawings()
    assert len(counts) == 6 and counts[5]["title"].startswith("Stability map"), counts
    assert all((c["animated"], c["redrawn"], c["relayout"]) == (1, 0, 0) for c in counts[:5]), counts
    assert (counts[5]["animated"], counts[5]["redrawn"], counts[5]["relayout"]) == (0, 0, 1), counts
    assert dashboard.redrawn_differently() == []
    after = dashboard.page.locator(".scanlab-caption:visible").all_inner_texts()
    assert len(after) == len(captions) >= 2 and all(a != b for a, b in zip(after, captions, strict=True))
    assert link.input_value() != share


def test_an_n_move_moves_the_points_and_the_axes_without_a_redraw(dashboard):
    # An N move changes each line chart's step axis and the points on it, and nothing else there:
    # Plotly relayouts the ranges and animates the points, in one task (widgets/surface.js), not
    # Plotly.react of the whole chart. What each shows is what Plotly draws from scratch.
    handle = dashboard.slider("N").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    dashboard.wait_for_trajectory(lambda now: now.shape == (DEFAULTS.N + 2,), "gained a step")
    dashboard.page.wait_for_timeout(500)
    dashboard.in_view()
    dashboard.count_drawings()
    handle.press("ArrowRight")
    dashboard.wait_for_trajectory(lambda now: now.shape == (DEFAULTS.N + 3,), "gained a step")
    dashboard.page.wait_for_timeout(500)
    dashboard.in_view()
    counts = dashboard.drawings()
    assert len(counts) == 6 and counts[5]["title"].startswith("Stability map"), counts
    # A relayout of the ranges draws the traces again on the new axes (`plotly_afterplot`).
    assert all((c["animated"], c["redrawn"], c["relayout"]) == (1, 1, 1) for c in counts[:5]), counts
    assert dashboard.redrawn_differently() == []


def test_the_page_asks_nothing_of_other_hosts(page_to_read):
    dashboard = page_to_read()
    # Voila's lab template linked Font Awesome from a CDN, stylesheets that hold the first paint until
    # they load or fail (serving/jupyter/voila/templates/scanlab drops them; Voila's scripts carry it).
    host = urllib.parse.urlsplit(dashboard.page.url).netloc
    others = [url for url in dashboard.requests if urllib.parse.urlsplit(url).netloc not in (host, "")]
    assert others == [] and len(dashboard.requests) > 10
    loaded = dashboard.page.evaluate(
        """async () => { await document.fonts.ready;
            return document.fonts.check('900 16px "Font Awesome 5 Free"'); }"""
    )
    assert loaded  # the buttons' icons, from Voila's own scripts


def test_keyboard_moves_lr_n_and_b(dashboard):
    before, line, layers = dashboard.trajectory(), dashboard.drawn("Trajectory")["line"], dashboard.layers()
    assert any(heatmaps >= 2 for _, heatmaps in layers), layers  # the map's outcome, both panels
    handle = dashboard.slider("lr").locator(".noUi-handle")
    handle.focus()
    messages = dashboard.sent('"comm_msg"')
    dashboard.count_drawings()
    for _ in range(5):
        handle.press("ArrowRight")
    changed = dashboard.wait_for_trajectory_change(before)
    assert changed.shape == before.shape
    # The line moved, Plotly drew what was sent, and every value lies inside the fixed y range.
    dashboard.page.wait_for_timeout(500)  # the last of the five moves
    drawn = dashboard.drawn("Trajectory")
    assert drawn["line"] != line
    values = np.asarray(drawn["drawn"], dtype=np.float64)
    np.testing.assert_array_equal(values, np.asarray(drawn["data"], dtype=np.float64))
    values = values[np.isfinite(values)]
    low, high = drawn["range"]
    assert low <= values.min() and values.max() <= high
    # No chart lost its heatmaps or all its lines; every chart drew, as Plotly draws the same data
    # and layout from scratch.
    dashboard.in_view()  # the charts out of view draw the moves as they come into view
    after = dashboard.layers()
    assert [h for _, h in after] == [h for _, h in layers] and all(n > 0 for n, _ in after), (layers, after)
    counts = dashboard.drawings()
    assert len(counts) == 6 and all(c["animated"] + c["redrawn"] + c["relayout"] >= 1 for c in counts), counts
    assert dashboard.redrawn_differently() == []
    # The charts send nothing back: their figures are the kernel's (widgets.surface.Surface).
    assert dashboard.sent('"plot_layout"') == dashboard.sent('"revision"') == 0
    # The moves went over the watched socket. Not one message per press: while a change waits for
    # the kernel, ipywidgets' page holds the next ones and sends the latest (4 for 5 presses, seen);
    # the first press goes at once and the last one after it.
    assert dashboard.sent('"comm_msg"') >= messages + 2

    handle = dashboard.slider("N").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowLeft")
    changed = dashboard.wait_for_trajectory(
        lambda now: now.shape == (DEFAULTS.N,), "lost a step"
    )  # N - 1 steps

    handle = dashboard.slider("B").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    dashboard.wait_for_trajectory_change(changed)


def test_typing_in_the_readouts(dashboard):
    readout = dashboard.slider("N").locator(".widget-readout")
    readout.fill("40")
    readout.press("Enter")
    dashboard.wait_for_trajectory(lambda now: now.shape == (41,), "showed 40 steps")
    readout = dashboard.slider("B").locator(".widget-readout")
    readout.fill("3")
    readout.press("Enter")
    expected = expected_weights(DEFAULTS._replace(N=40, B=3))
    dashboard.wait_for_trajectory(lambda now: np.allclose(now, expected, rtol=1e-6), "showed B = 3")
    # The map was recomputed for N = 40 and its box moved to B = 3: what Chromium drew is what core
    # computes.
    settings = DEFAULTS._replace(N=40, B=3)
    x, y = batches_for(settings._replace(N=RANGES["N"][1], B=RANGES["B"][1]))
    padded = core.HistoryEngine(RANGES["N"][1], RANGES["B"][1]).pad(x, y)
    want = core.stability_map(padded, MAP_LRS, MAP_BATCH_SIZES, w0=settings.w0, n=settings.N)
    dashboard.page.get_by_text("Stability map for N = 40").wait_for(timeout=20_000)
    dashboard.page.wait_for_timeout(500)  # the frame after the status
    _assert_map_drawn(dashboard.stability_map(), want, settings.lr, np.log2(3))


def _assert_map_drawn(drawn: dict, want, lr: float, row: float) -> None:
    """The map Chromium drew (`Dashboard.stability_map`) is core's `want`, its box at `lr` and at
    the row drawn at `row` (log2 B, or the momentum) on both panels."""
    for panel, loss in enumerate(("sum", "mean")):
        np.testing.assert_allclose(
            np.asarray(drawn["z"][panel], dtype=np.float64),
            np.clip(want.log10_error[loss], -6, 3),
            rtol=1e-12,
            equal_nan=True,
        )
        box_x, box_y = (np.asarray(v, dtype=np.float64) for v in drawn["box"][panel])
        np.testing.assert_allclose(10 ** ((box_x.min() + box_x.max()) / 2), lr, rtol=1e-9)
        np.testing.assert_allclose((box_y.min() + box_y.max()) / 2, row, atol=1e-9)


def test_clicking_the_stability_map_sets_lr_and_b(dashboard):
    column, row = 10, 20  # lr = 6.2e-4, B = 56: a stable run, drawn in full
    lr, b = float(f"{MAP_LRS[column]:.6g}"), int(MAP_BATCH_SIZES[row])
    # The cell says what it is (its lr and B, from the trace's customdata) before it is clicked.
    words = dashboard.hover_map(float(np.log10(MAP_LRS[column])), float(np.log2(MAP_BATCH_SIZES[row])))
    assert f"lr = {MAP_LRS[column]:.3g}, B = {b}" in words and "log10 |w − w*| = " in words, words
    assert "diverged" not in words, words  # a gap of the diverged cells' overlay says nothing
    far = dashboard.hover_map(float(np.log10(MAP_LRS[-1])), float(np.log2(MAP_BATCH_SIZES[-1])))
    assert f"lr = {MAP_LRS[-1]:.3g}, B = {MAP_BATCH_SIZES[-1]}" in far and "diverged" in far, far
    assert "log10" not in far, far
    dashboard.click_map(float(np.log10(MAP_LRS[column])), float(np.log2(MAP_BATCH_SIZES[row])))
    expected = expected_weights(DEFAULTS._replace(lr=lr, B=b))
    dashboard.wait_for_trajectory(
        lambda now: now.shape == expected.shape and np.allclose(now, expected, rtol=1e-6, equal_nan=True),
        f"showed the clicked cell lr = {lr}, B = {b}",
    )
    assert float(dashboard.slider("B").locator(".noUi-handle").get_attribute("aria-valuenow")) == b


# The stability map's figures in page order: laid out or hidden, and how often each was drawn.
MAP_FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .filter((gd) => String(gd.layout.title.text || '').startsWith('Stability map'))
    .map((gd) => ({shown: gd.clientWidth > 0, draws: gd.dataset.draws, title: gd.layout.title.text}))"""


def test_the_lr_x_momentum_map_is_cores_and_a_click_sets_lr_and_momentum(browser, dashboard_url):
    # Picked with its toggle as a visitor does: the map drawn is core.momentum_map's at the link's B,
    # its box at the current lr and momentum; a click on a cell takes lr, momentum and the momentum
    # optimizer (the runs the map shows), as the share link says.
    page = Dashboard(browser, dashboard_url + "?N=40&B=8")
    widths = page.page.evaluate(
        """() => [...document.querySelectorAll('.widget-toggle-button')]
            .filter(b => b.textContent.startsWith('lr ×')).map(b => [b.scrollWidth, b.clientWidth])"""
    )
    assert len(widths) == 2 and all(needs <= has + 1 for needs, has in widths), widths  # names in full
    page.page.get_by_role("button", name="lr × momentum").click()
    status = f"Stability map, lr × momentum at B = 8, for N = 40, w0 = {DEFAULTS.w0:.4g}: up to date."
    page.page.get_by_text(status).wait_for(timeout=20_000)
    page.page.wait_for_timeout(500)  # the frame after the status
    settings = DEFAULTS._replace(N=40, B=8)
    x, y = batches_for(settings._replace(N=RANGES["N"][1], B=RANGES["B"][1]))
    padded = core.HistoryEngine(RANGES["N"][1], RANGES["B"][1]).pad(x, y)
    want = core.momentum_map(padded, MAP_LRS, MAP_MOMENTA, batch_size=8, w0=settings.w0, n=settings.N)
    _assert_map_drawn(page.stability_map(), want, settings.lr, settings.momentum)
    # Back to lr x B and to lr x momentum again: each kind keeps its figure, the other one hidden,
    # and a switch to a map drawn already has Plotly draw nothing anew (surface.js's data-draws).
    page.page.get_by_role("button", name="lr × B").click()
    page.page.get_by_text(f"Stability map for N = 40, w0 = {DEFAULTS.w0:.4g}: up to date.").wait_for(
        timeout=20_000
    )
    page.page.wait_for_timeout(500)
    before = page.page.evaluate(MAP_FIGURES)
    page.page.get_by_role("button", name="lr × momentum").click()
    page.page.get_by_text(status).wait_for(timeout=20_000)
    page.page.wait_for_timeout(500)
    after = page.page.evaluate(MAP_FIGURES)
    assert [f["shown"] for f in before] == [True, False] and [f["shown"] for f in after] == [False, True]
    assert [f["draws"] for f in after] == [f["draws"] for f in before], (before, after)
    _assert_map_drawn(page.stability_map(), want, settings.lr, settings.momentum)
    column, row = 20, 10  # lr = 3.7e-3, momentum = 0.3
    lr, momentum = float(f"{MAP_LRS[column]:.6g}"), float(MAP_MOMENTA[row])
    words = page.hover_map(float(np.log10(MAP_LRS[column])), momentum)
    assert f"lr = {MAP_LRS[column]:.3g}, momentum = {momentum:.2g}" in words, words
    page.click_map(float(np.log10(MAP_LRS[column])), momentum)
    query = to_query(settings._replace(lr=lr, optimizer="momentum", momentum=momentum, map="momentum"))
    page.page.wait_for_function(
        """(query) => [...document.querySelectorAll('.widget-text')]
            .filter(box => box.querySelector('label')?.textContent === 'share link')
            .some(box => box.querySelector('input').value.endsWith('?' + query))""",
        arg=query,
        timeout=20_000,
    )
    handle = page.slider("momentum").locator(".noUi-handle")
    assert float(handle.get_attribute("aria-valuenow")) == momentum
    assert page.errors == [], page.errors
    page.close()


@pytest.mark.parametrize(
    "path", ["voila/render/exercise.ipynb", "exercise.ipynb", "voila/files/exercise.ipynb"]
)
def test_the_server_never_serves_the_exercise(dashboard_url, path):
    # exercise.ipynb runs a learner's code: it is for JupyterLab, never for the dashboard's visitors.
    try:
        with urllib.request.urlopen(dashboard_url + path, timeout=30) as response:
            status, body = response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        status, body = error.code, ""
    assert status in (403, 404), (status, body[:200])
    assert "scan_training_step" not in body


@pytest.fixture(scope="module")
def presets_page(browser, dashboard_url):
    """One page for every preset in turn: a preset sets every control, so what the page drew before
    cannot leak into the run it draws (the landscape's kept frame can, and is not read here)."""
    page = Dashboard(browser, dashboard_url)
    yield page
    page.close()


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset(presets_page, preset):
    dashboard = presets_page
    label, settings = PRESETS[preset]
    dashboard.page.get_by_role("button", name=label, exact=True).click()
    expected = expected_weights(settings)
    after = dashboard.wait_for_trajectory(
        lambda now: now.shape == expected.shape and np.allclose(now[: 1 + 10], expected[: 1 + 10], rtol=1e-6),
        f"showed the {label} preset",
    )
    finite = np.isfinite(after)
    np.testing.assert_allclose(after[finite], expected[finite], rtol=1e-6)
    if preset == "worked-example":
        np.testing.assert_allclose(after, [0.0, 0.4, 0.64], rtol=1e-6)
    if preset == "diverging":
        assert "diverged at step" in dashboard.page.inner_text("body")
    assert dashboard.errors == [], dashboard.errors


def test_shared_link_sets_the_controls(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url + "?lr=0.05&N=30&B=8&loss=both&N=oops&w0=<b>x</b>")
    settings = DEFAULTS._replace(
        lr=0.05, N=DEFAULTS.N, B=8, loss="both"
    )  # N=oops: the last N wins, and is bad
    np.testing.assert_allclose(page.trajectory(), expected_weights(settings), rtol=1e-6)
    assert page.slider("lr").locator(".widget-readout").inner_text().startswith("0.05")
    assert page.slider("B").locator(".widget-readout").inner_text() == "8"
    body = page.page.inner_text("body")
    assert "'oops' is not a number" in body and "<b>x</b>" in body  # shown as text, not as markup
    assert page.page.locator(".scanlab-notice b").count() == 0
    share_box = page.page.locator(".widget-text").filter(
        has=page.page.locator("label", has_text="share link")
    )
    share = share_box.locator("input").input_value()
    assert share.endswith("?lr=0.05&N=100&B=8&loss=both")
    assert page.errors == [], page.errors
    page.close()


def test_copy_as_script_gives_the_script_of_the_current_run(browser, dashboard_url):
    page = Dashboard(
        browser, dashboard_url + "?lr=0.02&N=50", permissions=["clipboard-read", "clipboard-write"]
    )
    page.page.get_by_role("button", name="Copy as script").click()
    page.page.wait_for_function(
        "() => [...document.querySelectorAll('textarea')].some(t => t.value.includes('A ScanLab run'))",
        timeout=10_000,
    )
    script = page.page.locator("textarea").first.input_value()
    assert "LR = 0.02" in script and "N = 50" in script and "?lr=0.02&N=50&B=16&loss=sum" in script
    page.page.get_by_role("button", name="Copy to clipboard").click()
    page.page.get_by_role("button", name="Copied").wait_for(timeout=10_000)
    assert page.page.evaluate("navigator.clipboard.readText()") == script
    link = page.page.get_by_role("link", name="Download scanlab_run.py")
    with page.page.expect_download() as download:
        link.click()
    assert Path(download.value.path()).read_text() == script
    assert page.errors == [], page.errors
    page.close()


def test_a_chart_groups_code_opens_highlighted(dashboard):
    title = dashboard.page.get_by_text("Code: how the explorer makes it fast (stability_map", exact=False)
    title.scroll_into_view_if_needed()
    title.click()
    code = dashboard.page.locator(".scanlab-code").filter(has_text="def stability_map(")
    code.first.wait_for(timeout=10_000)
    assert code.first.locator("span[style]").count() > 50  # highlighted


def test_under_the_hood_panels_open_and_answer(dashboard):
    page = dashboard.page
    page.get_by_text("Loop-invariant inputs: duplicate, carry or closure").click()
    page.get_by_text("total = 20, per step = [0 2 4 6 8]").first.wait_for(timeout=60_000)
    assert page.get_by_text("total = 20, per step = [0 2 4 6 8]").count() == 3
    page.get_by_text("Pytree parameters and Optax optimizers").click()
    page.get_by_text("After 200 steps of sgd").wait_for(timeout=60_000)
    page.get_by_text(re.compile("^Python loop vs lax.scan vs unrolled jit")).click()
    page.wait_for_function(  # each chart drawn at its box's width (widgets/surface.js)
        """() => [...document.querySelectorAll('.js-plotly-plot')]
            .filter(gd => gd._fullLayout && Math.abs(gd._fullLayout.width - gd.clientWidth) <= 1)
            .length >= 12""",
        timeout=30_000,
        polling=200,
    )
    # Their charts kept their margins as they were drawn (widgets.hood.HOOD_MARGIN: the log axes' tick
    # labels and the steps' last tick need more than the explorer's charts): Plotly widened the left
    # and right margins of five of the six before, each drawn a second time as its panel opened.
    assert page.evaluate(WIDENED) == []
    page.get_by_role("button", name="adam", exact=True).click()
    page.get_by_text("After 200 steps of adam").wait_for(timeout=10_000)
    steps = page.locator(".widget-slider").filter(has=page.locator("label", has_text=re.compile("^steps$")))
    readout = steps.locator(".widget-readout")
    start = len(dashboard.frames_received)
    readout.fill("50")
    readout.press("Enter")
    page.get_by_text("After 50 steps of adam").wait_for(timeout=10_000)
    loss = dashboard.trace_y("Minibatch loss before each step")
    assert len(loss) == 50 and all(v > 0 for v in loss)
    # The panel's charts and status came as one batch (the explorer's), after the value's echo.
    page.wait_for_timeout(500)
    widget_messages = dashboard.widget_messages(since=start)
    assert [data["method"] for data in widget_messages] == ["echo_update", "custom"], widget_messages
    assert widget_messages[1]["content"]["kind"] == "scanlab-batch"
    # The panel's charts, drawn before they were on the page, took their boxes' width without telling
    # the kernel (widgets/surface.js): a chart sends nothing back but clicks.
    assert dashboard.sent('"plot_layout"') == 0
    widths = page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')]"
        ".map(gd => [gd._fullLayout.width, gd.clientWidth])"
    )
    assert len(widths) >= 8 and all(abs(drawn - box) <= 1 for drawn, box in widths), widths


HOSTILE_LINKS = [
    "?lr=<script>window.__pwned=1</script>&N=1e400",
    '?w0="><img src=x onerror="window.__pwned=1">&seed=%D9%A3&B=-inf',
    "?view=projector&hide=seed,<img src=x onerror=window.__pwned=1>",
    "?" + "x" * 5000 + "=1",
    "?lr=nan&loss=both&loss=mean&kind=%00&preset=%3Cb%3E",
    "?preset=diverging&N=1000&B=512&lr=10&noise=2",  # valid, and as extreme as the controls go
]


@pytest.mark.parametrize("link", HOSTILE_LINKS)
def test_a_hostile_link_renders_with_a_notice_and_injects_nothing(browser, dashboard_url, link):
    page = Dashboard(browser, dashboard_url + link)
    assert page.page.evaluate("window.__pwned") is None
    assert page.page.locator("img[src=x]").count() == 0
    notice = page.page.locator(".scanlab-words .scanlab-notice").inner_text()  # a link's notice
    assert ("diverged at step" in page.page.inner_text("body")) if "preset=diverging" in link else notice
    for title in ("Trajectory", "Loss per step"):  # drawn, with numbers in them
        values = np.asarray(page.trace_y(title), dtype=np.float64)
        assert np.isfinite(values).any(), title
    assert page.errors == [], page.errors
    page.close()


CHART_LAYOUT = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
    const box = (selector) => {
        const element = gd.querySelector(selector);
        if (!element) return null;
        const r = element.getBoundingClientRect();
        return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
    };
    return {
        title: gd.layout.title.text.split('<')[0], drawn: gd._fullLayout.width, place: gd.clientWidth,
        chart: box('.main-svg'), xtitle: box('.g-xtitle'), legend: box('.legend'), titled: box('.gtitle'),
        plot: box('.nsewdrag'),
    };
})"""


# The stability map's panels' widths, its colour bar's box, its x axis titles' bottoms, its own bottom.
MAP_PARTS = """() => {
    const gd = scanlabChart('Stability map');
    const box = (e) => { const r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom }; };
    return { panels: [gd._fullLayout.xaxis._length, gd._fullLayout.xaxis2._length],
             bar: box(gd.querySelector('.colorbar')),
             titles: [...gd.querySelectorAll('.g-xtitle, .g-x2title')].map(e => box(e).bottom),
             bottom: gd.getBoundingClientRect().bottom };
}"""


# Each chart's current-step marker: the elements between it and its chart's SVG that clip it, its
# display, and where it ends against the plot area's right edge.
STEP_MARKERS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(gd => {
    const index = gd._fullData.findIndex(t => t.name === 'current step' && t.visible === true);
    const group = [...gd.querySelectorAll('.scatterlayer .trace')]
        .find(g => g.__data__ && g.__data__[0].trace.index === index);
    const marker = index >= 0 && group && group.querySelector('path.point');
    if (!marker) return [];
    const clipped = [];
    for (let e = marker; e && e.tagName !== 'svg'; e = e.parentElement) {
        if (e.getAttribute('clip-path')) clipped.push(e.getAttribute('class'));
    }
    const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
    return [{ title: gd.layout.title.text.split('<')[0], clipped, display: marker.getAttribute('display'),
              right: marker.getBoundingClientRect().right, plot_right: plot.right }];
})"""


def _assert_charts_fit(page: Page, projector: bool = False, untitled=()) -> list[dict]:
    """Every chart drawn within the width of its place on the page, inside the window, with its
    title inside it (Plotly does not wrap titles) and above its plot area, except the charts named in
    `untitled`, and in the projector view with its legend below its x axis's title (the larger text
    overlapped them, as the map's title of four lines overlapped its panels)."""
    charts = page.evaluate(CHART_LAYOUT)
    window = page.evaluate("() => document.documentElement.clientWidth")
    assert len(charts) == 6
    for chart in charts:
        assert chart["drawn"] <= chart["place"] + 1 and chart["chart"]["right"] <= window + 1, chart
        if not chart["title"].startswith(untitled):
            assert chart["titled"]["right"] <= chart["chart"]["right"] + 1, chart
            assert chart["titled"]["bottom"] <= chart["plot"]["top"] + 1, chart
        if projector and chart["legend"] and chart["xtitle"]:
            assert chart["xtitle"]["bottom"] <= chart["legend"]["top"] + 1, chart
    return charts


def test_charts_fit_the_window_and_follow_it(browser, dashboard_url):
    # Each chart takes the width of its place (widgets.figures.side_by_side): before, they were 600
    # and 1200 px wide whatever the window, and a projector at 1024 px cut the map's colour bar off.
    page = Dashboard(browser, dashboard_url + "?view=projector", viewport=(1024, 768))
    charts = _assert_charts_fit(page.page, projector=True)
    tops = [chart["chart"]["top"] for chart in charts]
    assert len(set(tops)) == 6  # the projector's charts, one to a row at 1024 px (BESIDE_PROJECTOR)
    truncated = page.page.evaluate(
        """() => [...document.querySelectorAll('.scanlab-controls button')]
            .filter(b => b.offsetParent !== null && b.scrollWidth > b.clientWidth + 1)
            .map(b => b.textContent)"""
    )
    assert truncated == []
    page.page.set_viewport_size({"width": 390, "height": 844})  # a phone: the charts follow the window
    page.page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].every(gd => gd._fullLayout.width <= 390)",
        timeout=20_000,
    )
    _assert_charts_fit(page.page, projector=True, untitled=("",))  # the projector's titles: not for a phone
    # The current step (step N) lies on the x axis's last value, which the axis pads by less than a
    # marker's radius at this width: each marker is drawn whole, no clip between it and its chart.
    markers = page.page.evaluate(STEP_MARKERS)
    # (At step N the loss and per-step factor charts have no current point: three markers.)
    assert len(markers) == 3 and all(m["clipped"] == [] and m["display"] is None for m in markers), markers
    trajectory = next(m for m in markers if m["title"].startswith("Trajectory"))
    assert trajectory["right"] > trajectory["plot_right"], trajectory  # this one reaches past the axes
    # The map's colour bar lies under its panels' axis titles, so the panels share the phone's width
    # (beside them, the bar and its title took 136 px of it in the plain view and more here).
    stability = page.page.evaluate(MAP_PARTS)
    assert min(stability["panels"]) >= 100, stability
    assert (
        stability["bar"]["top"] >= max(stability["titles"])
        and stability["bar"]["bottom"] <= stability["bottom"]
    ), stability
    assert page.errors == [], page.errors
    page.close()
    # A phone in the plain view: every title fits, the map's too (its lines were up to 489 px long),
    # with the longest w0 the slider gives.
    page = Dashboard(browser, dashboard_url + "?w0=-9.5", viewport=(390, 844), is_mobile=True)
    _assert_charts_fit(page.page)
    assert page.errors == [], page.errors
    page.close()
    # The lr x momentum map's title too, with the largest N and B.
    query = "?w0=-9.5&N=1000&B=512&map=momentum"
    page = Dashboard(browser, dashboard_url + query, viewport=(390, 844), is_mobile=True)
    page.page.get_by_text("lr × momentum at B = 512, for N = 1000, w0 = -9.5: up to date.").wait_for(
        timeout=20_000
    )
    _assert_charts_fit(page.page)
    assert page.errors == [], page.errors
    page.close()


def test_charts_stand_two_to_a_row_on_a_wide_window(page_to_read):
    dashboard = page_to_read()
    charts = {chart["title"].split(":")[0]: chart for chart in _assert_charts_fit(dashboard.page)}
    top = {title: round(chart["chart"]["top"]) for title, chart in charts.items()}
    assert top["Trajectory"] == top["Loss per step"]
    assert top["Loss landscape"] != top["Trajectory"]
    wide = [charts["Per-step factor"], charts["Stability map"]]
    assert all(chart["drawn"] > 1.8 * charts["Trajectory"]["drawn"] for chart in wide)
    # Plotly kept every chart's margins (widgets.figures.MARGIN, LEGEND_ROW): a margin it widens for
    # a legend, the tick labels or the colour bar costs the chart a second drawing at first paint.
    widened = dashboard.page.evaluate(WIDENED)
    assert widened == [], widened
    # Side by side, the x axes are level, legend or not.
    assert round(charts["Trajectory"]["xtitle"]["top"]) == round(charts["Loss per step"]["xtitle"]["top"])


# With the chart titled `title` scrolled to the middle of the window: whether the lr, N and B
# sliders' handles and the chart's plot area can each be reached there (in the window, and nothing
# drawn over their middles).
REACH = """(title) => {
    const gd = scanlabChart(title);
    gd.scrollIntoView({block: 'center'});
    const reachable = (element) => {
        const r = element.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
        return x >= 0 && x <= innerWidth && y >= 0 && y <= innerHeight
            && element.contains(document.elementFromPoint(x, y));
    };
    const handle = (name) => [...document.querySelectorAll('.widget-slider')]
        .find(s => s.querySelector('label') && s.querySelector('label').innerText === name)
        .querySelector('.noUi-handle');
    return Object.fromEntries(['lr', 'N', 'B'].map(name => [name, reachable(handle(name))])
        .concat([['chart', reachable(gd.querySelector('.nsewdrag'))]]));
}"""

# How much of each chart's height is in the window as the page opens, by title.
IN_VIEW = """() => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')].map(gd => {
    const r = gd.getBoundingClientRect();
    const inside = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
    return [gd.layout.title.text.split(/[:<]/)[0], inside / r.height];
}))"""


@pytest.mark.parametrize(
    "query, viewport", [("", (1440, 900)), ("?view=projector", (1024, 768)), ("", (390, 844))]
)
def test_lr_n_and_b_stay_in_reach_beside_every_chart(page_to_read, query, viewport):
    # The dashboard's layout (serving's page template): the controls a column beside the charts, or
    # a sheet at the bottom of a phone. A sticky panel inside its notebook cell scrolled away.
    page = page_to_read(query, viewport)
    titles = page.page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => gd.layout.title.text)"
    )
    for title in titles:
        reach = page.page.evaluate(REACH, title.split("<")[0])
        assert all(reach.values()), (title, viewport, reach)


def test_the_first_screen_holds_the_controls_and_charts(page_to_read):
    page = page_to_read("", (1440, 900))
    shown = page.page.evaluate(IN_VIEW)
    assert shown["Trajectory"] == 1 and shown["Loss per step"] == 1, shown
    assert sum(part >= 0.7 for part in shown.values()) >= 3, shown  # the third: its title and most of it
    page = page_to_read("?view=projector", (1024, 768))
    assert page.page.evaluate(IN_VIEW)["Trajectory"] == 1
    assert page.page.evaluate(REACH, "Trajectory")["lr"]


def test_a_phone_opens_and_closes_the_rest_of_the_controls(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url, viewport=(390, 844), is_mobile=True)
    toggle = page.page.locator(".scanlab-sheet-toggle")
    w0 = page.slider("w0")
    assert page.slider("lr").is_visible() and not w0.is_visible()
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert w0.is_visible() and page.page.get_by_text("Presets:").is_visible()
    assert toggle.get_attribute("aria-expanded") == "true"
    toggle.click()
    assert not w0.is_visible() and page.slider("lr").is_visible()
    assert page.errors == [], page.errors
    page.close()


# Each chart whose margins Plotly widened (its drawn sizes against its layout's), with those sides.
WIDENED = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => [
    gd.layout.title.text.split(/[:<]/)[0],
    ['l', 'r', 't', 'b'].filter(side => gd._fullLayout._size[side] !== gd._fullLayout.margin[side])])
    .filter(([, sides]) => sides.length)"""


TICKS = """() => Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')].map(gd => [
    gd.layout.title.text.split(/[:<]/)[0],
    [gd.querySelectorAll('.xtick').length, gd.querySelectorAll('.ytick').length]]))"""


def _ticks_settle(page, done, what: str) -> dict:
    deadline = time.monotonic() + 20
    while not done(ticks := page.evaluate(TICKS)):
        assert time.monotonic() < deadline, f"{what}: {ticks}"
        time.sleep(0.2)
    return ticks


def test_tick_labels_follow_the_axes_both_ways(browser, dashboard_url):
    # A dtick or tickvals sent in a Plotly.update sets the tick mode it implies, which stays when
    # they are unset: a step axis that went from 1 step to 1000 then drew 1001 labels, and the loss
    # chart's log axis none once a run diverged (widgets.figures.Chart.ticks sends the mode too).
    page = Dashboard(browser, dashboard_url + "?lr=10&N=100")
    steps = ("Trajectory", "Loss per step", "Same lr, sum and mean")
    n = page.slider("N").locator(".noUi-handle")
    n.focus()
    n.press("Home")  # N = 1: labels at each step, in an update
    _ticks_settle(page.page, lambda t: all(1 <= t[title][0] <= 3 for title in steps), "N = 1")
    n.press("End")  # N = 1000
    ticks = _ticks_settle(page.page, lambda t: all(3 <= t[title][0] <= 12 for title in steps), "N = 1000")
    assert 3 <= ticks["Per-step factor"][0] <= 12, ticks
    lr = page.slider("lr").locator(".noUi-handle")
    lr.focus()
    lr.press("Home")  # lr = 1e-4: the loss axis spans under 3 decades, labelled at 1, 2 and 5
    _ticks_settle(page.page, lambda t: t["Loss per step"][1] >= 3, "lr 1e-4")
    lr.press("End")  # lr = 10: about 40 decades, Plotly's own labels
    loss = "Loss per step"
    ticks = _ticks_settle(page.page, lambda t: 3 <= t[loss][1] <= 15, "lr = 10")
    assert page.errors == [], page.errors
    page.close()


def test_projector_view_and_hidden_controls_round_trip(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url + "?lr=0.05&view=projector&hide=seed,presets")
    font = page.page.evaluate("() => scanlabChart('Trajectory')._fullLayout.font.size")
    assert font == 18
    assert page.page.evaluate(MARKDOWN_FONT) == "18px"  # the notebook's text, larger too
    assert not page.page.get_by_text("Presets:").is_visible()
    assert not page.page.locator(".widget-inline-hbox").filter(has_text="seed").first.is_visible()
    assert page.slider("lr").is_visible()
    share = page.page.locator(".widget-text").filter(has=page.page.locator("label", has_text="share link"))
    # The link carries the view when asked (issue 39): by default it reproduces the run alone.
    assert share.locator("input").input_value().endswith("?lr=0.05&N=100&B=16&loss=sum")
    page.page.get_by_role("checkbox", name="with this view").check()
    page.page.wait_for_function(
        "(end) => document.querySelector('.scanlab-share input[type=text]').value.endsWith(end)",
        arg="?lr=0.05&N=100&B=16&loss=sum&view=projector&hide=seed,presets",
        timeout=10_000,
    )
    assert page.errors == [], page.errors
    page.close()


def test_export_csv_downloads_the_run(dashboard):
    dashboard.page.get_by_role("button", name="Export CSV").click()
    link = dashboard.page.get_by_role("link", name=re.compile(r"Download scanlab_.*\.csv"))
    with dashboard.page.expect_download() as download:
        link.click()
    rows = Path(download.value.path()).read_text().splitlines()
    assert rows[0] == "run,loss_mode,step,w,loss,gradient,lr" and len(rows) == 1 + 2 * (DEFAULTS.N + 1)
    expected = expected_weights(DEFAULTS)
    np.testing.assert_allclose(
        [float(r.split(",")[3]) for r in rows[1 : DEFAULTS.N + 2]], expected, rtol=1e-6
    )


def test_markers_outside_the_axes_are_hidden_as_plotly_hides_them(dashboard):
    # The Diverging preset leaves the landscape's frame at step 4 (widgets.model.framed_weights): the
    # current-step marker is then not sent (the path ends at the edge, an arrow says where), and the
    # front end, which moves markers itself (markersPlaced), must take it away and bring it back
    # as Plotly draws the chart anew. (Until the frame held the bowl, the marker of step 25 stood
    # outside the axes, within a band where it was still sent, and had to be hidden.)
    dashboard.page.get_by_role("button", name="Diverging").click()
    dashboard.page.wait_for_function(
        "() => (scanlabChart('Loss landscape').layout.annotations || []).length === 1", timeout=20_000
    )
    readout = dashboard.slider("step").locator(".widget-readout")
    where = """() => {
        const gd = scanlabChart('Loss landscape');
        const trace = gd.data.find(d => d.name === 'current step');
        return trace && trace.x.length ? Number(trace.x[0]) : null;
    }"""
    shown = []
    # Step 3 first: at step N (60) the marker is off the chart, so its return is drawn by Plotly;
    # the next two steps move it (markersPlaced), off the chart and back.
    for step in ("3", "5", "3"):
        before = dashboard.page.evaluate(where)
        readout.fill(step)
        readout.press("Enter")
        dashboard.page.wait_for_function(f"(x) => ({where})() !== x", arg=before, timeout=20_000)
        dashboard.page.wait_for_timeout(300)
        landscape = [
            m for m in dashboard.page.evaluate(STEP_MARKERS) if m["title"].startswith("Loss landscape")
        ]
        shown.append(landscape[0]["display"] if landscape else "absent")
        assert dashboard.redrawn_differently() == [], step
    assert shown[0] is None and shown[2] is None, shown  # drawn at step 3
    assert shown[1] in ("none", "absent"), shown  # not drawn at step 5


def test_playback_keeps_every_line_drawn(dashboard):
    # The page opens at step N, where the loss and per-step factor charts have no current point (their
    # step markers are empty, and Plotly hides a trace without points). Reset and Step bring the
    # markers back and a step to N empties them again: each chart is drawn as Plotly draws it anew.
    dashboard.page.get_by_title("back to step 0").click()
    dashboard.page.get_by_title("one step of the scan").click()
    dashboard.page.wait_for_timeout(1000)
    assert dashboard.redrawn_differently() == []
    assert all(lines > 0 for lines, _ in dashboard.layers())
    step = dashboard.slider("step").locator(".noUi-handle")
    step.focus()
    step.press("End")
    dashboard.page.wait_for_timeout(1000)
    assert dashboard.redrawn_differently() == []
    assert all(lines > 0 for lines, _ in dashboard.layers())
