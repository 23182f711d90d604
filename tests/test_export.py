"""Issue 7's exports and projector view: the CSV holds exactly the run, the HTML file every chart
with plotly.js inside, and ?view=projector / ?hide=... change the page and round-trip the link."""

import base64
import csv
import io
import re

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go
import pytest

import core
from widgets import Explorer
from widgets.chart import MARGIN
from widgets.explorer import WIDE
from widgets.export import CSV_HEADER, PYTREE_CSV_HEADER, charts_html, run_csv
from widgets.figures import run_name
from widgets.projector import PROJECTOR
from widgets.settings import (
    DEFAULTS,
    FLAGS,
    LEAF_FIELDS,
    PRESETS,
    Presentation,
    from_query,
    presentation_from_query,
)


@pytest.fixture(scope="module")
def explorer():
    return Explorer(background=False)


def _decoded(link_html: str) -> str:
    encoded = re.search(r"base64,([A-Za-z0-9+/=]+)\"", link_html).group(1)
    return base64.b64decode(encoded).decode("utf-8")


def _assert_rows_are(rows, history, rates):
    """`rows` (one loss mode's of one run) are `history`'s steps, each with the lr it used."""
    assert [int(row["step"]) for row in rows] == list(range(len(history.losses) + 1))
    np.testing.assert_array_equal([np.float32(row["w"]) for row in rows], history.params["w"])
    np.testing.assert_array_equal([np.float32(row["loss"]) for row in rows[:-1]], history.losses)
    np.testing.assert_array_equal([np.float32(row["gradient"]) for row in rows[:-1]], history.grads["w"])
    # 9 significant digits: a float32 rate exactly, the slider's float64 lr to 1e-9.
    np.testing.assert_allclose([float(row["lr"]) for row in rows[:-1]], rates, rtol=1e-8)
    assert rows[-1]["loss"] == rows[-1]["gradient"] == rows[-1]["lr"] == ""


def test_the_csv_of_the_w_b_model_holds_both_params_of_every_step(explorer):
    # The carry's two leaves and each one's gradient, for plain SGD and the heavy ball beside it.
    explorer.apply(PRESETS["narrow-valley"][1])
    result = explorer.result
    rows = list(csv.DictReader(io.StringIO(run_csv(result))))
    assert ",".join(rows[0]) == PYTREE_CSV_HEADER
    n = result.settings.N
    for run, runs in (("sgd", result.histories), (run_name(result.settings), result.optimized)):
        for mode in ("sum", "mean"):
            mine = [row for row in rows if row["run"] == run and row["loss_mode"] == mode]
            h = runs[mode]
            assert [int(row["step"]) for row in mine] == list(range(n + 1))
            for column, values in (("w", h.params["w"]), ("b", h.params["b"])):
                np.testing.assert_array_equal([np.float32(row[column]) for row in mine], values)
            for column, values in (
                ("loss", h.losses),
                ("gradient_w", h.grads["w"]),
                ("gradient_b", h.grads["b"]),
            ):
                np.testing.assert_array_equal([np.float32(row[column]) for row in mine[:-1]], values)
            assert mine[-1]["loss"] == mine[-1]["gradient_b"] == mine[-1]["lr"] == ""
    explorer.apply(DEFAULTS)


@pytest.mark.parametrize("preset", ["worked-example", "diverging", "sum-vs-mean"])
def test_the_csv_holds_every_step_of_both_runs(explorer, preset):
    explorer.apply(PRESETS[preset][1])
    rows = list(csv.DictReader(io.StringIO(run_csv(explorer.result))))
    assert ",".join(rows[0]) == CSV_HEADER
    assert {row["run"] for row in rows} == {"sgd"}  # plain SGD alone: nothing is overlaid
    n, lr = explorer.settings.N, explorer.settings.lr
    for mode in ("sum", "mean"):
        mine = [row for row in rows if row["loss_mode"] == mode]
        _assert_rows_are(mine, explorer.result.histories[mode], np.full(n, lr))
    if preset == "worked-example":
        assert [row["w"] for row in rows[:3]] == ["0", "0.400000006", "0.639999986"]


