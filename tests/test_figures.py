"""What the charts send to the browser: one message per chart per event, holding only what changed
(the points alone when the axes stay), fixed axis ranges that hold every drawn value, binary arrays,
strict JSON, and nothing a page can change."""

import json

import numpy as np
import pytest
from ipywidgets.widgets.widget import _remove_buffers

from widgets import DEFAULTS, Explorer
from widgets.axes import LOG_TICKS_UP_TO, STEP_TICKS_UP_TO, axis_range, log_ticks, tick_label
from widgets.chart import MARKERS_UP_TO
from widgets.figures import CHARTS
from widgets.model import MAP_LRS, Model, kept_range
from widgets.projector import enlarge
from widgets.stability import BOX, BOX_OUTLINE
from widgets.stability import CHART as STABILITY_CHART
from widgets.surface import _with_path, send, surface_maker


class Recorder:
    """A comm that keeps what a widget sends (ipywidgets sends only while a widget has a comm)."""

    kernel = True
    comm_id = "recorder"

    def __init__(self):
        self.sent = []

    def send(self, data=None, buffers=None, **_):
        self.sent.append(data["state"])

    def on_msg(self, *_):
        pass

    def close(self, *_, **__):
        pass


@pytest.fixture(scope="module")
def explorer():
    return Explorer(background=False)


@pytest.fixture
def sent(explorer):
    """{figure name: [state sent, ...]} for the next events; the explorer back at the defaults."""
    explorer.apply(DEFAULTS)
    # The charts of the defaults' model, the lesson's w: the w, b model's contour chart is hidden.
    figures = {
        **{name: explorer.figures[name] for name in explorer.drawn},
        "stability": explorer.stability.figure,
    }
    comms = {name: Recorder() for name in figures}
    for name, figure in figures.items():
        figure.comm = comms[name]
    yield {name: comm.sent for name, comm in comms.items()}
    for figure in figures.values():
        figure.comm = None


def _figure_states(states):
    """The states that change a chart's figure (its revision rides along)."""
    return [state for state in states if "revision" in state]


def test_an_lr_move_is_one_message_per_chart_of_its_points_alone(explorer, sent):
    explorer.inputs["lr"].value = 0.0101  # may widen an axis, with room to spare
    for states in sent.values():
        states.clear()
    explorer.inputs["lr"].value = 0.0102  # the next step of the slider: the axes keep their ranges
    for name, states in sent.items():
        assert len(states) == 1, (name, [sorted(s) for s in states])
        (state,) = states
        if name == "stability":
            continue
        # The points alone: the layout, with the axes' ranges, stays as the page has it, and the
        # browser moves the points without redrawing the chart (widgets/surface.js). The chart's
        # text alternative, which names the final w, rides in the same message.
        assert sorted(state) == ["alt", "data", "revision"], name
        assert "lr = 0.0102" in state["alt"], name
        figure = explorer.figures[name]
        assert len(state["data"]) == len(figure.data), name
    # The map's heatmaps are not sent again, only its layout's box around the current setting.
    (state,) = sent["stability"]
    assert sorted(state) == ["plot_layout", "revision"]
    half = np.log10(MAP_LRS[1] / MAP_LRS[0]) / 2  # half a cell
    centre = np.log10(0.0102)
    shapes = explorer.stability.figure.plot_layout["shapes"]
    # On each panel the box and, beneath it, its outline.
    assert [(shape["xref"], shape["yref"]) for shape in shapes] == [("x", "y")] * 2 + [("x2", "y2")] * 2
    for shape in shapes:
        np.testing.assert_allclose([shape["x0"], shape["x1"]], [centre - half, centre + half])
    # The numbers that change with lr are in the captions, not in a title: a layout that changes
    # is a redraw of the whole chart.
    assert "lr = 0.0102" in explorer.captions["sum_vs_mean"].value


def test_a_view_change_shows_and_hides_traces_and_a_playback_step_moves_the_markers(explorer, sent):
    explorer.inputs["loss"].value = "mean" if DEFAULTS.loss != "mean" else "sum"
    (state,) = _figure_states(sent["trajectory"])
    figure = explorer.figures["trajectory"]
    assert [trace.get("visible") for trace in figure.data[:2]] == [False, True]
    assert "data" in state
    for states in sent.values():
        states.clear()
    before = {name: list(figure.data) for name, figure in explorer.figures.items()}
    explorer.play.value = 3
    for name in explorer.drawn:
        chart = CHARTS[name]
        (state,) = _figure_states(sent[name])
        assert sorted(state) == ["data", "revision"], name  # the layout stays
        data = explorer.figures[name].data
        assert [i for i, trace in enumerate(data) if trace is not before[name][i]] == [len(chart.styles) - 1]
        assert len(data[-1]["x"]) >= 1, name  # step 3 has a point on every chart
    assert sent["stability"] == []


