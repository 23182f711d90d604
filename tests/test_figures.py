"""What the figures send to the browser: one message per figure per event, a data-only change as a
Plotly.animate frame without a redraw, fixed axis ranges that hold every drawn value, and no work
on the defaults the browser sends back."""

import copy
import json

import numpy as np
import plotly.graph_objects as go
import pytest
from ipywidgets.widgets.widget import _remove_buffers

from widgets import DEFAULTS, Explorer
from widgets.figures import (
    CHARTS,
    LOG_TICKS_UP_TO,
    MARKERS_UP_TO,
    STEP_TICKS_UP_TO,
    FigureWidget,
    axis_range,
    framed,
    kept_range,
    log_ticks,
    projector_widget,
    send,
    tick_label,
)
from widgets.model import MAP_LRS, Model
from widgets.stability import BOXES
from widgets.stability import CHART as STABILITY_CHART


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
    figures = {**explorer.figures, "stability": explorer.stability.figure}
    comms = {name: Recorder() for name in figures}
    for name, figure in figures.items():
        figure.comm = comms[name]
    yield {name: comm.sent for name, comm in comms.items()}
    for figure in figures.values():
        figure.comm = None


def _messages(states, kind):
    return [state[f"_py2js_{kind}"] for state in states if state.get(f"_py2js_{kind}") is not None]


def test_an_lr_move_is_one_frame_per_figure_without_a_redraw(explorer, sent):
    explorer.inputs["lr"].value = 0.0101  # may widen an axis, with room to spare
    for states in sent.values():
        states.clear()
    explorer.inputs["lr"].value = 0.0102  # the next step of the slider: the axes keep their ranges
    for name, states in sent.items():
        assert len(states) == 1, (name, [sorted(s) for s in states])  # counters ride along
        if name == "stability":
            continue
        (frame,) = _messages(states, "animate")
        assert frame["animation_opts"]["mode"] == "afterall"  # a frame holds only what changed
        assert states[0]["_last_trace_edit_id"] == frame["trace_edit_id"]
        assert frame["animation_opts"]["frame"]["redraw"] is False, name
        assert all(fields.keys() <= {"x", "y"} for fields in frame["style_data"]), name
        # Every frame carries both ranges: Plotly cancels an axis change that a later frame overtakes.
        assert frame["layout_data"] == framed(explorer.figures[name]), name
        assert set(frame["layout_data"]) == {"xaxis.range", "yaxis.range"}, name
    # The map's heatmaps are not sent again, only the points of the current setting's box on each
    # panel: a frame of two scatter traces, which the front end draws without the heatmaps' layer.
    (frame,) = _messages(sent["stability"], "animate")
    assert frame["style_traces"] == BOXES and frame["layout_data"] == {}
    assert frame["animation_opts"]["frame"]["redraw"] is False
    half = np.log10(MAP_LRS[1] / MAP_LRS[0]) / 2  # half a cell
    centre = np.log10(0.0102)
    for fields in frame["style_data"]:
        assert set(fields) == {"x"}  # B, and so the box's y, stayed
        np.testing.assert_allclose(fields["x"], [centre, *[centre + half] * 2, *[centre - half] * 2, centre])
    # The numbers that change with lr are in the captions, not in a title Plotly would redraw for.
    assert "lr = 0.0102" in explorer.captions["sum_vs_mean"].value


def test_a_view_change_redraws_and_a_playback_step_moves_one_trace(explorer, sent):
    # Traces shown and hidden: Plotly.animate cannot draw that without a redraw.
    explorer.inputs["loss"].value = "mean" if DEFAULTS.loss != "mean" else "sum"
    states = sent["trajectory"]
    (update,) = _messages(states, "update")
    assert "visible" in update["style_data"]
    # Then every trace's points again, as a frame: one sent before and still waiting is overtaken.
    assert [sorted(state) for state in states][-1] == [
        "_last_layout_edit_id",
        "_last_trace_edit_id",
        "_py2js_animate",
    ]
    frame = _messages(states, "animate")[-1]
    figure = explorer.figures["trajectory"]
    assert frame["style_traces"] == [i for i, trace in enumerate(figure._data) if "x" in trace]
    assert frame["layout_data"] == framed(figure)
    for states in sent.values():
        states.clear()
    # At step N the loss and per-step factor charts have no current point: Plotly hides a trace
    # without points, and only a redraw shows it again (a frame left the loss chart's lines drawn
    # 13% too tall), so their markers reappear in a Plotly.update. The others' move in a frame.
    markers = {name: len(chart.styles) - 1 for name, chart in CHARTS.items()}
    empty = {name for name, m in markers.items() if len(explorer.figures[name]._data[m]["x"]) == 0}
    assert empty == {"loss", "divergence"}
    explorer.play.value = 3
    for name in CHARTS:
        updates = _messages(sent[name], "update")
        if name in empty:
            (update,) = updates
            assert update["style_traces"] == [markers[name]] and len(update["style_data"]["x"][0]) == 1
        else:
            assert updates == []
            (frame,) = _messages(sent[name], "animate")
            assert frame["style_traces"] == [markers[name]]  # the step marker
            assert frame["animation_opts"]["frame"]["redraw"] is False
            assert frame["layout_data"] == framed(explorer.figures[name])
    assert sent["stability"] == []


