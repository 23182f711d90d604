"""What every chart of the explorer shares: the colours, the trace and marker styles, the template,
the layouts and margins, and `Chart`, the base of a chart's spec (its traces, its layout, its axes'
ranges and ticks, built once and updated in place). The explorer's five charts are widgets.figures;
the stability map and the panels under the hood use the colours and layouts.
"""

from __future__ import annotations

import functools

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from widgets.axes import RANGE_PAD, STEP_TICKS_UP_TO, axis_range, figure_scale
from widgets.model import Result, kept_range
from widgets.settings import MOMENTUM_OPTIMIZERS
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


NONE = {"x": [], "y": [], "customdata": None, "visible": False}
"""The fields of a trace the current model does not draw (widgets.settings' `model`)."""


def run_name(s) -> str:
    """The overlaid run in words: "adam", "momentum 0.9", "sgd, cosine schedule"."""
    name = f"{s.optimizer} {s.momentum:g}" if s.optimizer in MOMENTUM_OPTIMIZERS else s.optimizer
    return name if s.schedule == "constant" else f"{name}, {s.schedule} schedule"


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


def value_at(values, index):
    """values[index] as a one-point list, empty when out of range or not finite."""
    if 0 <= index < len(values) and np.isfinite(values[index]):
        return [float(values[index])]
    return []


def one_point(x, y) -> dict:
    """A one-point trace at (x, y[0]), or an empty one when y is empty."""
    return {"x": [x] if y else [], "y": y}


def step_numbers(n: int) -> np.ndarray:
    """0, 1, ..., n - 1 as int32: Plotly sends an int64 array as a JSON list, which ipywidgets then
    walks element by element, and int32 as one binary buffer."""
    return np.arange(n, dtype=np.int32)


def diverged_point(history, drawn: np.ndarray):
    """(step, value) of the first weight past the divergence limit, or of the last finite one
    before it; None when the run did not diverge or nothing there can be drawn."""
    k = history.diverged_at
    if k is None:
        return None
    index = k + 1 if k + 1 < len(drawn) and np.isfinite(drawn[k + 1]) else k
    return (index, float(drawn[index])) if np.isfinite(drawn[index]) else None


MARKERS_UP_TO = 50  # steps; beyond, a line's points are drawn without a marker each


def line_mode(n: int) -> str:
    """Markers on the points of short runs only: at N = 1000 they overlap into a thick line, and each
    is an SVG element that Plotly restyles on every update."""
    return "lines+markers" if n <= MARKERS_UP_TO else "lines"


def line_style(loss, **extra):
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
STEP_MARKER = {
    "mode": "markers",
    "marker": {"size": 14, "color": "rgba(0,0,0,0)", "line": {"color": COLORS["step"], "width": 2.5}},
    "name": "current step",
    "showlegend": False,
    "cliponaxis": False,
}
DIVERGED_MARKER = {
    "mode": "markers",
    "marker": {"size": 14, "symbol": "x", "color": COLORS["diverged"]},
    "showlegend": False,
    "cliponaxis": False,
}


# A learner's own loop (widgets.explore, Explorer(step=fn)), over the lesson's: the purple of another
# run, dashed, with a point at each step; and an ✕ where the two part.
YOURS = {
    "mode": "lines+markers",
    "line": {"color": COLORS["optimizer"], "width": 2, "dash": "dash"},
    "marker": {"size": 5, "color": COLORS["optimizer"]},
}
PARTING_MARKER = {**DIVERGED_MARKER, "name": "where they part", "showlegend": True}

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
    models = ("w", "w,b")  # the `model`s whose results the chart draws (widgets.settings.CHOICES)
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


def with_paths(layout: dict, paths: dict) -> dict:
    """`layout` with the dotted `paths` set in place (for a layout being built)."""
    for path, value in paths.items():
        *parents, key = path.split(".")
        node = layout
        for part in parents:
            node = node.setdefault(part, {})
        node[key] = value
    return layout
