"""Stills (widgets/still.py): what a served page shows before its scripts run is the kernel's run,
drawn from the same figure specs, with the same boxes, ticks and text alternatives as the live
charts. The page itself (the template that shows and removes them) is tests/test_still_page.py."""

import html
import re

import numpy as np
import pytest

import widgets.still
from widgets import Explorer
from widgets.settings import DEFAULTS
from widgets.still import STILL_MIME, chart_still, still
from widgets.surface import surface_maker


@pytest.fixture(scope="module")
def served():
    return Explorer(DEFAULTS, plotly_js="/voila/files/plotly.js")


def _points(path: str) -> np.ndarray:
    return np.array([[float(a), float(b)] for a, b in re.findall(r"[ML](-?[\d.]+) (-?[\d.]+)", path)])


def _charts(markup: str) -> list[str]:
    return re.findall(
        r'<div class="scanlab-still-chart".*?(?=<div class="scanlab-still-chart"|$)', markup, re.S
    )


def test_a_served_page_carries_stills_and_a_notebook_does_not(served):
    bundle = served.show("trajectory", "loss")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and STILL_MIME in bundle
    assert STILL_MIME in served.controls._repr_mimebundle_()
    # The map is below the first screen: its cell has the live widget only.
    assert STILL_MIME not in served.show("stability")._repr_mimebundle_()
    notebook = Explorer(DEFAULTS)
    assert STILL_MIME not in notebook.show("trajectory", "loss")._repr_mimebundle_()
    assert STILL_MIME not in notebook.controls._repr_mimebundle_()


def test_the_still_draws_the_kernels_run_where_the_chart_draws_it(served):
    figure = served.figures["trajectory"]
    markup = chart_still(figure)
    run = figure.data[0]  # w under the sum loss, one point per step
    x_range, y_range = figure.get("xaxis.range"), figure.get("yaxis.range")
    paths = re.findall(r'<path d="([^"]+)" stroke="#0072B2"', markup)
    points = _points(paths[0])
    assert len(points) == DEFAULTS.N + 1 == len(run["y"])
    want_x = (np.asarray(run["x"], float) - x_range[0]) / (x_range[1] - x_range[0]) * 1000
    want_y = (1 - (np.asarray(run["y"], float) - y_range[0]) / (y_range[1] - y_range[0])) * 1000
    np.testing.assert_allclose(points[:, 0], want_x, atol=0.051)
    np.testing.assert_allclose(points[:, 1], want_y, atol=0.051)
    # The box is the chart's: its height, and the plot area inside the layout's margins.
    margin = figure.get("margin")
    assert f"height:{figure.get('height')}px" in markup
    assert f"left:{margin['l']}px;right:{margin['r']}px;top:{margin['t']}px;bottom:{margin['b']}px" in markup


def test_ticks_are_plotlys_for_the_default_and_a_diverging_run():
    explorer = Explorer(DEFAULTS._replace(lr=0.09, N=60), plotly_js="x")
    default = Explorer(DEFAULTS, plotly_js="x")

    def labels(figure, axis):
        return re.findall(rf'<span class="{axis}"[^>]*>([^<]*)</span>', chart_still(figure))

    # What Plotly.js drew for these charts at 1440 x 900 (its ticks where the layout sets none).
    assert labels(default.figures["trajectory"], "x") == ["0", "20", "40", "60", "80", "100"]
    assert labels(default.figures["trajectory"], "y") == ["0", "0.5", "1", "1.5", "2"]
    assert labels(default.figures["loss"], "y") == ["1", "2", "5", "10", "20", "50"]
    assert labels(explorer.figures["trajectory"], "x") == [str(k) for k in range(0, 61, 10)]
    assert labels(explorer.figures["trajectory"], "y") == [
        "−10¹⁵",
        "−10¹⁰",
        "−10⁵",
        "0",
        "10⁵",
        "10¹⁰",
        "10¹⁵",
    ]
    assert labels(explorer.figures["loss"], "y") == ["10⁶", "10¹²", "10¹⁸", "10²⁴", "10³⁰", "10³⁶"]
    # The diverging run's notes and marks come too: the signed log scale's, the ✖ where it diverged.
    markup = chart_still(explorer.figures["trajectory"])
    assert "signed log scale" in markup and "✖" in markup


