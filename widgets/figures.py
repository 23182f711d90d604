"""The explorer's five Plotly charts, as specs: no transport, no page layout.

Each chart is a list of trace styles (fixed), a `series` function giving the changing fields of
every trace but the last for a result and a view (which loss is shown), and a `marker` function
for the last trace, the current step, which playback updates alone. The same functions build the
chart with a maker (a go.Figure, or a widgets.surface.Surface) and update it in place
(widgets.surface.send): when only points moved on fixed axes, the browser moves them without
redrawing the chart.
"""

from __future__ import annotations

import functools

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from widgets.axes import (
    LOG_TICKS_UP_TO,
    RANGE_PAD,
    STEP_TICKS_UP_TO,
    SignedLog,
    axis_range,
    figure_scale,
    log_ticks,
    tick_label,
)
from widgets.model import LOSSES, Result, kept_range, overlaid
from widgets.surface import send

# Okabe-Ito: distinguishable with every common colour-vision deficiency; its orange darkened to #B87700
# so that every line stands out from the white plot by 3:1 at least (WCAG 1.4.11; #E69F00 has 2.2:1).
COLORS = {
    "sum": "#0072B2",
    "mean": "#B87700",
    "optimum": "#009E73",
    "diverged": "#D55E00",
    "step": "#000000",
    "optimizer": "#AA4499",  # Paul Tol's purple, 5.3:1 on white: the chosen optimizer's run
}
# The mean loss's lines are dashed as well: sum and mean are told apart without their colours, and
# where the two lines coincide (B = 1) both stay visible.
DASH = {"sum": "solid", "mean": "dash"}
GREY = "#767676"  # the landscape's curve: the lightest grey with 4.5:1 on white


def shown(view: str, loss: str) -> bool:
    return view in (loss, "both")


def first_shown(view: str) -> str:
    """The loss whose current step is marked: the sum when it is shown."""
    return "sum" if shown(view, "sum") else "mean"