def test_ranges_the_browser_writes_back_are_not_trusted(explorer, sent):
    # The browser reports every range it draws, and a visitor can report anything.
    figure = explorer.figures["trajectory"]
    before = dict(framed(figure))
    figure._js2py_relayout = {"relayout_data": {"yaxis.range": [0, "x"]}, "source_view_id": "visitor"}
    figure._js2py_relayout = {"relayout_data": {"xaxis.autorange": True}, "source_view_id": "visitor"}
    assert framed(figure) == before
    explorer.inputs["lr"].value = 0.0124
    frame = _messages(sent["trajectory"], "animate")[-1]
    assert frame["animation_opts"]["frame"]["redraw"] is False  # the axes are still this module's
    low, high = frame["layout_data"]["yaxis.range"]
    assert low < high and figure._layout["yaxis"]["range"] == [low, high]
    assert figure._layout["xaxis"]["autorange"] is False


def test_nothing_is_sent_when_nothing_changed(explorer, sent):
    figure = explorer.figures["trajectory"]
    data = [{key: figure._data[i][key] for key in ("x", "y")} for i in range(2)]
    send(figure, data, [0, 1], dict(framed(figure)))
    assert sent["trajectory"] == []


def _shown_values(figure, axis):
    values = [
        np.asarray(trace[axis], dtype=np.float64)
        for trace in figure._data
        if trace.get("visible", True) is not False and trace.get(axis) is not None
    ]
    return np.concatenate(values) if values else np.empty(0)


def assert_every_value_in_frame(explorer):
    """Every drawable value of every chart with computed ranges lies inside its axes."""
    for name, chart in CHARTS.items():
        if chart.own_ranges:
            continue  # the landscape's frame is the loss curve's; a diverging path leaves it
        layout = explorer.figures[name]._layout
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
    low, high = explorer.figures["trajectory"]._layout["yaxis"]["range"]
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
    # factor of 3 in lr. Below the divergence limit every chart keeps its ranges, so each press is
    # drawn as frames; before, the per-step factor's range shrank and grew back on every press,
    # and the loss chart's at small lr, each time a full redraw (Plotly.update).
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
            assert _messages(states, "update") == [], (position, name)
            assert len(_messages(states, "animate")) == 4, (position, name)


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


def test_the_browsers_defaults_are_not_merged_back():
    figure = FigureWidget(data=[{"type": "scatter", "y": [1.0, 2.0]}])
    before = copy.deepcopy((figure._data_defaults, figure._layout_defaults))
    figure._js2py_traceDeltas = {
        "trace_deltas": [{"uid": figure.data[0].uid, "y": np.arange(2.0)}],
        "trace_edit_id": 0,
    }
    figure._js2py_layoutDelta = {"layout_delta": {"width": 700}, "layout_edit_id": 0}
    assert (figure._data_defaults, figure._layout_defaults) == before
    assert list(figure.data[0].y) == [1.0, 2.0]


def test_the_loss_charts_log_axis_labels_a_wide_range_in_whole_decades(explorer, sent):
    # 1, 2 and 5 in each decade, written in full, while the range spans a few; a diverging run spans
    # about 40, where that was 124 labels drawn over each other: Plotly then spaces the labels itself.
    layout = explorer.figures["loss"]._layout["yaxis"]
    low, high = layout["range"]
    assert high - low <= LOG_TICKS_UP_TO and layout["tickvals"] == log_ticks(low, high)
    assert layout["tickmode"] == "array"
    assert len(layout["tickvals"]) >= 3 and layout["ticktext"] == [tick_label(v) for v in layout["tickvals"]]
    explorer.apply(DEFAULTS._replace(lr=3.0, N=1000, B=512))  # diverges: losses up to about 1e38
    low, high = layout["range"]
    assert layout.get("tickvals") is None and layout.get("ticktext") is None and high - low > 30
    assert layout.get("tickmode") is None  # a mode left at "array" draws no labels at all
    [update] = _messages(sent["loss"], "update")  # with the range that needs it, in one message
    assert update["layout_data"]["yaxis.tickvals"] is None and "yaxis.range" in update["layout_data"]
    explorer.apply(DEFAULTS)
    values = explorer.figures["loss"]._layout["yaxis"]["tickvals"]
    assert values and _messages(sent["loss"], "update")[-1]["layout_data"]["yaxis.tickvals"] == values


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
            layout = explorer.figures[name]._layout["xaxis"]
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
                assert explorer.figures[name]._data[index]["mode"] == mode, (name, index, n)
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
    assert any("z" in (state.get("_py2js_update") or {}).get("style_data", {}) for state in sent["stability"])
    figures = [*explorer.figures.values(), explorer.stability.figure]  # their state opens each view
    states = [_remove_buffers(figure.get_state())[0] for figure in figures]
    for state in [*(s for states in sent.values() for s in states), *states]:
        json.dumps(state, allow_nan=False)  # raises ValueError on NaN or infinity


def test_the_maps_box_moves_as_a_frame_after_a_double_click(explorer, sent):
    # A double-click on the map autoranges its axes (the browser sends that back). The heatmaps still
    # bound them and the box moves inside, so an lr move stays a frame of the box's two traces
    # instead of a redraw of the whole map.
    figure = explorer.stability.figure
    figure.plotly_relayout({"xaxis.autorange": True, "yaxis.autorange": True})
    sent["stability"].clear()
    explorer.inputs["lr"].value = 0.0102
    (frame,) = _messages(sent["stability"], "animate")
    assert frame["style_traces"] == BOXES
    assert _messages(sent["stability"], "update") == []


def test_the_projector_view_leaves_the_maps_box_as_thin_as_it_was():
    # Twice as thick, the box would hide most of the 8 px cell it marks.
    settings = DEFAULTS._replace(N=20)
    stability = Model().stability(settings)
    plain = STABILITY_CHART.build(stability, settings, widget=go.Figure)
    large = STABILITY_CHART.build(stability, settings, widget=projector_widget(go.Figure))
    for box in BOXES:
        assert large.data[box].line.width == plain.data[box].line.width == 3
    assert large.data[2].line.width == 2 * plain.data[2].line.width  # the critical lr's line