def test_a_page_cannot_change_a_charts_figure(explorer, sent):
    # A visitor can send any widget any state; a chart's figure is the kernel's alone.
    figure = explorer.figures["trajectory"]
    before = (figure.data, figure.plot_layout, figure.revision)
    figure.set_state({"plot_layout": {"yaxis": {"range": [0, "x"]}}, "data": [], "revision": -1})
    assert (figure.data, figure.plot_layout, figure.revision) == before
    explorer.inputs["lr"].value = 0.0124
    low, high = figure.plot_layout["yaxis"]["range"]
    assert low < high and figure.revision == before[2] + 1


def test_each_chart_says_in_words_what_it_shows_now(explorer, sent):
    # The text alternative a screen reader announces for each chart (widgets/surface.js: the
    # figure's name): its title, its numbers, and the run's outcome, current after every move.
    explorer.apply(DEFAULTS._replace(lr=0.2, loss="both"))
    for name in explorer.drawn:
        figure = explorer.figures[name]
        title = figure.get("title.text").split("<")[0]
        assert figure.alt.startswith(title), name
        assert "sum loss: diverged at step" in figure.alt and "mean loss: converging" in figure.alt, name
    assert "lr / critical lr" in explorer.figures["divergence"].alt
    explorer.inputs["lr"].value = 0.01
    assert all(
        "lr = 0.01," in explorer.figures[name].alt and "diverged" not in explorer.figures[name].alt
        for name in explorer.drawn
    )
    explorer.inputs["N"].value = 40
    explorer.stability.wait()
    assert explorer.stability.figure.alt.startswith("Stability map for N = 40,")
    figure = explorer.figures["trajectory"]
    before = figure.alt
    figure.set_state({"alt": "<script>"})  # the page's to read, the kernel's to write
    assert figure.alt == before


def test_a_move_puts_the_run_into_words_once(explorer, sent, monkeypatch):
    # The status line and the five charts' text alternatives come from one sentence per move.
    calls = []
    status_text = explorer._status_text
    monkeypatch.setattr(explorer, "_status_text", lambda: calls.append(1) or status_text())
    explorer.inputs["lr"].value = 0.0123
    explorer.inputs["loss"].value = "both"
    assert len(calls) == 2
    assert "lr = 0.0123" in explorer.status.value and "mean loss" in explorer.figures["loss"].alt


def test_nothing_is_sent_when_nothing_changed(explorer, sent):
    figure = explorer.figures["trajectory"]
    data = [{key: figure.data[i][key] for key in ("x", "y")} for i in range(2)]
    ranges = {path: figure.get(path) for path in ("xaxis.range", "yaxis.range")}
    send(figure, data, [0, 1], ranges)
    assert sent["trajectory"] == []
    explorer.apply(explorer.settings)
    assert all(states == [] for states in sent.values())


def _shown_values(figure, axis):
    values = [
        np.asarray(trace[axis], dtype=np.float64)
        for trace in figure.data
        if trace.get("visible", True) is not False and trace.get(axis) is not None
    ]
    return np.concatenate(values) if values else np.empty(0)


def assert_every_value_in_frame(explorer):
    """Every drawable value of every chart with computed ranges lies inside its axes."""
    for name, chart in CHARTS.items():
        if chart.own_ranges:
            continue  # the landscape's frame is the loss curve's; a diverging path leaves it
        layout = explorer.figures[name].plot_layout
        for axis in ("xaxis", "yaxis"):
            low, high = layout[axis]["range"]
            values = _shown_values(explorer.figures[name], axis[0])
            with np.errstate(invalid="ignore", divide="ignore"):
                if layout[axis].get("type") == "log":
                    values = np.log10(values[values > 0])
                values = values[np.isfinite(values)]
            assert np.all((low <= values) & (values <= high)), (
                name,
                axis,
                low,
                high,
                values.min(),
                values.max(),
            )