@pytest.mark.parametrize(
    ("change", "name"),
    [
        ({"optimizer": "momentum", "momentum": 0.5}, "momentum 0.5"),
        ({"schedule": "cosine"}, "sgd, cosine schedule"),
    ],
)
def test_the_csv_holds_the_overlaid_run_too(explorer, change, name):
    # What the trajectory overlays on plain SGD is exported beside it, under its legend's name, each
    # step with the learning rate it used (the schedule's, or the constant lr).
    explorer.apply(DEFAULTS._replace(N=30, **change))
    result = explorer.result
    rows = list(csv.DictReader(io.StringIO(run_csv(result))))
    assert [row["run"] for row in rows] == ["sgd"] * 62 + [name] * 62
    rates = result.schedule if result.schedule is not None else np.full(30, result.settings.lr)
    for mode in ("sum", "mean"):
        _assert_rows_are(
            [r for r in rows if r["run"] == "sgd" and r["loss_mode"] == mode],
            result.histories[mode],
            np.full(30, result.settings.lr),
        )
        _assert_rows_are(
            [r for r in rows if r["run"] == name and r["loss_mode"] == mode], result.optimized[mode], rates
        )
    if "schedule" in change:
        np.testing.assert_allclose(rates, core.lr_schedule("cosine", result.settings.lr, 30), rtol=0)
    explorer.apply(DEFAULTS)


def test_the_export_buttons_give_links_that_go_stale_with_the_run(explorer):
    explorer.apply(DEFAULTS)
    explorer.csv_button.click()
    assert "Download scanlab_lr0.01_N100_B16_sum.csv" in explorer.export_links.value
    assert _decoded(explorer.export_links.value) == run_csv(explorer.result)
    explorer.inputs["lr"].value = 0.02
    assert explorer.export_links.value == ""  # a link is to the run it was made from
    explorer.html_button.click()
    page = _decoded(explorer.export_links.value)
    assert "scanlab_lr0.02_N100_B16_sum.html" in explorer.export_links.value
    assert page.count('class="plotly-graph-div"') == 6  # five charts and the stability map
    assert page.count("Plotly.newPlot") == 6 and len(page) > 3_000_000  # plotly.js is inside
    assert "lr = 0.02" in page and explorer.share.value.replace("&", "&amp;") in page


def test_the_html_export_escapes_what_it_quotes():
    figure = go.Figure(go.Scatter(y=[1, 2]), layout={"title": {"text": "t"}})
    page = charts_html([figure], DEFAULTS, 'http://x/?a="><script>alert(1)</script>')
    assert "<script>alert(1)</script>" not in page
    assert "&quot;&gt;&lt;script&gt;" in page


def test_the_html_exports_charts_fit_the_window(browser, tmp_path):
    # The charts have no width of their own: two to a row on a wide window, the wide ones (the
    # per-step factors, the map) a row each, and one to a row on a narrow window, none cut off.
    explorer = Explorer(background=False)
    figures = [*(explorer.figures[name] for name in explorer.drawn), explorer.stability.figure]
    wide = [i for i, name in enumerate([*explorer.drawn, "stability"]) if name in WIDE]
    path = tmp_path / "charts.html"
    path.write_text(charts_html(figures, explorer.settings, "http://x/", (), wide))
    for window in (1280, 700, 390):  # 390: a phone, which lays out a page without a viewport at 980 px
        page = browser.new_page(viewport={"width": window, "height": 900}, is_mobile=window == 390)
        page.goto(path.as_uri())
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6")
        charts = page.evaluate(
            """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => ({
                width: gd._fullLayout.width, place: gd.clientWidth, top: gd.getBoundingClientRect().top}))"""
        )
        page.close()
        page_width = window - 16  # the body's margins
        assert all(0 < chart["width"] <= chart["place"] + 1 <= page_width + 1 for chart in charts), charts
        beside = [chart for i, chart in enumerate(charts) if i not in wide]
        if window == 1280:
            assert beside[0]["top"] == beside[1]["top"] and beside[2]["top"] == beside[3]["top"]
            assert all(chart["width"] < page_width / 2 for chart in beside)
            assert all(charts[i]["width"] > 0.95 * page_width for i in wide)
        else:
            assert len({chart["top"] for chart in charts}) == 6