def test_each_chart_is_an_image_named_by_its_text_alternative(served):
    markup = still(served.show("trajectory", "loss", "landscape"))
    charts = _charts(markup)
    names = [html.unescape(n) for n in re.findall(r'role="img" aria-label="([^"]*)"', markup)]
    visible = [served.figures[n] for n in ("trajectory", "loss", "landscape")]
    assert len(charts) == 3 and names == [figure.alt for figure in visible]
    assert all(figure.alt for figure in visible)
    # The w, b model's chart in the landscape's place is hidden under w, as the live one is.
    assert re.search(r"style=\"display:none[^\"]*\"></div>", markup)


def test_a_still_writes_text_as_text():
    make = surface_maker()
    hostile = "<img src=x onerror=alert(1)>"
    figure = make(
        data=[
            {"type": "scatter", "x": [0, 1], "y": [0, 1], "name": hostile, "mode": "lines"},
            {"type": "scatter", "x": [0, 1], "y": [1, 0], "name": "a < b & c", "mode": "lines"},
        ],
        layout={
            "title": {"text": hostile},
            "xaxis": {"range": [0, 1], "title": {"text": hostile}},
            "yaxis": {"range": [0, 1]},
            "annotations": [{"text": hostile, "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper"}],
        },
    )
    figure.alt = hostile
    markup = chart_still(figure)
    # Markup in a name or title is dropped as Plotly drops it, other text is escaped, and the text
    # alternative is the sentence as it is.
    assert "<img" not in markup and "a &lt; b &amp; c" in markup
    assert 'aria-label="&lt;img src=x onerror=alert(1)&gt;"' in markup


LINE = r'<path d="M(?!0 5H30")[^"]*" stroke='  # a trace's line in a still (not a legend's sample)


def test_every_chart_draws_each_of_its_shown_lines(served):
    # Each chart's still has one SVG line per trace it shows with two points or more, and none for
    # a hidden trace (the mean's under the sum loss, the w, b model's plane under w).
    for name, figure in served.figures.items():
        lines = [
            t for t in figure.data
            if t.get("visible", True) is True and "lines" in t.get("mode", "lines")
            and t.get("x") is not None and len(t["x"]) > 1
        ]  # fmt: skip
        drawn = re.findall(LINE, chart_still(figure))
        assert len(drawn) == len(lines), (name, len(drawn), len(lines))
    assert re.findall(LINE, chart_still(served.figures["plane"])) == []


def test_a_page_gets_the_stills_styles_once():
    explorer = Explorer(DEFAULTS, plotly_js="x")
    outputs = [
        box._repr_mimebundle_()[STILL_MIME]
        for box in (explorer.controls, explorer.show("trajectory", "loss"), explorer.show("landscape"))
    ]
    assert [output.count("<style>") for output in outputs] == [1, 0, 0]
    assert ".scanlab-still-chart" in outputs[0] and ".scanlab-words" in outputs[0]  # still.css, explorer.css


def test_a_still_that_fails_leaves_the_styles_to_the_next(monkeypatch):
    explorer = Explorer(DEFAULTS, plotly_js="x")
    failing = explorer.show("trajectory", "loss")
    monkeypatch.setattr(widgets.still, "still", lambda widget: 1 / 0)
    with pytest.warns(UserWarning, match="no still"):
        assert STILL_MIME not in failing._repr_mimebundle_()
    monkeypatch.undo()
    assert explorer.show("landscape")._repr_mimebundle_()[STILL_MIME].count("<style>") == 1


def test_a_still_that_fails_leaves_the_live_widget(served):
    box = served.show("trajectory")
    box.still = lambda: 1 / 0
    with pytest.warns(UserWarning, match="no still"):
        bundle = box._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and STILL_MIME not in bundle