@pytest.mark.parametrize(
    "changes",
    [
        {"lr": 0.0123},
        {"lr": 0.2, "B": 512, "N": 1000},  # diverges: a spike to about 1e38
        {"lr": 10.0, "noise": 2.0, "N": 30},
        {"w0": -10.0, "true_w": 10.0, "kind": "ones", "loss": "mean"},
        {"lr": 1e-6, "N": 1},
    ],
)
def test_fixed_ranges_hold_every_drawn_value(explorer, changes):
    explorer.apply(DEFAULTS)
    explorer.apply(DEFAULTS._replace(**changes))
    assert_every_value_in_frame(explorer)
    explorer.apply(DEFAULTS)  # and back: the ranges shrink to the small run again
    assert_every_value_in_frame(explorer)
    low, high = explorer.figures["trajectory"].plot_layout["yaxis"]["range"]
    assert high - low < 10


def test_ranges_stay_while_the_values_fill_them():
    assert kept_range([0.0, 10.0], [1.0, 9.0]) == [0.0, 10.0]
    assert kept_range([0.0, 10.0], [1.0, 4.0]) == [1.0, 4.0]  # would fill under KEEP_RANGE of it
    # A value would leave it: room to grow on that side; the other side stays.
    assert kept_range([0.0, 10.0], [-1.0, 9.0]) == [-2.5, 10.0]
    assert kept_range([0.0, 10.0], [1.0, 12.0]) == [0.0, 13.65]
    # ... unless the values would then fill too little of it: that side moves in to them.
    assert kept_range([0.0, 10.0], [9.0, 12.0]) == [9.0, 12.45]
    assert kept_range(None, [1.0, 2.0]) == [1.0, 2.0]


def test_a_keyboard_step_of_lr_back_and_forth_keeps_every_range(explorer, sent):
    # A key on the lr slider moves it a tenth of its range (noUiSlider's keyboardDefaultStep), a
    # factor of 3 in lr. Below the divergence limit every chart keeps its ranges, so each press
    # sends the points alone, which the browser moves without a redraw; the map moves its box.
    lr = explorer.inputs["lr"]
    key = (lr.max - lr.min) / 10
    for position in range(5):  # 1e-4 ... 0.0316 with this slider; the sum diverges past 0.05
        one, other = 10 ** (lr.min + position * key), 10 ** (lr.min + (position + 1) * key)
        assert other < min(explorer.model.compute(explorer.settings._replace(lr=other)).critical_lr.values())
        for value in (one, other):  # the first visit may widen a range
            lr.value = value
        for states in sent.values():
            states.clear()
        for value in (one, other, one, other):
            lr.value = value
        for name, states in sent.items():
            states = _figure_states(states)
            assert len(states) == 4, (position, name)
            changed = {"plot_layout"} if name == "stability" else {"data"}
            # The text alternative (alt) rides along: it names the run, not the figure's layout.
            assert all(state.keys() - {"revision", "alt"} == changed for state in states), (position, name)


def test_axis_range_of_values_that_cannot_all_be_drawn():
    assert axis_range([np.array([0.0, 10.0])], pad=0.05) == [-0.5, 10.5]
    assert axis_range([np.array([np.nan, 1.0, np.inf]), [3.0]], pad=0.0) == [1.0, 3.0]
    assert axis_range([np.array([0.0, -1.0, 10.0, 1000.0])], log=True, pad=0.0) == [1.0, 3.0]
    assert axis_range([[5.0]]) == [4.0, 6.0]  # one value: a fifth of it either side
    assert axis_range([[0.0]]) == [-1.0, 1.0]
    assert axis_range([[100.0]], log=True) == [1.5, 2.5]
    assert axis_range([np.array([np.nan]), []]) is None
    assert axis_range([[3e38, -3e38]], pad=0.05) == pytest.approx([-3.3e38, 3.3e38])
    # A floor under every value starts the range; one that is not is ignored, and so is it on log axes.
    assert axis_range([[2.0, 10.0]], pad=0.05, floor=0.0) == [0.0, 10.5]
    assert axis_range([[0.0]], floor=0.0) == [0.0, 1.0]
    assert axis_range([[-2.0, 10.0]], pad=0.0, floor=0.0) == [-2.0, 10.0]
    assert axis_range([[10.0, 1000.0]], log=True, pad=0.0, floor=0.0) == [1.0, 3.0]


