"""What the figures send to the browser: one message per figure per event, a data-only change as a
Plotly.animate frame without a redraw, fixed axis ranges that hold every drawn value, and no work
on the defaults the browser sends back."""

import numpy as np
import pytest

from widgets import DEFAULTS, Explorer
from widgets.figures import CHARTS, FigureWidget, axis_range, kept_range, send


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
    explorer.inputs["lr"].value = 0.0123
    for name, states in sent.items():
        assert len(states) == 1, (name, [sorted(s) for s in states])  # counters ride along
        (frame,) = _messages(states, "animate")
        assert frame["animation_opts"]["frame"]["redraw"] is False, name
        assert frame["animation_opts"]["mode"] == "afterall"  # a frame holds only what changed
        assert all(fields.keys() <= {"x", "y"} for fields in frame["style_data"]), name
        assert set(frame["layout_data"]) <= {"xaxis.range", "yaxis.range"}, name
        assert states[0]["_last_trace_edit_id"] == frame["trace_edit_id"]
    # The map's heatmaps stay; only the current setting's box moves.
    (frame,) = _messages(sent["stability"], "animate")
    assert frame["style_traces"] == [6, 7]
    # The numbers that change with lr are in the captions, not in a title Plotly would redraw for.
    assert "lr = 0.0123" in explorer.captions["sum_vs_mean"].value


def test_a_view_change_redraws_and_a_playback_step_moves_one_trace(explorer, sent):
    # Traces shown and hidden: Plotly.animate cannot draw that without a redraw.
    explorer.inputs["loss"].value = "mean" if DEFAULTS.loss != "mean" else "sum"
    frame = _messages(sent["trajectory"], "animate")[-1]
    assert frame["animation_opts"]["frame"]["redraw"] is True
    assert any("visible" in fields for fields in frame["style_data"])
    for states in sent.values():
        states.clear()
    explorer.play.value = 3
    for name in CHARTS:
        (frame,) = _messages(sent[name], "animate")
        assert frame["style_traces"] == [len(CHARTS[name].styles) - 1]  # the step marker
        assert frame["layout_data"] == {} and frame["animation_opts"]["frame"]["redraw"] is False
    assert sent["stability"] == []


def test_nothing_is_sent_when_nothing_changed(explorer, sent):
    figure = explorer.figures["trajectory"]
    data = [{key: figure._data[i][key] for key in ("x", "y")} for i in range(2)]
    send(figure, data, [0, 1], {"xaxis.range": list(figure._layout["xaxis"]["range"])})
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
    assert kept_range([0.0, 10.0], [-1.0, 9.0]) == [-1.0, 9.0]  # a value would leave it
    assert kept_range(None, [1.0, 2.0]) == [1.0, 2.0]


def test_axis_range_of_values_that_cannot_all_be_drawn():
    assert axis_range([np.array([0.0, 10.0])], pad=0.05) == [-0.5, 10.5]
    assert axis_range([np.array([np.nan, 1.0, np.inf]), [3.0]], pad=0.0) == [1.0, 3.0]
    assert axis_range([np.array([0.0, -1.0, 10.0, 1000.0])], log=True, pad=0.0) == [1.0, 3.0]
    assert axis_range([[5.0]]) == [4.0, 6.0]  # one value: a fifth of it either side
    assert axis_range([[0.0]]) == [-1.0, 1.0]
    assert axis_range([[100.0]], log=True) == [1.5, 2.5]
    assert axis_range([np.array([np.nan]), []]) is None
    assert axis_range([[3e38, -3e38]], pad=0.05) == pytest.approx([-3.3e38, 3.3e38])


def test_the_browsers_defaults_are_not_merged_back():
    figure = FigureWidget(data=[{"type": "scatter", "y": [1.0, 2.0]}])
    before = (figure._data_defaults, figure._layout_defaults)
    figure._js2py_traceDeltas = {
        "trace_deltas": [{"uid": figure.data[0].uid, "y": np.arange(2.0)}],
        "trace_edit_id": 0,
    }
    figure._js2py_layoutDelta = {"layout_delta": {"width": 700}, "layout_edit_id": 0}
    assert (figure._data_defaults, figure._layout_defaults) == before
    assert list(figure.data[0].y) == [1.0, 2.0]
