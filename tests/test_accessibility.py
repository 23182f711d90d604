"""The served dashboard for everyone (WCAG 2.1 A and AA): axe-core finds nothing on the page, in the
projector view, with every section and code panel open; the keyboard alone reaches and drives lr, a
preset and Play, with a visible focus ring. axe-core is vendored at the version the Makefile pins
(`make axe-core`); widgets/access.js supplies what ipywidgets' views leave out."""

import re
from pathlib import Path

import numpy as np
import pytest

from harness.support.axe import AXE, violations
from harness.support.dashboard import Dashboard, expected_weights
from widgets.hood import PANELS
from widgets.settings import PRESETS

ROOT = Path(__file__).resolve().parent.parent


def test_the_vendored_axe_core_is_the_pinned_one():
    pinned = re.search(r"^AXE_CORE \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert AXE.read_text()[:40].startswith(f"/*! axe v{pinned}\n")


@pytest.mark.parametrize(
    "query", ["", "?view=projector", "?preset=narrow-valley", "?kind=engel&standardize=true"]
)
def test_axe_finds_nothing(browser, dashboard_url, query):
    projector = "view=projector" in query
    page = Dashboard(browser, dashboard_url + query, viewport=(1024, 768) if projector else (1440, 900))
    assert violations(page.page) == []
    assert page.errors == [], page.errors
    page.close()


# Every chart's figure name, as a screen reader announces it (null for a chart without one).
NAMES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
    const figure = gd.closest('[role=figure]');
    return figure ? figure.getAttribute('aria-label') : null; })"""


def test_every_chart_is_a_figure_named_by_what_it_shows(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url)
    shown = page.page.evaluate(NAMES)
    assert len(shown) >= 6 and all(shown), shown
    assert any(name.startswith("Trajectory") and "final w =" in name for name in shown)
    assert any(name.startswith("Stability map for N = ") for name in shown)
    before = page.trajectory()
    readout = page.slider("lr").locator(".widget-readout")
    readout.click()
    page.page.keyboard.press("Control+A")
    page.page.keyboard.type("0.2")
    page.page.keyboard.press("Enter")
    page.wait_for_trajectory_change(before)
    page.page.wait_for_function(
        f"() => ({NAMES})().some(n => n.startsWith('Trajectory') && n.includes('diverged at step'))",
        timeout=10_000,
    )
    assert page.errors == [], page.errors
    page.close()


def test_axe_finds_nothing_with_every_section_and_code_panel_open(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url)
    for title, _ in PANELS.values():
        page.page.get_by_text(title, exact=True).click()
    page.page.get_by_text("total = 20, per step = [0 2 4 6 8]").first.wait_for(timeout=60_000)
    page.page.get_by_text("After 200 steps of sgd").wait_for(timeout=60_000)
    for header in page.page.locator(".jupyter-widget-Collapse-header", has_text=re.compile("^Code")).all():
        header.scroll_into_view_if_needed()
        header.click()
    page.page.locator(".scanlab-code").first.wait_for(timeout=10_000)
    assert violations(page.page) == []
    named = page.page.evaluate(NAMES)  # the sections' charts too, by their titles at least
    assert len(named) >= 12 and all(named), named
    assert page.errors == [], page.errors
    page.close()


def tab_to(page, describe: str, matches: str, presses: int = 80):
    """Press Tab until the focused element satisfies the JS predicate `matches` (given the element);
    return its accessible label. Fails after `presses` presses."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate(f"() => {{ const e = document.activeElement; return !!e && ({matches})(e); }}"):
            return page.evaluate("() => document.activeElement.getAttribute('aria-label')")
    raise AssertionError(f"Tab never reached {describe}")


def focus_ring(page) -> float:
    """The width in px of the focused element's outline, 0 without one."""
    return page.evaluate(
        """() => { const s = getComputedStyle(document.activeElement);
            return s.outlineStyle === 'none' ? 0 : parseFloat(s.outlineWidth); }"""
    )


def test_the_keyboard_alone_moves_lr_and_the_charts_follow(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url)
    before = page.trajectory()
    name = tab_to(page.page, "the lr slider", "e => (e.getAttribute('aria-label') || '').startsWith('lr,')")
    assert name.startswith("lr, learning rate")
    assert focus_ring(page.page) >= 2
    readout = page.slider("lr").locator(".widget-readout")
    value = readout.inner_text()
    page.page.keyboard.press("ArrowRight")
    page.wait_for_trajectory_change(before)
    assert readout.inner_text() != value
    # The handle says the value a reader sees, not a log slider's exponent.
    handle = page.slider("lr").locator(".noUi-handle")
    page.page.wait_for_function(
        "([h, r]) => h.getAttribute('aria-valuetext') === r.textContent.trim()",
        arg=[handle.element_handle(), readout.element_handle()],
        timeout=5_000,
    )
    assert page.errors == [], page.errors
    page.close()


def test_the_keyboard_alone_picks_a_preset_and_plays(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url)
    label, settings = PRESETS["oscillating"]
    tab_to(
        page.page, f"the {label} preset", f"e => e.tagName === 'BUTTON' && e.textContent.trim() === {label!r}"
    )
    assert focus_ring(page.page) >= 2
    page.page.keyboard.press("Enter")
    expected = expected_weights(settings)
    page.wait_for_trajectory(
        lambda now: now.shape == expected.shape and np.allclose(now, expected, rtol=1e-6, equal_nan=True),
        f"showed the {label} preset",
    )
    step = page.slider("step").locator(".widget-readout")
    at = step.inner_text()
    assert tab_to(page.page, "Play", "e => e.getAttribute('aria-label') === 'Play'") == "Play"
    assert focus_ring(page.page) >= 2
    page.page.keyboard.press("Enter")
    page.page.wait_for_function(
        "([r, at]) => r.textContent.trim() !== at", arg=[step.element_handle(), at], timeout=10_000
    )
    assert page.errors == [], page.errors
    page.close()


def test_a_section_opens_from_the_keyboard(browser, dashboard_url):
    page = Dashboard(browser, dashboard_url)
    title = PANELS["invariants"][0]
    tab_to(
        page.page,
        title,
        f"e => e.getAttribute('role') === 'button' && e.textContent.trim() === {title!r}",
        200,
    )
    assert page.page.evaluate("() => document.activeElement.getAttribute('aria-expanded')") == "false"
    assert focus_ring(page.page) >= 2
    page.page.keyboard.press("Enter")
    page.page.get_by_text("total = 20, per step = [0 2 4 6 8]").first.wait_for(timeout=60_000)
    header = page.page.get_by_role("button", name=title, exact=True)
    page.page.wait_for_function(
        "h => h.getAttribute('aria-expanded') === 'true'", arg=header.element_handle(), timeout=5_000
    )
    page.close()