def test_the_loss_charts_log_axis_labels_a_wide_range_in_whole_decades(explorer, sent):
    # 1, 2 and 5 in each decade, written in full, while the range spans a few; a diverging run spans
    # about 40, where that was 124 labels drawn over each other: Plotly then spaces the labels itself.
    layout = explorer.figures["loss"].plot_layout["yaxis"]
    low, high = layout["range"]
    assert high - low <= LOG_TICKS_UP_TO and layout["tickvals"] == log_ticks(low, high)
    assert layout["tickmode"] == "array"
    assert len(layout["tickvals"]) >= 3 and layout["ticktext"] == [tick_label(v) for v in layout["tickvals"]]
    explorer.apply(DEFAULTS._replace(lr=3.0, N=1000, B=512))  # diverges: losses up to about 1e38
    layout = explorer.figures["loss"].plot_layout["yaxis"]
    low, high = layout["range"]
    assert layout.get("tickvals") is None and layout.get("ticktext") is None and high - low > 30
    assert layout.get("tickmode") is None  # a mode left at "array" draws no labels at all
    [state] = _figure_states(sent["loss"])  # with the range that needs it, in one message
    assert "tickvals" not in state["plot_layout"]["yaxis"] and "range" in state["plot_layout"]["yaxis"]
    explorer.apply(DEFAULTS)
    values = explorer.figures["loss"].plot_layout["yaxis"]["tickvals"]
    assert values and _figure_states(sent["loss"])[-1]["plot_layout"]["yaxis"]["tickvals"] == values