def test_projector_view_enlarges_every_chart_and_the_controls():
    plain = Explorer(background=False)
    big = Explorer(background=False, presentation=Presentation("projector"))
    assert "scanlab-projector" in big.controls._dom_classes
    assert "scanlab-projector" not in plain.controls._dom_classes
    assert "scanlab-projector" in big.show("trajectory")._dom_classes
    for name, surface in big.figures.items():
        figure = surface.figure()
        assert figure.layout.font.size == PROJECTOR["font"], name
        # Taller, with room below the axis for the larger tick labels, axis title and legend (which
        # moves into the margin: the plain view's legend row is not added again).
        before = plain.figures[name].figure().layout
        assert figure.layout.height == before.height + PROJECTOR["taller"], name
        assert figure.layout.margin.b == MARGIN["b"] + PROJECTOR["lower"], name
        assert (figure.layout.legend.yref, figure.layout.legend.y) == ("container", 0), name
        for trace, before in zip(figure.data, plain.figures[name].figure().data, strict=True):
            if before.line.width is not None:
                assert trace.line.width == before.line.width * PROJECTOR["line"], name
    assert big.stability.figure.figure().layout.font.size == PROJECTOR["font"]
    # The map's title has four lines: its top margin and height gain a line's worth for each past two.
    grown, plain_map = 2 * PROJECTOR["title_line"], plain.stability.figure.figure().layout
    big_map = big.stability.figure.figure().layout
    assert big_map.title.text.count("<br>") == 3
    assert big_map.margin.t == plain_map.margin.t + PROJECTOR["higher"] + grown
    assert big_map.height == plain_map.height + PROJECTOR["taller"] + grown
    panel = big.hood.open("optax")
    assert panel.loss_figure.figure().layout.font.size == PROJECTOR["font"]
    # the data are the same; only the drawing changed
    np.testing.assert_array_equal(
        big.figures["trajectory"].figure().data[0].y, plain.figures["trajectory"].figure().data[0].y
    )


def _code_parts(widget) -> list[str]:
    """The titles of the "Code:" accordions anywhere under `widget`."""
    found = []
    if isinstance(widget, ipw.Accordion):
        found += [
            widget.get_title(i)
            for i in range(len(widget.children))
            if widget.get_title(i).startswith("Code:")
        ]
    for child in getattr(widget, "children", ()):
        found += _code_parts(child)
    return found


@pytest.mark.parametrize("hide", [(), ("code",)])
def test_hide_code_leaves_no_code_part_under_the_charts_or_in_the_hood(hide):
    presentation = Presentation("default", hide)
    explorer = Explorer(DEFAULTS, background=False, presentation=presentation)
    shown = [explorer.show("trajectory", "loss"), explorer.show("landscape", "sum_vs_mean")]
    # Each panel with a Code part when hidden; where shown, the Optax panel's (the exercise's answer).
    opened = ("invariants", "loops", "optax") if hide else ("optax",)
    panels = [explorer.hood.open(name).widget for name in opened]
    parts = [title for widget in shown + panels for title in _code_parts(widget)]
    if hide:
        assert parts == []
        assert presentation_from_query("hide=code") == (presentation, [])
    else:  # the lesson's loop and the engine under the charts, each panel's own
        assert len(parts) >= 4 and any("core.linear.train_step" in title for title in parts), parts


def test_hide_hides_the_named_controls_and_the_link_keeps_both():
    presentation = Presentation("projector", ("noise", "seed", "presets", "playback"))
    explorer = Explorer(DEFAULTS._replace(lr=0.05), background=False, presentation=presentation)
    # Hidden too: the w, b model's under the lesson's w, and the data of rows' flags under generated data.
    hidden = [name for name, widget in explorer.inputs.items() if widget.layout.display == "none"]
    assert [name for name in hidden if name not in FLAGS] == ["noise", "seed", *LEAF_FIELDS["b"]]
    assert set(FLAGS) <= set(hidden)
    explorer.apply(explorer.settings._replace(model="w,b"))
    hidden = [name for name, widget in explorer.inputs.items() if widget.layout.display == "none"]
    assert [name for name in hidden if name not in FLAGS] == ["noise", "seed"]
    explorer.apply(explorer.settings._replace(model="w"))
    rows = explorer.controls.children
    presets, playback = rows[1], rows[3]
    share = next(row for row in rows if "scanlab-share" in row._dom_classes)
    assert explorer.presets["smooth"] in presets.children and explorer.play in playback.children
    assert explorer.share in share.children
    assert (presets.layout.display, playback.layout.display, share.layout.display) == ("none", "none", None)
    assert "view=" not in explorer.share.value  # a link carries the view only when asked
    explorer.exports.with_view.value = True
    query = explorer.share.value.split("?", 1)[1]
    assert query.endswith("&view=projector&hide=noise,seed,presets,playback")
    assert from_query(query) == (explorer.settings, [])
    assert presentation_from_query(query) == (presentation, [])
    explorer.inputs["lr"].value = 0.07  # a hidden control keeps its value and the link its view
    assert "lr=0.07" in explorer.share.value and "view=projector" in explorer.share.value