def plottable(values, *, positive: bool = False) -> np.ndarray:
    """float64 values with NaN where a value cannot be drawn (non-finite, or <= 0 on a log axis).

    Plotly draws NaN as a gap, and a float64 array travels to the browser as one binary buffer
    instead of a list validated element by element.
    """
    values = np.array(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        values[~np.isfinite(values) | ((values <= 0) if positive else False)] = np.nan
    return values


def _at(values, index):
    """values[index] as a one-point list, empty when out of range or not finite."""
    if 0 <= index < len(values) and np.isfinite(values[index]):
        return [float(values[index])]
    return []


def _point(x, y) -> dict:
    """A one-point trace at (x, y[0]), or an empty one when y is empty."""
    return {"x": [x] if y else [], "y": y}


def _steps(n: int) -> np.ndarray:
    """0, 1, ..., n - 1 as int32: Plotly sends an int64 array as a JSON list, which ipywidgets then
    walks element by element, and int32 as one binary buffer."""
    return np.arange(n, dtype=np.int32)


def _diverged_point(history, drawn: np.ndarray):
    """(step, value) of the first weight past the divergence limit, or of the last finite one
    before it; None when the run did not diverge or nothing there can be drawn."""
    k = history.diverged_at
    if k is None:
        return None
    index = k + 1 if k + 1 < len(drawn) and np.isfinite(drawn[k + 1]) else k
    return (index, float(drawn[index])) if np.isfinite(drawn[index]) else None


MARKERS_UP_TO = 50  # steps; beyond, a line's points are drawn without a marker each


def _mode(n: int) -> str:
    """Markers on the points of short runs only: at N = 1000 they overlap into a thick line, and each
    is an SVG element that Plotly restyles on every update."""
    return "lines+markers" if n <= MARKERS_UP_TO else "lines"


def _line(loss, **extra):
    return {
        "mode": "lines+markers",
        "line": {"color": COLORS[loss], "width": 2, "dash": DASH[loss]},
        "marker": {"size": 4},
        **extra,
    }


# The step and divergence markers sit on the data's extremes (step N, step 0, the last w), where the
# axes leave RANGE_PAD of the span: on a phone less than a marker's 7 px radius, 8 with its line (5.4
# px beside the trajectory's step N at 390 px, 2.6 px in the projector view), so Plotly's clip of
# the plot area cut them in half. They are drawn whole, over the axes' edge; Plotly hides a marker
# outside the axes' ranges (the landscape's, where a diverging run leaves the frame).
_STEP_MARKER = {
    "mode": "markers",
    "marker": {"size": 14, "color": "rgba(0,0,0,0)", "line": {"color": COLORS["step"], "width": 2.5}},
    "name": "current step",
    "showlegend": False,
    "cliponaxis": False,
}
_DIVERGED_MARKER = {
    "mode": "markers",
    "marker": {"size": 14, "symbol": "x", "color": COLORS["diverged"]},
    "showlegend": False,
    "cliponaxis": False,
}


TRACE_TYPES = ("scatter", "heatmap", "bar")
"""The trace types of every chart here (the explorer's, the map's, the panels under the hood)."""


@functools.cache
def template() -> dict:
    """Plotly's plotly_white template, with the trace defaults of TRACE_TYPES only. One dict,
    shared by every layout here: Plotly copies it into each figure, and nothing modifies it (a
    copy per call cost 0.6 ms, and `Chart.update` builds a layout on every move).

    Every figure carries its template in its layout, and plotly_white holds defaults for 24 trace
    types: 6 KB of every chart's widget state, and about 5 ms of Python to validate per figure
    (47 against 19 ms for six). The charts are drawn the same: a template's defaults for a trace
    type apply only to traces of that type."""
    full = pio.templates["plotly_white"].to_plotly_json()
    return {"layout": full["layout"], "data": {kind: full["data"][kind] for kind in TRACE_TYPES}}


MARGIN = {"l": 60, "r": 20, "t": 60, "b": 53}
"""The charts' margins in px: as wide as Plotly's automargin makes them for the axes' tick labels
and titles. A margin that Plotly has to widen costs the chart a second drawing when it is first drawn
(Plotly draws it again with the new margins): 149 ms of a visit's main thread in Chromium on 2
cores, for the page's six charts, when the bottom margin was 45 px (a CPU profile)."""

LEGEND_ROW = 31
"""The px that one row of legend below the x axis (`legend.y` -0.18) adds to a chart's bottom margin
(`legend_row`). A legend that wraps to two rows (a phone) widens the margin further, as before."""


def legend_row(showlegend) -> int:
    """LEGEND_ROW for a layout whose legend may show below its x axis, 0 for one that hides it
    (`showlegend` False). A chart whose legend Plotly hides for now (one trace: the loss per step
    of one loss) keeps the row, so that its x axis stays level with its neighbour's and does not
    move when the legend comes."""
    return 0 if showlegend is False else LEGEND_ROW


TITLED_MARGIN = {**MARGIN, "t": 75}
"""The margins of a chart whose title has two lines, a short title and a smaller <sup> line under
it: Plotly does not wrap titles, and a long one was cut off on a phone or on a projector."""


def base_layout(
    title: str, x_title: str, y_title: str, y_type: str = "linear", *, margin: dict = MARGIN, **extra
) -> dict:
    """A chart's layout. `margin` sets some of MARGIN's sides; the bottom gains a legend row
    (`legend_row`) unless `extra` hides the legend."""
    margin = {**MARGIN, **margin}
    margin["b"] += legend_row(extra.get("showlegend"))
    return {
        "title": {"text": title, "font": {"size": 15}},
        "xaxis": {"title": {"text": x_title}},
        "yaxis": {"title": {"text": y_title}, "type": y_type},
        "template": template(),
        # No width: each chart takes the width of its place on the page (widgets.layout), which
        # Plotly measures when it first draws the chart, and the chart's front end again whenever
        # that place changes width (widgets/surface.js).
        "height": 380,
        "margin": margin,
        "legend": {"orientation": "h", "y": -0.18},
        "hovermode": "closest",
        **extra,
    }


class Chart:
    """A chart: its name, trace styles, layout, and the data of every trace.

    Axes have fixed ranges, computed here from the drawn values (`ranges`), so that a change of
    data that the ranges still hold moves the traces alone in the browser (widgets/surface.js)."""

    name = ""
    wide = False  # True: the chart takes a row of the page to itself (widgets.layout.side_by_side)
    steps_across = True  # the x axis counts steps: whole numbers
    styles: list[dict] = []
    own_ranges = False  # True: `layout` and `layout_update` give the axis ranges themselves
    signed_log = False  # True: a diverging run's weights are drawn on a SignedLog y axis (`scale`)
    floors: dict[str, float] = {}  # {"yaxis": 0.0}: that axis starts at 0 (see axis_range)

    def layout(self, result: Result, view: str) -> dict:
        raise NotImplementedError

    def series(self, result: Result, view: str) -> list[dict]:
        """Fields of every trace but the step marker."""
        raise NotImplementedError

    def marker(self, result: Result, view: str, step: int) -> dict:
        """Fields of the step marker, the last trace."""
        raise NotImplementedError

    def data(self, result: Result, view: str, step: int) -> list[dict]:
        return [*self.series(result, view), self.marker(result, view, step)]

    def ranges(self, data: list[dict], layout: dict, previous: dict | None = None) -> dict:
        """{"xaxis.range": [low, high], "yaxis.range": ...} around the visible traces of `data`,
        on the axis types of `layout`; `previous` (the ranges the chart has now) keeps a range
        the values still fill (`kept_range`), and stands in where nothing can be drawn. A step axis
        is never kept: its range is the run's steps, so a new N (a preset's 60 after 100) fits."""
        if self.own_ranges:
            return {}
        shown = [trace for trace in data if trace.get("visible", True) is not False]
        out = {}
        for axis, pad in RANGE_PAD.items():
            before = (previous or {}).get(f"{axis}.range")
            new = axis_range(
                [trace[axis[0]] for trace in shown if axis[0] in trace],
                log=layout.get(axis, {}).get("type") == "log",
                pad=pad,
                floor=self.floors.get(axis),
            )
            if new is None:
                out[f"{axis}.range"] = before or [0.0, 1.0]
            elif axis == "xaxis" and self.steps_across:
                out[f"{axis}.range"] = new
            else:
                out[f"{axis}.range"] = kept_range(before, new)
        return out

    def layout_update(self, result: Result, view: str) -> dict:
        """The layout properties that change with the result: none but the axis ranges, by default."""
        return {}

    def scale(self, result: Result, view: str):
        """The y axis's SignedLog scale for this result, or None for a plain axis."""
        return None

    def ticks(self, ranges: dict, scale=None) -> dict:
        """Layout paths that follow the axis ranges (`ranges`' result), None for Plotly's default: a
        step axis over a few steps is labelled at each one (Plotly's own labels there were 0.5, 1.5);
        a SignedLog `scale` labels the y axis with the weights, not the drawn values.

        The tick mode goes with the ticks both ways (None unsets both): a step axis that went from
        1 step to 1000 with dtick 1 kept would draw 1001 labels (40 s of the browser's main thread)."""
        out = {}
        if self.steps_across:
            low, high = ranges["xaxis.range"]
            few = high - low <= STEP_TICKS_UP_TO
            out = {"xaxis.tickmode": "linear" if few else None, "xaxis.dtick": 1 if few else None}
        if scale is not None:
            values, labels = scale.ticks(*ranges["yaxis.range"])
            out.update({"yaxis.tickmode": "array", "yaxis.tickvals": values, "yaxis.ticktext": labels})
            out["meta.signed_log"] = scale.c  # which scale the drawn values are in (figure_scale)
        elif self.signed_log:
            out.update({"yaxis.tickmode": None, "yaxis.tickvals": None, "yaxis.ticktext": None})
            out["meta.signed_log"] = None
        return out

    def build(self, result: Result, view: str, step: int, widget=go.Figure):
        """The chart as `widget(data=..., layout=...)` makes it: a go.Figure, or a Surface
        (widgets.surface.surface_maker)."""
        data = self.data(result, view, step)
        layout = self.layout(result, view)
        ranges = self.ranges(data, layout)
        for path, value in {**ranges, **self.ticks(ranges, self.scale(result, view))}.items():
            axis, _, key = path.partition(".")
            if value is not None:
                layout.setdefault(axis, {})[key] = value
        traces = [go.Scatter(**{**style, **fields}) for style, fields in zip(self.styles, data, strict=True)]
        return widget(data=traces, layout=layout)

    def update(self, figure, result: Result, view: str, step: int) -> None:
        """Every trace, the changing layout and the axis ranges of `figure`, a Surface
        (widgets.surface.send)."""
        data = self.data(result, view, step)
        layout = self.layout_update(result, view)
        previous = {f"{axis}.range": figure.get(f"{axis}.range") for axis in RANGE_PAD}
        scale = self.scale(result, view)
        if scale != figure_scale(figure):
            previous = {}  # another scale: the ranges kept are in the other one's units
        ranges = self.ranges(data, self.layout(result, view), previous)
        layout.update({**ranges, **self.ticks(ranges, scale)})
        send(figure, data, range(len(self.styles)), layout)

    def update_marker(self, figure, result: Result, view: str, step: int) -> None:
        """The step marker alone (playback), within the axes as they are."""
        send(figure, [self.marker(result, view, step)], [len(self.styles) - 1])


# w per step for each loss, and w* as a dashed line: the trajectory and sum-vs-mean charts.
_WEIGHTS_AND_OPTIMUM = [
    _line("sum", name="w, sum loss", hovertemplate="step %{x}<br>w = %{y:.6g}<extra>sum</extra>"),
    _line("mean", name="w, mean loss", hovertemplate="step %{x}<br>w = %{y:.6g}<extra>mean</extra>"),
    {
        "mode": "lines",
        "name": "w* (least squares)",
        "line": {"color": COLORS["optimum"], "dash": "dash"},
        "hovertemplate": "w* = %{y:.6g}<extra></extra>",
    },
]


def _weights(style: dict, values, scale: SignedLog | None) -> dict:
    """The fields of a weight trace of `style`: `values` (an array, or a list for a few points)
    drawn on `scale` (None: as they are), its hover naming the weights themselves (customdata) when
    they are drawn transformed."""
    template = style["hovertemplate"]
    if scale is None:
        return {"y": values, "customdata": None, "hovertemplate": template}
    return {
        "y": scale(values),
        "customdata": values,
        "hovertemplate": template.replace("%{y", "%{customdata"),
    }


def _scale_words(scale: SignedLog | None, y_title: str) -> dict:
    """The layout paths that say which scale a weight axis has: its title, and a note in the plot's
    top left corner for a SignedLog one (an empty list of notes for a plain axis)."""
    if scale is None:
        return {"yaxis.title.text": y_title, "annotations": []}
    text = (
        f"signed log scale: even from −{tick_label(scale.c)} to {tick_label(scale.c)},<br>"
        "then each gridline 10 times farther from 0"
    )
    return {"yaxis.title.text": f"{y_title} (signed log)", "annotations": [note(text, "left")]}


def note(text: str, side: str) -> dict:
    """A note in the plot's top `side` ("left" or "right") corner: a Plotly annotation, on a
    white ground over the lines it may cross."""
    return {
        "xref": "paper",
        "yref": "paper",
        "x": 0.01 if side == "left" else 0.99,
        "y": 0.99,
        "xanchor": side,
        "yanchor": "top",
        "showarrow": False,
        "align": side,
        "bgcolor": "rgba(255,255,255,0.85)",
        "font": {"size": 11},
        "text": text,
    }


def _with_paths(layout: dict, paths: dict) -> dict:
    """`layout` with the dotted `paths` set in place (for a layout being built)."""
    for path, value in paths.items():
        *parents, key = path.split(".")
        node = layout
        for part in parents:
            node = node.setdefault(part, {})
        node[key] = value
    return layout


def _diverging_scale(result: Result, runs) -> SignedLog | None:
    """A SignedLog scale when any of `runs` (core histories) diverged, else None."""
    if any(h.diverged_at is not None for h in runs):
        return SignedLog.around(result.settings.w0, result.w_star)
    return None


class WeightChart(Chart):
    """A chart of the weight per step: a plain axis, or a SignedLog one when a run it draws diverges
    (`scale`), said in its axis title and a note."""

    signed_log = True
    title = ""

    def layout(self, result, view):
        layout = base_layout(self.title, "step", "weight w", margin=TITLED_MARGIN)
        return _with_paths(layout, self.layout_update(result, view))

    def layout_update(self, result, view):
        return _scale_words(self.scale(result, view), "weight w")


class Trajectory(WeightChart):
    name = "trajectory"
    styles = [
        *_WEIGHTS_AND_OPTIMUM,
        # x counts steps taken: the weight past the limit that step k produced stands at k + 1, where
        # the status and the loss chart say "step k". "diverged: step k + 1" read as a contradiction.
        {
            **_DIVERGED_MARKER,
            "name": "diverged",
            "hovertemplate": "diverged: w after %{x} steps = %{y:.4g}<extra></extra>",
        },
        # The chosen optimizer and schedule from the same w0 on the same batches, against plain SGD.
        {
            "mode": "lines",
            "line": {"color": COLORS["optimizer"], "width": 3, "dash": "dot"},
            "hovertemplate": "step %{x}<br>w = %{y:.6g}",  # and the trace's name
        },
        {**_STEP_MARKER, "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>current</extra>"},
    ]

    title = (
        "Trajectory: the carry w after each step<br><sup>w* (dashed): the weight that fits all the data "
        "best</sup>"
    )

    def scale(self, result, view):
        runs = [result.histories[loss] for loss in LOSSES if shown(view, loss)]
        if overlaid(result.settings):
            runs.append(result.optimized[first_shown(view)])
        return _diverging_scale(result, runs)

    def series(self, result, view):
        s = result.settings
        scale = self.scale(result, view)
        steps = _steps(s.N + 1)
        drawn = {loss: plottable(result.histories[loss].weights) for loss in LOSSES}
        points = [
            _diverged_point(result.histories[loss], drawn[loss]) for loss in LOSSES if shown(view, loss)
        ]
        points = [p for p in points if p is not None]
        styles = self.styles
        return [
            {
                "x": steps,
                **_weights(styles[0], drawn["sum"], scale),
                "visible": shown(view, "sum"),
                "mode": _mode(s.N),
            },
            {
                "x": steps,
                **_weights(styles[1], drawn["mean"], scale),
                "visible": shown(view, "mean"),
                "mode": _mode(s.N),
            },
            {"x": [0, s.N], **_weights(styles[2], [result.w_star] * 2, scale)},
            {"x": [k for k, _ in points], **_weights(styles[3], [v for _, v in points], scale)},
            self._overlay(result, view, scale),
        ]

    def _overlay(self, result, view, scale) -> dict:
        """The chosen optimizer's weights for the first loss shown; hidden for plain SGD."""
        s = result.settings
        if not overlaid(s):
            return {"x": [], "y": [], "customdata": None, "visible": False, "name": "another optimizer"}
        loss = first_shown(view)
        return {
            "x": _steps(s.N + 1),
            **_weights(self.styles[4], plottable(result.optimized[loss].weights), scale),
            "visible": True,
            "name": f"w, {run_name(s)} ({loss} loss)",
        }

    def marker(self, result, view, step):
        here = _at(result.histories[first_shown(view)].weights, step)
        point = _point(step, here)
        return {**point, **_weights(self.styles[-1], here, self.scale(result, view))}


def run_name(s) -> str:
    """The overlaid run in words: "adam", "momentum 0.9", "sgd, cosine schedule"."""
    name = f"{s.optimizer} {s.momentum:g}" if s.optimizer in ("momentum", "nesterov") else s.optimizer
    return name if s.schedule == "constant" else f"{name}, {s.schedule} schedule"


class LossPerStep(Chart):
    name = "loss"
    styles = [
        _line("sum", name="batch loss, sum", hovertemplate="step %{x}<br>loss = %{y:.4g}<extra>sum</extra>"),
        _line(
            "mean", name="batch loss, mean", hovertemplate="step %{x}<br>loss = %{y:.4g}<extra>mean</extra>"
        ),
        {**_DIVERGED_MARKER, "name": "diverged", "hovertemplate": "diverged: step %{x}<extra></extra>"},
        # A loss of exactly 0 (an exact fit) has no place on a log axis: the line stopped there as if
        # the run had ended. Such steps are marked on the axis's floor instead.
        {
            "mode": "markers",
            "name": "loss exactly 0",
            "marker": {"size": 9, "symbol": "triangle-down", "color": COLORS["step"]},
            "hovertemplate": "step %{x}<br>loss = 0 (an exact fit)<extra></extra>",
            "cliponaxis": False,
            "showlegend": False,  # said by a note in the plot when there are any (`layout_update`)
        },
        {**_STEP_MARKER, "hovertemplate": "step %{x}<br>loss = %{y:.4g}<extra>current</extra>"},
    ]

    def layout(self, result, view):
        layout = base_layout(
            "Loss per step<br><sup>each batch's loss at the weight its step used</sup>",
            "step",
            "batch loss (log)",
            y_type="log",
            margin=TITLED_MARGIN,
        )
        layout["yaxis"]["exponentformat"] = "power"  # 10⁵, 10¹⁰, 10¹⁵ (Plotly's own: 100k, 10B, 10¹⁵)
        return _with_paths(layout, self.layout_update(result, view))

    def layout_update(self, result, view):
        zeros = zero_losses(result, view)
        if not zeros.size:
            return {"annotations": []}
        at = f"step {zeros[0]}" if zeros.size == 1 else f"{zeros.size} steps from step {zeros[0]}"
        text = f"▼ loss exactly 0 ({at}):<br>a log axis has no 0, so it sits on the floor"
        return {"annotations": [note(text, "right")]}

    def ticks(self, ranges, scale=None):
        """Labels at 1, 2 and 5 in each decade, written in full (Plotly's "D2" labels wrote 20 and 50
        as a small 2 and 5 above 10), not at every digit as Plotly labels a range of one or two
        decades; over more decades (a diverging run spans 40), Plotly's own spacing, which thins the
        labels out to whole decades as the range grows: 1, 2 and 5 in each of 40 decades were 124
        labels drawn over each other. A range too narrow for three of them gets Plotly's own too."""
        low, high = ranges["yaxis.range"]  # log10 units
        values = log_ticks(low, high) if high - low <= LOG_TICKS_UP_TO else []
        values = values if len(values) >= 3 else None
        return {
            **super().ticks(ranges, scale),
            "yaxis.tickmode": None if values is None else "array",
            "yaxis.tickvals": values,
            "yaxis.ticktext": None if values is None else [tick_label(v) for v in values],
        }

    def series(self, result, view):
        steps = _steps(result.settings.N)
        drawn = {loss: plottable(result.histories[loss].losses, positive=True) for loss in LOSSES}
        marks = []
        for loss in LOSSES:
            k = result.histories[loss].diverged_at
            if shown(view, loss) and k is not None and _at(drawn[loss], k):
                marks.append((k, float(drawn[loss][k])))
        zeros = zero_losses(result, view)
        floor = zero_floor(result, view)
        return [
            {"x": steps, "y": drawn["sum"], "visible": shown(view, "sum"), "mode": _mode(result.settings.N)},
            {
                "x": steps,
                "y": drawn["mean"],
                "visible": shown(view, "mean"),
                "mode": _mode(result.settings.N),
            },
            {"x": [k for k, _ in marks], "y": [v for _, v in marks]},
            {"x": zeros, "y": np.full(len(zeros), floor)} if zeros.size else {"x": [], "y": []},
        ]

    def marker(self, result, view, step):
        here = _at(result.histories[first_shown(view)].losses, step)
        if here and here[0] == 0:
            return _point(step, [zero_floor(result, view)])  # on the floor, with the step's ▼
        return _point(step, here if here and here[0] > 0 else [])


def zero_losses(result: Result, view: str) -> np.ndarray:
    """The steps (int32) at which a shown run's batch loss is exactly 0."""
    steps = [np.flatnonzero(result.histories[loss].losses == 0) for loss in LOSSES if shown(view, loss)]
    return np.unique(np.concatenate(steps)).astype(np.int32) if steps else np.empty(0, np.int32)


def zero_floor(result: Result, view: str) -> float:
    """Where the loss chart draws a loss of 0: a third of the smallest positive loss shown (1e-3 when
    there is none), so that the axis's range, computed from the drawn values, holds it at its foot."""
    drawn = [plottable(result.histories[loss].losses, positive=True) for loss in LOSSES if shown(view, loss)]
    positive = np.concatenate(drawn) if drawn else np.empty(0)
    positive = positive[np.isfinite(positive)]
    return float(positive.min()) / 3 if positive.size else 1e-3


class Landscape(Chart):
    name = "landscape"
    steps_across = False  # weights
    own_ranges = True  # the curve's frame, which a diverging path leaves
    title = (
        "Loss landscape: the steps drawn on L(w)<br><sup>L(w): the average loss over all N·B examples; "
        "★ w* at its bottom</sup>"
    )
    styles = [
        {
            "mode": "lines",
            "name": "average loss L(w)",
            "line": {"color": GREY, "width": 2},
            "hovertemplate": "w = %{x:.4g}<br>L = %{y:.4g}<extra></extra>",
        },
        _line("sum", name="path, sum loss", hovertemplate="w = %{x:.6g}<br>L = %{y:.4g}<extra>sum</extra>"),
        _line(
            "mean", name="path, mean loss", hovertemplate="w = %{x:.6g}<br>L = %{y:.4g}<extra>mean</extra>"
        ),
        {
            "mode": "markers",
            "name": "w*",
            "marker": {"size": 11, "symbol": "star", "color": COLORS["optimum"]},
            "hovertemplate": "w* = %{x:.6g}<extra></extra>",
        },
        {**_STEP_MARKER, "hovertemplate": "w = %{x:.6g}<br>L = %{y:.4g}<extra>current</extra>"},
    ]

    def layout(self, result, view):
        # 10 px more on the left than the other charts: a frame around a diverging run's first steps
        # has losses in the hundreds, whose labels and the axis title needed 60.7 px. Plotly widened
        # the margin by a fraction of a pixel, on one drawing and not on the next.
        layout = base_layout(
            self.title, "weight w", "average loss over all N·B examples", margin={**TITLED_MARGIN, "l": 70}
        )
        layout["xaxis"]["range"], layout["yaxis"]["range"] = self._ranges(result)
        layout["annotations"] = self._leaving(result, view)
        return layout

    def layout_update(self, result, view):
        x_range, y_range = self._ranges(result)
        return {
            **super().layout_update(result, view),
            "xaxis.range": x_range,
            "yaxis.range": y_range,
            "annotations": self._leaving(result, view),
        }

    def _leaving(self, result, view) -> list[dict]:
        """An arrow at the frame's edge for each shown run that leaves it: "sum: off the chart from
        step k". The frame holds a diverging run's first steps only (widgets.model.framed_weights)."""
        (low, high), (_, top) = self._ranges(result)
        arrows = []
        for i, loss in enumerate(loss for loss in LOSSES if shown(view, loss)):
            left = left_frame(result, loss)
            if left is None:
                continue
            k, w = left
            right = not w < low  # a weight past the top, or not finite, leaves by the right
            arrows.append(
                {
                    "x": high if right else low,
                    "y": top * (0.85 - 0.15 * i),
                    "text": f"{loss}: off the chart from step {k}",
                    "showarrow": True,
                    "arrowhead": 2,
                    "arrowcolor": COLORS[loss],
                    "ax": -40 if right else 40,
                    "ay": 0,
                    "xanchor": "right" if right else "left",
                    "font": {"color": COLORS[loss], "size": 12},
                }
            )
        return arrows

    @staticmethod
    def _ranges(result):
        # Fixed to the computed curve: a diverging path leaves the frame instead of squashing it.
        top = float(np.max(result.landscape_loss))
        return [float(result.landscape_w[0]), float(result.landscape_w[-1])], [0.0, 1.05 * top]

    def _path(self, result, loss, index=slice(None)):
        """The run's (weights, losses) on the landscape, NaN where they cannot be drawn. Points far
        outside the fixed frame are left out: the browser cannot place an SVG marker 1e21 pixels
        away ("attribute transform: trailing garbage"). A run that leaves the frame (a diverging one)
        ends at its edge, where an arrow says from which step it is off the chart: its lines out to
        points just past the edge crossed the bowl from above."""
        (low, high), _ = self._ranges(result)
        weights = plottable(result.histories[loss].weights)
        losses = plottable(result.path_loss[loss])
        with np.errstate(invalid="ignore"):
            outside = (weights < 2 * low - high) | (weights > 2 * high - low)
        left = left_frame(result, loss)
        if left is not None:
            outside[left[0] :] = True
        weights[outside] = losses[outside] = np.nan
        return weights[index], losses[index]

    def series(self, result, view):
        paths = {loss: self._path(result, loss) for loss in LOSSES}
        return [
            {"x": result.landscape_w, "y": plottable(result.landscape_loss)},
            *(
                {"x": w, "y": v, "visible": shown(view, loss), "mode": _mode(result.settings.N)}
                for loss, (w, v) in paths.items()
            ),
            {"x": [result.w_star] if np.isfinite(result.w_star) else [], "y": [result.w_star_loss]},
        ]

    def marker(self, result, view, step):
        weights, losses = self._path(result, first_shown(view), slice(step, step + 1))
        here = bool(_at(weights, 0) and _at(losses, 0))
        return {"x": _at(weights, 0) if here else [], "y": _at(losses, 0) if here else []}


def left_frame(result: Result, loss: str) -> tuple[int, float] | None:
    """(k, w_k) of the first weight of `loss`'s run outside the landscape's frame of w (or not
    finite), None when the whole run is in it."""
    weights = result.histories[loss].weights.astype(np.float64)
    low, high = float(result.landscape_w[0]), float(result.landscape_w[-1])
    with np.errstate(invalid="ignore"):
        outside = np.flatnonzero(~((weights >= low) & (weights <= high)))
    return None if outside.size == 0 else (int(outside[0]), float(weights[outside[0]]))


class SumVsMean(WeightChart):
    name = "sum_vs_mean"
    styles = [
        *_WEIGHTS_AND_OPTIMUM,
        {**_STEP_MARKER, "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>current</extra>"},
    ]

    title = "Same lr, sum and mean<br><sup>the mean's step is lr/B in sum terms</sup>"

    def scale(self, result, view):
        return _diverging_scale(result, result.histories.values())  # both losses are drawn

    def series(self, result, view):
        s = result.settings
        scale = self.scale(result, view)
        steps = _steps(s.N + 1)
        styles = self.styles
        return [
            {
                "x": steps,
                **_weights(styles[0], plottable(result.histories["sum"].weights), scale),
                "mode": _mode(s.N),
            },
            {
                "x": steps,
                **_weights(styles[1], plottable(result.histories["mean"].weights), scale),
                "mode": _mode(s.N),
            },
            {"x": [0, s.N], **_weights(styles[2], [result.w_star] * 2, scale)},
        ]

    def marker(self, result, view, step):
        here = sum((_at(result.histories[loss].weights, step) for loss in LOSSES), [])  # both are drawn
        return {
            "x": [step] * len(here),
            **_weights(self.styles[-1], here, self.scale(result, view)),
        }


class Divergence(Chart):
    name = "divergence"
    wide = True
    # |factor| >= 0, and 0 and 1 are its landmarks. From 0, the range also keeps through a keyboard
    # step of lr (a factor of 3): around the values alone it shrank and grew back on every step,
    # and each such change is a full redraw instead of a frame.
    floors = {"yaxis": 0.0}
    styles = [
        {
            "mode": "markers",
            "name": "|1 − 2·lr·S_k|, sum",
            "marker": {"color": COLORS["sum"], "size": 5},
            "hovertemplate": "step %{x}<br>|factor| = %{y:.4g}<extra>sum</extra>",
        },
        {
            "mode": "markers",
            "name": "|1 − 2·lr·S_k/B|, mean",
            "marker": {"color": COLORS["mean"], "size": 5, "symbol": "diamond"},
            "hovertemplate": "step %{x}<br>|factor| = %{y:.4g}<extra>mean</extra>",
        },
        {
            "mode": "lines",
            "name": "1: the error neither grows nor shrinks",
            "line": {"color": COLORS["diverged"], "dash": "dot"},
            "hovertemplate": "|factor| = 1<extra></extra>",
        },
        {**_STEP_MARKER, "hovertemplate": "step %{x}<br>|factor| = %{y:.4g}<extra>current</extra>"},
    ]

    def layout(self, result, view):
        return base_layout(
            "Per-step factor: |1 − c·lr·S_k|<br><sup>each step multiplies the distance to its batch's "
            "optimum by it</sup>",
            "step",
            "|1 − c·lr·S_k|",
            margin=TITLED_MARGIN,
        )

    def series(self, result, view):
        s = result.settings
        steps = _steps(s.N)
        return [
            {"x": steps, "y": plottable(np.abs(result.factors["sum"])), "visible": shown(view, "sum")},
            {"x": steps, "y": plottable(np.abs(result.factors["mean"])), "visible": shown(view, "mean")},
            {"x": [-0.5, s.N - 0.5], "y": [1.0, 1.0]},
        ]

    def marker(self, result, view, step):
        return _point(step, _at(np.abs(result.factors[first_shown(view)][step : step + 1]), 0))


CHARTS = {
    chart.name: chart for chart in (Trajectory(), LossPerStep(), Landscape(), SumVsMean(), Divergence())
}

__all__ = [
    "CHARTS",
    "COLORS",
    "first_shown",
    "DASH",
    "GREY",
    "Chart",
    "run_name",
    "axis_range",
    "base_layout",
    "plottable",
    "shown",
]