def test_log_tick_labels_are_the_numbers_they_mark():
    assert log_ticks(-0.2, 0.8) == [1.0, 2.0, 5.0]
    assert log_ticks(0.1, 2.9) == [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
    assert log_ticks(-3.5, -2.5) == [0.0005, 0.001, 0.002]
    assert log_ticks(float("nan"), 1.0) == [] and log_ticks(0.0, float("inf")) == []
    assert all(value > 0 for value in log_ticks(-330.0, -320.0))  # float("1e-324") is 0, whose log raised
    labels = {0.002: "0.002", 5.0: "5", 50.0: "50", 20000.0: "20000", 1e5: "10⁵", 2e5: "2×10⁵"}
    labels |= {1e-6: "10⁻⁶", 5e-7: "5×10⁻⁷", 1e38: "10³⁸"}
    assert {value: tick_label(value) for value in labels} == labels


def test_a_step_axis_over_a_few_steps_is_labelled_at_whole_steps(explorer):
    step_charts = [name for name, chart in CHARTS.items() if chart.steps_across]
    assert sorted(step_charts) == ["divergence", "loss", "sum_vs_mean", "trajectory"]
    for n in [1, 3, 10, 12, 100, 2, 1000, 5]:
        explorer.apply(DEFAULTS._replace(N=n))
        for name in step_charts:
            layout = explorer.figures[name].plot_layout["xaxis"]
            low, high = layout["range"]  # which may stay wider than N's (kept_range)
            few = high - low <= STEP_TICKS_UP_TO
            assert (layout.get("dtick"), layout.get("tickmode")) == ((1, "linear") if few else (None, None))
            if n in (1, 2):
                assert layout["dtick"] == 1


def test_a_marker_on_each_step_only_where_the_markers_stand_apart(explorer):
    # Each step's point gets a marker up to MARKERS_UP_TO steps; beyond, the markers run into a
    # beaded line (and Plotly restyles every one of them on every move).
    lines = {"trajectory": [0], "loss": [0], "landscape": [1], "sum_vs_mean": [0, 1]}
    for n, mode in ((MARKERS_UP_TO, "lines+markers"), (MARKERS_UP_TO + 1, "lines")):
        explorer.apply(DEFAULTS._replace(N=n, loss="sum"))
        for name, indexes in lines.items():
            for index in indexes:
                assert explorer.figures[name].data[index]["mode"] == mode, (name, index, n)
    explorer.apply(DEFAULTS)


def _longest_list(value) -> int:
    if isinstance(value, dict):
        return max((_longest_list(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return max([len(value), *(_longest_list(v) for v in value)])
    return 0


def test_points_travel_as_binary_buffers(explorer, sent):
    # A diverging run at N = 1000: each B move changes the ranges, so every trace's points go again
    # (an update, then a frame). Plotly sends an int64 or object array as a JSON list, which
    # ipywidgets then walks element by element (1.1 ms of a B move): steps are int32.
    explorer.apply(DEFAULTS._replace(N=1000, B=512, lr=3e-3, w0=5.0))
    for states in sent.values():
        states.clear()
    explorer.inputs["B"].value = 500
    assert all(sent.values())
    longest = {name: max(_longest_list(state) for state in states) for name, states in sent.items()}
    # A step marker, a box, tick values: not N points. (A map row has 64 cells; a B move sends none.)
    assert max(longest.values()) <= 64, longest


def test_every_message_and_state_is_json(explorer, sent):
    # NaN is not JSON. The map's diverged cells were NaN in a 2-D z, which Plotly sends as a list:
    # jupyter_client then packed each such message a second time ("nan" strings), with a warning that
    # this is deprecated.
    for lr in (1e-3, 0.05, 3.0):  # through divergence
        explorer.inputs["lr"].value = lr
    explorer.inputs["N"].value = 300  # a new map, with diverged cells
    explorer.inputs["w0"].value = 4.0
    explorer.stability.wait()
    assert any("z" in trace for state in sent["stability"] for trace in state.get("data", []))
    figures = [*explorer.figures.values(), explorer.stability.figure]  # their state opens each view
    states = [_remove_buffers(figure.get_state())[0] for figure in figures]
    for state in [*(s for states in sent.values() for s in states), *states]:
        json.dumps(state, allow_nan=False)  # raises ValueError on NaN or infinity


def test_the_projector_view_leaves_the_maps_box_as_thin_as_it_was():
    # Twice as thick, the box would hide most of the 8 px cell it marks.
    settings = DEFAULTS._replace(N=20)
    stability = Model().stability(settings)
    plain = STABILITY_CHART.build(stability, settings)
    large = STABILITY_CHART.build(stability, settings, widget=surface_maker(prepare=enlarge))
    widths = [BOX_OUTLINE["width"], BOX["width"]] * 2
    assert [shape.line.width for shape in plain.layout.shapes] == widths
    assert [shape["line"]["width"] for shape in large.plot_layout["shapes"]] == widths
    for i in (2, 3):  # the critical lr's line and its outline
        assert large.data[i]["line"]["width"] == 2 * plain.data[i].line.width
    large.close()


def test_a_layout_change_makes_new_dicts_along_its_path_only():
    # A figure's dicts are never changed in place (widgets.surface): what did not change is shared,
    # so the state compares and serializes cheaply, and the old figure stays as it was sent.
    layout = {"xaxis": {"range": [0, 1]}, "yaxis": {"type": "log"}}
    assert _with_path(layout, "zaxis.range", None) is layout  # nothing to unset
    assert _with_path(layout, "xaxis.dtick", None) is layout
    assert _with_path(layout, "xaxis.range", [0, 1]) is layout  # already so
    moved = _with_path(layout, "xaxis.range", [0, 2])
    assert (
        moved == {"xaxis": {"range": [0, 2]}, "yaxis": {"type": "log"}} and moved["yaxis"] is layout["yaxis"]
    )
    assert layout["xaxis"]["range"] == [0, 1]
    assert _with_path(layout, "yaxis.type", None) == {"xaxis": {"range": [0, 1]}, "yaxis": {}}
    with pytest.raises(ValueError, match="path"):
        _with_path(layout, "shapes[0].x0", 1.0)


def test_a_run_that_leaves_the_plane_is_drawn_leaving_it_with_an_arrow():
    model = Model()
    result = model.compute(DEFAULTS._replace(model="w,b", lr=10.0))
    run = result.histories["sum"]
    (w_low, w_high), (b_low, b_high) = result.plane.w_range, result.plane.b_range
    notes = CHARTS["plane"].layout_update(result, "sum")["annotations"]
    assert notes[0]["text"] == "sum: off the chart from step 1"
    arrow = notes[1]
    # From the start, inside, to where its first step crosses the frame's edge, on that step's line.
    assert (arrow["ax"], arrow["ay"]) == (float(run.params["w"][0]), float(run.params["b"][0]))
    on_edge = np.isclose([arrow["x"], arrow["x"], arrow["y"], arrow["y"]], [w_low, w_high, b_low, b_high])
    assert on_edge.any() and w_low <= arrow["x"] <= w_high and b_low <= arrow["y"] <= b_high
    step = np.array([run.params["w"][1] - arrow["ax"], run.params["b"][1] - arrow["ay"]], dtype=np.float64)
    drawn = np.array([arrow["x"] - arrow["ax"], arrow["y"] - arrow["ay"]])
    assert abs(step[0] * drawn[1] - step[1] * drawn[0]) < 1e-9 * np.linalg.norm(step) * np.linalg.norm(drawn)
    assert drawn @ step > 0
    # A run inside the frame has neither.
    assert (
        CHARTS["plane"].layout_update(model.compute(DEFAULTS._replace(model="w,b")), "sum")["annotations"]
        == []
    )
