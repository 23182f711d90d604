"""Charts draw what is in view (widgets/surface.js): every chart draws once when the page shows it;
after that a change that comes while a chart's box is scrolled out of view is held, not drawn
(Plotly is not called for it), and drawn when the box comes into view, the newest state, equal to
what the page's kernel computed (harness.pages). Meanwhile the page says what each chart holds
(harness/page_state.js reads a held chart's state), and nothing waits on a held chart
(data-pending, which benchmarks.browser waits on, is for changes drawn without a scroll).
"""

from __future__ import annotations

import asyncio

import pytest

from harness.pages import PAGE_STATE, differences, expected_charts, page_settings, settled
from harness.support.visits import SETTLE_S, charts_shown, type_value
from widgets.model import Model
from widgets.settings import DEFAULTS


@pytest.fixture
def url(dashboard_url):
    return dashboard_url


VIEWPORT = {"width": 1280, "height": 720}
MARGIN_PX = 200  # widgets/surface.js's MARGIN: a box that near the window draws

# Each chart in page order: its title, where its box is against the window, how often Plotly drew
# a change in it, and whether it holds one (and is waited on).
CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd) => {
    const box = gd.getBoundingClientRect();
    return {title: String(((gd.layout || {}).title || {}).text || '').split('<')[0],
            top: box.top, bottom: box.bottom, height: innerHeight,
            draws: Number(gd.dataset.draws || 0), held: gd.dataset.held !== undefined,
            pending: gd.dataset.pending !== undefined};
})"""


def where(chart: dict) -> str:
    """Where a chart is: "below" (its box more than the margin beyond the window's bottom), "shown"
    (within the window and the margin), or "edge" (within 20 px of the margin's edge: either)."""
    beyond = chart["top"] - (chart["height"] + MARGIN_PX)
    return "below" if beyond > 20 else "shown" if beyond < -20 and chart["bottom"] > 0 else "edge"


def test_charts_out_of_view_hold_a_move_and_draw_it_when_scrolled_to(url, visit):
    model = Model()
    model.compute(DEFAULTS)

    async def scenario(browser):
        context = await browser.new_context(viewport=VIEWPORT)
        page = await context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(url, timeout=120_000)
        await charts_shown(page)
        wrong, _ = await settled(page, model, lambda s: True, SETTLE_S)  # the page's first run
        assert wrong == [], wrong
        await page.wait_for_function(
            "() => [...document.querySelectorAll('.js-plotly-plot')]"
            ".every((gd) => gd.dataset.draws >= 1 && gd.dataset.pending === undefined)",
            timeout=30_000,
        )
        before = await page.evaluate(CHARTS)
        below = [i for i, chart in enumerate(before) if where(chart) == "below"]
        shown = [i for i, chart in enumerate(before) if where(chart) == "shown"]
        titles = [chart["title"] for chart in before]
        assert any(titles[i].startswith("Stability map") for i in below), before
        assert shown and any(titles[i].startswith("Trajectory") for i in shown), before

        # A move that changes every chart: N (a new run, new axes, a new stability map).
        await type_value(page, "N", "60")
        wrong, settings = await settled(page, model, lambda s: s.N == 60, SETTLE_S)
        assert wrong == [], wrong  # what each chart holds is the kernel's run, drawn or not
        await asyncio.sleep(1.0)  # the map from the kernel's worker, and anything after it
        after = await page.evaluate(CHARTS)
        assert len(after) == len(before)
        for i in below:  # held, not drawn, and not waited on
            assert after[i]["draws"] == before[i]["draws"], (titles[i], before[i], after[i])
            assert after[i]["held"] and not after[i]["pending"], (titles[i], after[i])
        for i in shown:  # drawn
            assert after[i]["draws"] > before[i]["draws"], (titles[i], before[i], after[i])
            assert not after[i]["held"] and not after[i]["pending"], (titles[i], after[i])

        # Scrolled to, each draws the newest state.
        for i in below:
            await page.evaluate(
                "(i) => document.querySelectorAll('.js-plotly-plot')[i].scrollIntoView({block: 'center'})", i
            )
            await page.wait_for_function(
                """(i) => { const gd = document.querySelectorAll('.js-plotly-plot')[i];
                            return gd.dataset.held === undefined && gd.dataset.pending === undefined; }""",
                arg=i,
                timeout=20_000,
            )
        drawn = await page.evaluate(CHARTS)
        for i in below:
            assert drawn[i]["draws"] == before[i]["draws"] + 1, (titles[i], before[i], drawn[i])
        # Nothing held now: the page's state is what Plotly draws from (gd.data), the kernel's run.
        assert await page.evaluate(
            "() => [...document.querySelectorAll('.js-plotly-plot')].every((gd) => gd.scanlabHeld() === null)"
        )
        state = await page.evaluate(PAGE_STATE)
        assert page_settings(state) == settings
        wrong = differences(state, expected_charts(model, settings))
        await context.close()
        return wrong + errors

    assert visit(scenario) == []
