"""The first picture: the page Voila sends shows stills of the first screen (widgets/still.py) before
its scripts run, and the live charts take their places without moving anything; a move made as the
controls come is drawn. In Chromium, against `make run`, as tests/test_dashboard.py."""

import re

import numpy as np
import pytest

from harness.support.axe import violations
from harness.support.dashboard import chart_context, expected_weights
from widgets.settings import DEFAULTS

HELD = re.compile(r".*\.voila\.js(\?.*)?$")  # Voila's scripts

# The boxes of the stills' charts, and of the live charts that have a width, in page order.
BOXES = """(selector) => [...document.querySelectorAll(selector)].filter((e) => e.clientWidth > 0)
    .map((e) => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })"""
# The page's own style rules (the template's, the explorer's) that use :has().
HAS_RULES = """() => [...document.styleSheets].flatMap((sheet) => {
    try { return [...sheet.cssRules].map((rule) => rule.cssText); } catch { return []; }
  }).filter((text) => text.includes("scanlab") && text.includes(":has("))"""
GAPS = """() => {
    window.scanlabGaps = 0;
    const tick = () => {
      const still = document.querySelector('.scanlab-still-chart');
      const live = [...document.querySelectorAll('.scanlab-chart')].find((c) => c.clientWidth > 0);
      if (!still && !(live && live.dataset.draws)) window.scanlabGaps++;
      if (still || !live || !live.dataset.draws) requestAnimationFrame(tick);
    };
    tick();
}"""
LIVE = """() => document.querySelector('.scanlab-still') === null &&
    [...document.querySelectorAll('.scanlab-chart')].filter((c) => c.clientWidth > 0)
      .every((c) => Number(c.dataset.draws || 0) > 0) &&
    document.querySelectorAll('.scanlab-chart[data-draws]').length >= 4"""


@pytest.mark.parametrize(
    ("query", "width", "height"),
    [("", 1440, 900), ("?view=projector", 1024, 768), ("", 390, 844), ("?lr=0.09&N=60", 1440, 900)],
    ids=["1440", "projector", "phone", "diverging"],
)
def test_the_first_screen_comes_before_the_scripts_and_stays_in_place(
    browser, dashboard_url, query, width, height
):
    context = chart_context(browser, viewport={"width": width, "height": height})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    held, released = [], []  # Voila's scripts, held until the stills have been looked at
    page.route(HELD, lambda route: route.continue_() if released else held.append(route))
    try:
        page.goto(dashboard_url + query, wait_until="commit")
        page.wait_for_selector(".scanlab-still-chart svg", state="visible", timeout=60_000)
        page.wait_for_selector(".scanlab-column .scanlab-still-controls", state="attached", timeout=30_000)
        # Voila sends each cell as its kernel has run it: the first screen's second cell may come
        # after the first has been shown.
        page.wait_for_function(
            f"() => ({BOXES})('.scanlab-still-chart').length >= 4", timeout=60_000, polling=100
        )
        assert page.locator(".js-plotly-plot, .widget-slider").count() == 0
        stills = page.evaluate(BOXES, ".scanlab-still-chart")
        # The first chart is in the first screen, named for a screen reader by the kernel's sentence.
        assert stills[0][1] < height
        names = page.eval_on_selector_all(
            ".scanlab-still-chart", "(e) => e.map((c) => c.getAttribute('aria-label'))"
        )
        assert all(name and len(name) > 20 for name in names), names
        assert page.get_attribute(".scanlab-still-chart", "role") == "img"
        # The still is in the page once: the outputs that Voila's scripts render do not carry it.
        carried = page.eval_on_selector_all(
            'script[type="application/vnd.voila.cell-output+json"]',
            "(s) => s.filter((e) => e.textContent.includes('vnd.scanlab.still')).length",
        )
        assert carried == 0
        assert violations(page) == []  # the first picture is for everyone too (WCAG 2.1 A and AA)
        if "lr=0.09" in query:  # the link's run, not the default's
            assert "diverged at step" in page.inner_text(".scanlab-words")
        # From here until the live charts are drawn, every frame shows the first chart: as a still
        # or drawn live, never a blank between the two.
        page.evaluate(GAPS)
        released.append(True)
        for route in held:
            route.continue_()
        page.wait_for_function(LIVE, timeout=90_000, polling=100)
        assert page.evaluate("() => window.scanlabGaps") == 0
        # Nothing of the stills is left to restyle: a `:has()` rule on the page made every widget's
        # text change restyle about 980 elements instead of 20.
        assert page.locator(".scanlab-still, .scanlab-stilled").count() == 0
        assert page.evaluate(HAS_RULES) == []
        live = page.evaluate(BOXES, ".scanlab-chart")
        assert len(live) >= len(stills)
        np.testing.assert_allclose(np.array(live[: len(stills)]), np.array(stills), atol=1.0)
        assert errors == []
    finally:
        context.close()


def test_a_move_made_as_the_controls_come_is_drawn(browser, dashboard_url):
    context = chart_context(browser, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        page.goto(dashboard_url, wait_until="commit")
        handle = page.locator(".widget-slider").filter(has=page.locator("label", has_text=re.compile("^N$")))
        handle = handle.locator(".noUi-handle")
        handle.wait_for(state="visible", timeout=90_000)
        handle.press("ArrowRight")  # at once: the charts may not have drawn yet
        n = round(float(handle.get_attribute("aria-valuenow")))
        assert n != DEFAULTS.N
        want = expected_weights(DEFAULTS._replace(N=n))
        page.wait_for_function(
            "(n) => { const g = scanlabChart('Trajectory'); return g && g.data[0].y.length === n; }",
            arg=len(want),
            timeout=30_000,
        )
        drawn = np.asarray(page.evaluate("() => Array.from(scanlabChart('Trajectory').data[0].y)"), float)
        np.testing.assert_allclose(drawn, want, rtol=1e-6, atol=1e-6)
        assert page.locator(".scanlab-still").count() == 0
    finally:
        context.close()
