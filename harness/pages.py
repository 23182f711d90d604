"""Whether a dashboard page's charts draw its own kernel's current run, read from the page itself.

A page's share link names its settings; its kernel computed them with widgets.model.Model, which
this process runs too: each chart's traces as the page holds them (gd.data, what Plotly draws from)
must equal the traces the explorer builds for that result, and the status line must describe the
same run. `Model` keeps the landscape's frame from one run to the next (it stays while the paths fill
it), so each page is checked against a Model of its own that has computed the page's runs in the
page's order. Used by tests/test_class.py, tests/test_missed_updates.py and benchmarks/load.py.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from harness.js import call
from widgets.figures import CHARTS
from widgets.model import Model
from widgets.settings import Settings, from_query
from widgets.stability import CHART as STABILITY_CHART

LANDSCAPE_TITLE = CHARTS["landscape"].title

# In the page: each chart's traces by title, the status line, the share link.
PAGE_STATE = call(Path(__file__).with_name("page_state.js"))


def page_settings(state: dict) -> Settings:
    """The settings a page's share link names (PAGE_STATE's result)."""
    settings, _ = from_query(urllib.parse.urlsplit(state["share"]).query)
    return settings


def expected_charts(model: Model, settings: Settings, step: int | None = None) -> dict[str, go.Figure]:
    """Each chart as the explorer draws it for `settings` after a move (playback at step N, or at
    `step`), by title: the charts of its model (`Chart.models`; the other model's is hidden, and
    never drawn until shown)."""
    result = model.compute(settings)
    step = settings.N if step is None else step
    charts = [chart for chart in CHARTS.values() if settings.model in chart.models]
    figures = [chart.build(result, settings.loss, step, widget=go.Figure) for chart in charts]
    figures.append(STABILITY_CHART.build(model.stability(settings), settings, widget=go.Figure))
    return {figure.layout.title.text: figure for figure in figures}


def _array(values) -> np.ndarray:
    if values is None:
        return np.empty(0)
    return np.array([np.nan if v is None else v for v in np.ravel(values)], dtype=np.float64)


def differences(state: dict, expected: dict[str, go.Figure]) -> list[str]:
    """Where the page (PAGE_STATE's result) differs from `expected` (`expected_charts` for the
    settings its share link names): the charts' traces that hold other values, and a status line
    that describes another lr; [] for none."""
    settings = page_settings(state)
    out = []
    for title, figure in expected.items():
        drawn = state["charts"].get(title)
        if drawn is None:
            out.append(f"no chart titled {title[:40]!r}")
            continue
        for i, trace in enumerate(figure.data):
            for field in ("x", "y", "z"):
                want = getattr(trace, field, None)
                if want is None:
                    continue
                have, want = (_array(drawn[i][field]) if i < len(drawn) else None), _array(want)
                if (
                    have is None
                    or have.shape != want.shape
                    or not np.allclose(have, want, rtol=1e-9, equal_nan=True)
                ):
                    out.append(f"{title.split('<')[0][:30]!r} trace {i} {field}")
    if f"lr = {settings.lr:.4g}" not in state["status"]:
        out.append("the status line describes another run")
    return out


def drawn_frame(state: dict) -> list[float] | None:
    """The landscape's range of w as the page draws it (its curve's first and last w), or None."""
    for title, traces in state["charts"].items():
        if title == LANDSCAPE_TITLE and traces and traces[0]["x"]:
            return [traces[0]["x"][0], traces[0]["x"][-1]]
    return None


async def settled(
    page, model: Model, done, timeout: float, frame_known: bool = True
) -> tuple[list[str], Settings | None]:
    """Poll a Playwright page until `done(settings)` holds for the settings its share link names and
    the page draws that run (`differences`). Returns ([], settings) then, or what still differs after
    `timeout` seconds (["not moved"] if `done` never held) and the last settings seen.

    `frame_known=False` when the page's kernel computed runs `model` has not (a burst of moves, of
    which it ran some): the landscape's range of w is then taken from the page, and everything else,
    the curve drawn in that range included, is checked against `model`'s run of the settings."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    expected = {}  # (settings, frame): their charts, computed once (the checking client shares the machine)
    while True:
        state = await page.evaluate(PAGE_STATE)
        settings = page_settings(state)
        frame = None if frame_known else drawn_frame(state)
        key = (settings, None if frame is None else tuple(frame))
        if done(settings) and key not in expected:
            if frame is not None:
                model.frame = frame
            expected[key] = expected_charts(model, settings)
        wrong = differences(state, expected[key]) if done(settings) else ["not moved"]
        if not wrong or loop.time() > deadline:
            return wrong, settings
        await asyncio.sleep(0.25)
