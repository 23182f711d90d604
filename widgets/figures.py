"""The explorer's five Plotly charts.

Each chart is a list of trace styles (fixed), a `series` function giving the changing fields of
every trace but the last for a result and a view (which loss is shown), and a `marker` function
for the last trace, the current step, which playback updates alone. The same functions build
the FigureWidget, with all data and layout in its constructor (Voila drops changes made while the
notebook first runs, voila#1533), and updates it in place with one message (`send`): a
Plotly.animate frame, drawn without a redraw when only points moved on fixed axes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import threading
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import ipywidgets as ipw
import numpy as np
import plotly
import plotly.graph_objects as go
import plotly.io as pio
from plotly.basedatatypes import Undefined

from widgets.model import LOSSES, Result, kept_range

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
COLORS = {"sum": "#0072B2", "mean": "#E69F00", "optimum": "#009E73", "diverged": "#D55E00", "step": "#000000"}


def shown(view: str, loss: str) -> bool:
    return view in (loss, "both")


def _first_shown(view: str) -> str:
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
        "line": {"color": COLORS[loss], "width": 2},
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
        # No width: each chart takes the width of its place on the page (`side_by_side`), which
        # Plotly measures when it first draws the chart, and the served front end again whenever
        # that place changes width (widgets/front_end.js).
        "height": 380,
        "margin": margin,
        "legend": {"orientation": "h", "y": -0.18},
        "hovermode": "closest",
        **extra,
    }


RANGE_PAD = {"xaxis": 0.02, "yaxis": 0.05}
"""How much wider than the drawn values an axis is, each side, as a share of their span."""


def axis_range(
    values: list, *, log: bool = False, pad: float = 0.05, floor: float | None = None
) -> list[float] | None:
    """[low, high] around the finite values in `values` (arrays and lists), padded by `pad` of their
    span each side; on a log axis, in log10 units around the positive ones. None when no value can
    be drawn. With a `floor` (linear axes) that no value is under, the range starts there: a
    quantity that cannot be negative is drawn from 0."""
    parts = [np.asarray(v, dtype=np.float64).ravel() for v in values]
    a = np.concatenate(parts) if parts else np.empty(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if log:
            a = np.log10(a[a > 0])
        a = a[np.isfinite(a)]
    if a.size == 0:
        return None
    low, high = float(a.min()), float(a.max())
    if floor is not None and not log and floor <= low:
        return [floor, high + pad * (high - floor)] if high > floor else [floor, floor + 1.0]
    span = high - low
    if not span > 0:  # one value: a decade, or a fifth of it either side
        span = 1.0 if log else (abs(high) * 0.4 or 2.0)
        return [low - span / 2, high + span / 2]
    return [low - pad * span, high + pad * span]


class Chart:
    """A chart: its name, trace styles, layout, and the data of every trace.

    Axes have fixed ranges, computed here from the drawn values (`ranges`), so that a change of
    data is drawn as an animation of the traces alone (see `send`)."""

    name = ""
    wide = False  # True: the chart takes a row of the page to itself (`side_by_side`)
    steps_across = True  # the x axis counts steps: whole numbers
    styles: list[dict] = []
    own_ranges = False  # True: `layout` and `layout_update` give the axis ranges themselves
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
        on the axis types of `layout`; `previous` (the ranges last sent, `framed`) keeps a
        range the values still fill (`kept_range`), and stands in where nothing can be drawn."""
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
            out[f"{axis}.range"] = kept_range(before, new) if new is not None else (before or [0.0, 1.0])
        return out

    def layout_update(self, result: Result, view: str) -> dict:
        """The layout properties that change with the result: none but the axis ranges, by default."""
        return {}

    def ticks(self, ranges: dict) -> dict:
        """Layout paths that follow the axis ranges (`ranges`' result), None for Plotly's default: a
        step axis over a few steps is labelled at each one (Plotly's own labels there were 0.5, 1.5).

        The tick mode goes with the ticks both ways: Plotly.update sets the mode that a dtick or
        tickvals implies and keeps it when they are unset, so a step axis that went from 1 step to
        1000 kept dtick 1 and drew 1001 labels (40 s of the browser's main thread)."""
        if not self.steps_across:
            return {}
        low, high = ranges["xaxis.range"]
        few = high - low <= STEP_TICKS_UP_TO
        return {"xaxis.tickmode": "linear" if few else None, "xaxis.dtick": 1 if few else None}

    def caption(self, result: Result, view: str) -> str:
        """Text shown above the chart, for numbers that change with the settings; "" for none.

        A title that changed made Plotly redraw the whole figure, because Plotly's widget marks
        every relayout it receives with an attribute of its own (`_doNotReportToPy`) that Plotly
        does not know: 13 ms against 3.4 ms for the same relayout without it (Chromium, 2 cores).
        """
        return ""

    def build(self, result: Result, view: str, step: int, widget=go.FigureWidget) -> go.FigureWidget:
        """The chart as a `widget` (a FigureWidget class, see `figure_widget`)."""
        data = self.data(result, view, step)
        layout = self.layout(result, view)
        ranges = self.ranges(data, layout)
        for path, value in {**ranges, **self.ticks(ranges)}.items():
            axis, _, key = path.partition(".")
            if value is not None:
                layout[axis][key] = value
        traces = [go.Scatter(**{**style, **fields}) for style, fields in zip(self.styles, data, strict=True)]
        figure = widget(data=traces, layout=layout)
        framed(figure).update({f"{axis}.range": layout[axis]["range"] for axis in RANGE_PAD})
        return figure

    def update(self, figure: go.FigureWidget, result: Result, view: str, step: int) -> None:
        """Every trace, the changing layout and the axis ranges (see `send`)."""
        data = self.data(result, view, step)
        layout = self.layout_update(result, view)
        ranges = self.ranges(data, self.layout(result, view), framed(figure))
        layout.update({**ranges, **self.ticks(ranges)})
        send(figure, data, range(len(self.styles)), layout)

    def update_marker(self, figure: go.FigureWidget, result: Result, view: str, step: int) -> None:
        """The step marker alone (playback), within the axes as they are."""
        send(figure, [self.marker(result, view, step)], [len(self.styles) - 1])


ANIMATED_FIELDS = frozenset({"x", "y"})
"""Trace fields whose change alone Plotly.animate draws without redrawing the figure: the points
of a scatter trace."""


ANIMATION = {"transition": {"duration": 0}, "frame": {"duration": 0, "redraw": False}, "mode": "afterall"}
"""Plotly.animate's options: no transition, no redraw, and each message's frame after the ones
before it (a frame holds only what changed, so none may be dropped)."""


def framed(figure) -> dict:
    """The layout paths this module sets on `figure` and sends with every frame, and their values:
    the axis ranges ("xaxis.range") of a chart. Its own record, not the figure's layout, into which
    the browser writes back every range it draws (a zoom, or a range it drew after the kernel had
    moved on), or a visitor writes anything."""
    return figure.__dict__.setdefault("_scanlab_framed", {})


def send(figure: go.FigureWidget, traces: list[dict], indexes, layout: dict | None = None) -> None:
    """Set `traces` (fields by trace, for the traces at `indexes`) and `layout` (dotted paths), and
    send what changed to the browser, nothing when nothing did.

    A frame of Plotly.animate without a redraw carries the changes when they are the points of
    scatter traces on axes whose ranges this module sets (`framed`), or on a `bounded` figure's
    axes (the map's). The front end (FRONT_END) moves those points and leaves the rest of the figure
    (axes, legend, other traces, the map's heatmaps) as it is, about 1 to 5 ms per chart in
    Chromium on a 2-core machine against 10 to 50 ms for a whole figure. Frames are drawn in the
    order they were sent, each with every `framed` path. Other layout changes (a title) follow as
    a Plotly.relayout.

    Anything else goes as one Plotly.update, which redraws the whole figure at once: a change of
    axis range (Plotly.animate draws the points against the old axes first, and a point 1e21
    pixels away is an SVG error), a trace shown or hidden, a trace whose points appear or all go
    (Plotly hides a trace without points; a frame whose moved traces were all hidden so dropped
    the chart's every line when playback reached step N, and a frame that showed the loss chart's
    step marker again left its lines drawn 13% too tall), a heatmap. An update is drawn at once,
    so frames still waiting would then draw older points: a frame with the points of every trace
    that a frame can move, and every `framed` path, follows it. Layout paths stay dotted: the
    widget's own copy of the layout (what a new view of the figure draws) takes {"xaxis": {...}}
    as a whole new axis.

    The values come from this module (float64 arrays, lists, bools, strings), so they go straight
    into the figure's state: `trace.update` validated every element (about 2 ms per chart at
    N = 1000) and `plotly_update` checked every key path, together most of a callback's time.
    """
    with _lock(figure):  # the map's worker sends too, and a chart's "hello" resends (`resend`)
        _send(figure, traces, indexes, layout)


def _lock(figure) -> threading.RLock:
    return figure.__dict__.setdefault("_scanlab_lock", threading.RLock())


def _send(figure, traces, indexes, layout) -> None:
    changed: dict[int, dict] = {}
    emptied = False  # a trace's points appeared, or all went
    for index, fields in zip(indexes, traces, strict=True):
        state = figure._data[index]
        for key, value in fields.items():
            if not _same(state.get(key), value):
                emptied |= key in ANIMATED_FIELDS and (_size(value) == 0) != (_size(state.get(key)) == 0)
                state[key] = value
                changed.setdefault(index, {})[key] = value
    sent = _sent(figure)
    for index, fields in changed.items():
        sent["traces"].setdefault(index, set()).update(fields)
    own = framed(figure)
    relayout = {}
    for path, value in (layout or {}).items():
        if path in own:  # an axis range: compared with what was sent, set in the layout even if equal
            figure._layout.setdefault(path.partition(".")[0], {}).update(range=value, autorange=False)
            if not _same(own[path], value):
                own[path] = relayout[path] = value
        elif _set_path(figure._layout, path, value):
            relayout[path] = value
    sent["layout"].update(relayout)
    rest = {path: value for path, value in relayout.items() if path not in own}
    axes_moved = any(path in own for path in relayout)  # framed paths are axis ranges
    if not changed and len(rest) == len(relayout):  # nothing for a frame
        if rest:
            _post(figure, "relayout", {"relayout_data": rest})
        return
    if not axes_moved and not emptied and (not changed or _animatable(figure, changed)):
        _frame(figure, changed)
        if rest:
            _post(figure, "relayout", {"relayout_data": rest})
        return
    _update(figure, changed, relayout)


def _update(figure, changed: dict[int, dict], relayout: dict) -> None:
    """One Plotly.update of `changed` (index: fields) and `relayout` (dotted paths), and the frame
    that must follow it (see `send`)."""
    restyle: dict = {}
    for position, fields in enumerate(changed.values()):
        for key, value in fields.items():
            restyle.setdefault(key, [Undefined] * len(changed))[position] = value
    _post(figure, "update", {"style_data": restyle, "layout_data": relayout, "style_traces": list(changed)})
    # Frames sent before it and not drawn yet would draw older points.
    points = {i: {"x": t["x"], "y": t["y"]} for i, t in enumerate(figure._data) if "x" in t and "y" in t}
    points = {i: fields for i, fields in points.items() if _animatable(figure, {i: fields})}
    if points or framed(figure):
        _frame(figure, points)


def _sent(figure) -> dict:
    """What `send` has changed in `figure` since it was built: {"traces": {index: {field, ...}},
    "layout": {path, ...}}. The browser's copy of the figure starts from the figure as built."""
    return figure.__dict__.setdefault("_scanlab_sent", {"traces": {}, "layout": set()})


def resend(figure) -> None:
    """Send again, as one Plotly.update, the current value of everything `send` has changed since
    `figure` was built (nothing if it changed nothing): for a chart whose front end missed messages
    (widgets/chart_loader.js)."""
    with _lock(figure):
        sent = _sent(figure)
        if not sent["traces"] and not sent["layout"]:
            return
        changed = {i: {key: figure._data[i].get(key) for key in keys} for i, keys in sent["traces"].items()}
        relayout = {
            path: framed(figure).get(path, _get_path(figure._layout, path)) for path in sent["layout"]
        }
        _update(figure, changed, relayout)


def _frame(figure, traces: dict[int, dict]) -> None:
    """One Plotly.animate frame without a redraw: `traces` (index: fields), and every framed path."""
    frame = {
        "style_data": list(traces.values()),
        "layout_data": dict(framed(figure)),
        "style_traces": list(traces),
    }
    _post(figure, "animate", {**frame, "animation_opts": ANIMATION})


def _get_path(layout: dict, path: str):
    """layout["a"]["b"] for the dotted path "a.b", None where it is unset."""
    node = layout
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _set_path(layout: dict, path: str, value) -> bool:
    """layout["a"]["b"] = value for the dotted path "a.b"; whether that changed it. (Plotly's own
    `_set_in` takes 0.1 to 0.3 ms a path.)"""
    if "[" in path:
        raise ValueError(f"path must be dotted property names, without indexes, got {path!r}")
    *parents, key = path.split(".")
    node = layout
    for part in parents:
        node = node.setdefault(part, {})
    if (key in node and _same(node[key], value)) or (value is None and key not in node):
        return False  # (None unsets: nothing to unset)
    node[key] = value
    return True


def _post(figure, kind: str, message: dict) -> None:
    """Send `message` as Plotly's `_py2js_<kind>` (animate, update or relayout) in one comm message.

    Plotly's own senders make three or four: each edit counter is a synced trait of its own, and
    the message is set back to None after it is sent. The counters still advance (the browser
    echoes them), and a message is never equal to the one before it, so each one is sent."""
    with figure.hold_sync():
        if kind != "relayout":
            figure._last_trace_edit_id += 1
            message["trace_edit_id"] = figure._last_trace_edit_id
        figure._last_layout_edit_id += 1
        message["layout_edit_id"] = figure._last_layout_edit_id
        message["source_view_id"] = None
        setattr(figure, f"_py2js_{kind}", message)


def bounded(figure) -> None:
    """Mark `figure`'s axes as bounded by what it always draws: the map's heatmaps fix its extent,
    and its box moves inside it, so a frame may move the box whatever the axes' autorange (after a
    double-click, Plotly sets it)."""
    figure.__dict__["_scanlab_bounded"] = True


def _animatable(figure, changed: dict[int, dict]) -> bool:
    """Whether a frame without a redraw draws these changes (see `send`): the points of scatter
    traces on axes whose ranges this module sets (`framed`), or on a `bounded` figure's axes."""
    steady = figure.__dict__.get("_scanlab_bounded", False)
    for index, fields in changed.items():
        trace = figure._data[index]
        if trace.get("type", "scatter") != "scatter" or not fields.keys() <= ANIMATED_FIELDS:
            return False
        for name in ("xaxis", "yaxis"):
            if not (steady or f"{name}{trace.get(name, name[0])[1:]}.range" in framed(figure)):
                return False
    return True


def _size(values) -> int:
    return 0 if values is None else len(values)


def _same(old, new) -> bool:
    """Whether a trace field already holds `new` (NaN equal to NaN)."""
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        if old is None or new is None:
            return False
        old, new = np.asarray(old), np.asarray(new)
        if old.shape != new.shape or old.dtype.kind != new.dtype.kind:
            return False
        return bool(np.array_equal(old, new, equal_nan=old.dtype.kind == "f"))
    return old == new


BUNDLE_PATH = f".cache/static/plotly-widget-{plotly.__version__}.js"
"""Where `make run` puts a copy of Plotly's widget bundle, relative to the notebook's folder; the
dashboard serves it at <server>/voila/files/BUNDLE_PATH (voila.json allows it and FRONT_END_PATH)."""

FRONT_END = (
    (Path(__file__).parent / "front_end.js").read_text().replace("PLOTLY_BUNDLE", Path(BUNDLE_PATH).name, 1)
)
"""The module the served charts import (widgets/front_end.js, written by tools/plotly_bundle.py next to
the bundle): Plotly's widget front end, less the state it sends back after each change, drawing a
frame of moved points itself instead of through Plotly.animate, keeping the traces in their order,
and drawing a chart again when its box changes width."""

FRONT_END_PATH = f".cache/static/scanlab-figure-{hashlib.sha256(FRONT_END.encode()).hexdigest()[:12]}.js"
"""Where FRONT_END is served from; named by its content, so no browser keeps an older version."""


def bundle_url(request_url: str, base_url: str = "/", root: Path = Path()) -> str | None:
    """The address of the charts' served front end (FRONT_END) for a page at `request_url`, or None
    when the page is not served by Voila or a file is missing (then each figure carries Plotly's
    whole bundle itself).

    `base_url` is Voila's VOILA_BASE_URL, the prefix the browser sees: behind JupyterHub or Binder
    it is /user/<name>/, while VOILA_SERVER_URL stays "/" under the server extension."""
    parts = urlsplit(request_url)
    served = all((root / path).is_file() for path in (BUNDLE_PATH, FRONT_END_PATH))
    if parts.scheme not in ("http", "https") or not parts.netloc or not served:
        return None
    server = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
    return urlunsplit((parts.scheme, parts.netloc, f"{server}voila/files/{FRONT_END_PATH}", "", ""))


class FigureWidget(go.FigureWidget):
    """go.FigureWidget, less the defaults that the browser sends back after each change.

    After every change Plotly's front end compares each trace's and the layout's full state with
    the figure's and sends the difference back: on a slider move 12 messages and 75 KB,
    which the kernel merged into defaults that nothing here reads (and for array values failed
    on: "The truth value of an array ... is ambiguous"). Changes made in the browser (zoom, legend
    clicks) and clicks on points still arrive. Served pages import FRONT_END, which does not
    compute them at all."""

    def _handler_js2py_traceDeltas(self, change):  # replaces Plotly's observer of that trait
        pass

    def _handler_js2py_layoutDelta(self, change):  # replaces Plotly's observer of that trait
        pass


CHART_LOADER = (Path(__file__).parent / "chart_loader.js").read_text()
"""The `_esm` of a served chart (widgets/chart_loader.js), with FRONT_END's address in place of
"__FRONT_END__": it initializes at once and imports FRONT_END in the background."""


class ServedFigureWidget(FigureWidget):
    """A FigureWidget whose front end is CHART_LOADER, which says when the page listens.

    Invariant: what each served chart draws is what its figure here holds. The browser's copy of a
    figure starts from the figure as built and follows the messages `send` posts; a chart whose
    front end was not yet listening when some came says "hello" once it is, and gets everything
    changed since it was built again (`resend`), then "welcome". A chart that says it is "deaf"
    (anywidget refused a message on its page while it waited for the welcome) is handed to
    `on_deaf`, which replaces it with a new one, if set."""

    front_end = ""  # the address CHART_LOADER imports (FRONT_END), set by `figure_widget`

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scanlab_heard = False  # whether the page has heard this chart's welcome
        self._scanlab_on_deaf = None
        self.on_msg(self._on_page)

    @property
    def heard(self) -> bool:
        return self._scanlab_heard

    def on_deaf(self, callback) -> None:
        """Call `callback(figure)` if the page says it cannot hear this chart (widgets/chart_loader.js)."""
        self._scanlab_on_deaf = callback

    def _on_page(self, _widget, content, _buffers) -> None:
        kind = content.get("kind") if isinstance(content, dict) else None
        if kind == "scanlab-hello":
            resend(self)
            self.send({"kind": "scanlab-welcome"})
        elif kind == "scanlab-heard":
            self._scanlab_heard = True
        elif kind == "scanlab-deaf" and not self._scanlab_heard and self._scanlab_on_deaf is not None:
            self._scanlab_on_deaf(self)


@functools.cache
def figure_widget(url: str | None = None) -> type[go.FigureWidget]:
    """`FigureWidget`, or with a `url`, a ServedFigureWidget whose front end imports it.

    A FigureWidget is an anywidget whose `_esm` trait holds Plotly's whole 5 MB widget bundle, so a
    page of five charts sent 25 MB over the kernel's websocket and evaluated plotly.js five times
    (measured: 9 s from the websocket opening to the first chart). A served chart's `_esm` is
    CHART_LOADER, which imports the address (`bundle_url`: FRONT_END, which imports the bundle);
    the browser fetches it once, caches it, and shares the module.
    """
    if url is None:
        return FigureWidget
    loader = CHART_LOADER.replace('"__FRONT_END__"', json.dumps(url), 1)
    return type(
        "FigureWidget", (ServedFigureWidget,), {"_esm": loader, "front_end": url, "__module__": __name__}
    )


BESIDE = "440px"
"""The narrowest a chart is drawn beside another: two side by side where the charts have about
900 px (the dashboard at 1280 px, its controls beside them), one to a row below that."""

BESIDE_PROJECTOR = "640px"
"""The same in the projector view, whose larger titles need the width: one chart to a row at
1024 x 768."""


def side_by_side(views: list, *, wide=(), beside: str = BESIDE) -> ipw.HBox:
    """`views` (charts, or boxes holding one) in a row that wraps: each at least `beside` wide next
    to another, the row shared between them, and the views in `wide` a row each. A chart takes the
    width of its box (its layout has none), so nothing is cut off on a narrow screen."""
    wide = {id(view) for view in wide}
    boxes = []
    for view in views:
        # A FigureWidget's `layout` is Plotly's: the box around it gets the page's layout instead.
        box = view if isinstance(view, ipw.Box) else ipw.VBox([view])
        box.layout.flex = "1 1 100%" if id(view) in wide else f"1 1 {beside}"
        box.layout.min_width = "0"  # a box may shrink below the chart drawn in it; the chart follows
        boxes.append(box)
    return ipw.HBox(boxes, layout={"flex_flow": "row wrap"})


UNSCALED = "unscaled"
"""A trace's `meta` that keeps its lines and markers as they are in the projector view (the map's
box: twice as thick, it would hide most of the 8 px cell it marks)."""

PROJECTOR = {
    "font": 18,
    "title": 24,
    "line": 2.0,
    "marker": 1.5,
    "taller": 150,
    "lower": 62,
    "higher": 30,
    "left": 25,
}
"""`?view=projector`: text sizes in px, how much thicker lines and larger markers are drawn, and how
many px taller a chart is, of which its bottom, top and left margins gain "lower", "higher" and
"left" (the larger tick labels, axis titles, legend and title need them)."""


def enlarge(figure) -> None:
    """Make `figure` (a go.Figure or FigureWidget) readable from the back of a room: larger text
    everywhere, thicker lines, larger markers (PROJECTOR)."""
    layout = figure.layout
    figure.update_layout(
        font={"size": PROJECTOR["font"]},
        title_font_size=PROJECTOR["title"],
        legend_font_size=PROJECTOR["font"],
        hoverlabel_font_size=PROJECTOR["font"],
        height=(layout.height or 450) + PROJECTOR["taller"],
        # The legend moves into the margin below (container y 0): its row is counted in "lower".
        margin_b=(layout.margin.b or 80) - legend_row(layout.showlegend) + PROJECTOR["lower"],
        margin_t=(layout.margin.t or 100) + PROJECTOR["higher"],
        margin_l=(layout.margin.l or 80) + PROJECTOR["left"],
        # The legend at the chart's foot, below the axis title whatever their sizes.
        legend={"yref": "container", "y": 0, "yanchor": "bottom"},
    )
    for trace in figure.data:
        if trace.type != "scatter" or trace.meta == UNSCALED:
            continue
        if trace.line.width is not None:
            trace.line.width = trace.line.width * PROJECTOR["line"]
        elif "lines" in (trace.mode or "lines"):
            trace.line.width = 2 * PROJECTOR["line"]  # Plotly's default width is 2
        if isinstance(trace.marker.size, (int, float)):
            trace.marker.size = trace.marker.size * PROJECTOR["marker"]
        if trace.marker.line.width is not None:
            trace.marker.line.width = trace.marker.line.width * PROJECTOR["line"]


def projector_widget(base=go.FigureWidget):
    """A figure factory like `base` (called as base(data=..., layout=...)) whose figures are
    enlarged in their constructor: Voila drops changes made after it while the notebook first runs."""

    def make(data=None, layout=None):
        figure = go.Figure(data=data, layout=layout)
        enlarge(figure)
        return base(figure)

    return make


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


class Trajectory(Chart):
    name = "trajectory"
    styles = [
        *_WEIGHTS_AND_OPTIMUM,
        # x counts steps taken: the weight past the limit that step k produced stands at k + 1, where
        # the status and the loss chart say "step k". "diverged: step k + 1" read as a contradiction.
        {
            **_DIVERGED_MARKER,
            "name": "diverged",
            "hovertemplate": "diverged: w after %{x} steps<extra></extra>",
        },
        {**_STEP_MARKER, "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>current</extra>"},
    ]

    def layout(self, result, view):
        return base_layout("Trajectory: the carry w after each step", "step", "weight w")

    def series(self, result, view):
        s = result.settings
        steps = _steps(s.N + 1)
        drawn = {loss: plottable(result.histories[loss].weights) for loss in LOSSES}
        points = [
            _diverged_point(result.histories[loss], drawn[loss]) for loss in LOSSES if shown(view, loss)
        ]
        points = [p for p in points if p is not None]
        return [
            {"x": steps, "y": drawn["sum"], "visible": shown(view, "sum"), "mode": _mode(s.N)},
            {"x": steps, "y": drawn["mean"], "visible": shown(view, "mean"), "mode": _mode(s.N)},
            {"x": [0, s.N], "y": [result.w_star, result.w_star]},
            {"x": [k for k, _ in points], "y": [v for _, v in points]},
        ]

    def marker(self, result, view, step):
        return _point(step, _at(result.histories[_first_shown(view)].weights, step))


STEP_TICKS_UP_TO = 10
"""The widest step axis (in steps) labelled at every step. Plotly draws at most 10 labels on an axis
of its own, so on a wider one its spacing is a whole number of steps."""

LOG_TICKS_UP_TO = 3.0
"""The most decades that the loss chart's log axis labels at 1, 2 and 5 in each (`LossPerStep.ticks`)."""

_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def tick_label(value: float) -> str:
    """A log axis's label for 1, 2 or 5 times a power of ten, written out in full from 0.001 to
    50000 (0.002, 50, 20000) and as 2×10⁵ or 10⁻⁶ beyond."""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    power = f"10{str(int(exponent)).translate(_SUPERSCRIPTS)}"
    return power if mantissa == "1" else f"{mantissa}×{power}"


def log_ticks(low: float, high: float) -> list[float]:
    """1, 2 and 5 times each power of ten from 10**low to 10**high (log10 units), in order; none
    for a range that is not finite."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    values = []
    for exponent in range(math.floor(low), math.ceil(high) + 1):
        for mantissa in (1, 2, 5):
            value = float(f"{mantissa}e{exponent}")  # 2e-3 exactly as written, not 2 * 10.0**-3
            if value > 0 and low <= math.log10(value) <= high:  # float("1e-324") is 0
                values.append(value)
    return values


class LossPerStep(Chart):
    name = "loss"
    styles = [
        _line("sum", name="batch loss, sum", hovertemplate="step %{x}<br>loss = %{y:.4g}<extra>sum</extra>"),
        _line(
            "mean", name="batch loss, mean", hovertemplate="step %{x}<br>loss = %{y:.4g}<extra>mean</extra>"
        ),
        {**_DIVERGED_MARKER, "name": "diverged", "hovertemplate": "diverged: step %{x}<extra></extra>"},
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
        return layout

    def ticks(self, ranges):
        """Labels at 1, 2 and 5 in each decade, written in full (Plotly's "D2" labels wrote 20 and 50
        as a small 2 and 5 above 10), not at every digit as Plotly labels a range of one or two
        decades; over more decades (a diverging run spans 40), Plotly's own spacing, which thins the
        labels out to whole decades as the range grows: 1, 2 and 5 in each of 40 decades were 124
        labels drawn over each other. A range too narrow for three of them gets Plotly's own too."""
        low, high = ranges["yaxis.range"]  # log10 units
        values = log_ticks(low, high) if high - low <= LOG_TICKS_UP_TO else []
        values = values if len(values) >= 3 else None
        return {
            **super().ticks(ranges),
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
        return [
            {"x": steps, "y": drawn["sum"], "visible": shown(view, "sum"), "mode": _mode(result.settings.N)},
            {
                "x": steps,
                "y": drawn["mean"],
                "visible": shown(view, "mean"),
                "mode": _mode(result.settings.N),
            },
            {"x": [k for k, _ in marks], "y": [v for _, v in marks]},
        ]

    def marker(self, result, view, step):
        here = _at(result.histories[_first_shown(view)].losses, step)
        return _point(step, here if here and here[0] > 0 else [])  # a log axis has no place for 0


class Landscape(Chart):
    name = "landscape"
    steps_across = False  # weights
    own_ranges = True  # the curve's frame, which a diverging path leaves
    title = "Loss landscape: the steps drawn on L(w)"
    styles = [
        {
            "mode": "lines",
            "name": "average loss L(w)",
            "line": {"color": "#999999", "width": 2},
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
        layout = base_layout(self.title, "weight w", "average loss over all N·B examples")
        layout["xaxis"]["range"], layout["yaxis"]["range"] = self._ranges(result)
        return layout

    def layout_update(self, result, view):
        x_range, y_range = self._ranges(result)
        return {**super().layout_update(result, view), "xaxis.range": x_range, "yaxis.range": y_range}

    @staticmethod
    def _ranges(result):
        # Fixed to the computed curve: a diverging path leaves the frame instead of squashing it.
        top = float(np.max(result.landscape_loss))
        return [float(result.landscape_w[0]), float(result.landscape_w[-1])], [0.0, 1.05 * top]

    def _path(self, result, loss, index=slice(None)):
        """The run's (weights, losses) on the landscape, NaN where they cannot be drawn. Points far
        outside the fixed frame are left out: the browser cannot place an SVG marker 1e21 pixels
        away ("attribute transform: trailing garbage")."""
        (low, high), _ = self._ranges(result)
        weights = plottable(result.histories[loss].weights[index])
        losses = plottable(result.path_loss[loss][index])
        with np.errstate(invalid="ignore"):
            outside = (weights < 2 * low - high) | (weights > 2 * high - low)
        weights[outside] = losses[outside] = np.nan
        return weights, losses

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
        weights, losses = self._path(result, _first_shown(view), slice(step, step + 1))
        here = bool(_at(weights, 0) and _at(losses, 0))
        return {"x": _at(weights, 0) if here else [], "y": _at(losses, 0) if here else []}


class SumVsMean(Chart):
    name = "sum_vs_mean"
    styles = [
        *_WEIGHTS_AND_OPTIMUM,
        {**_STEP_MARKER, "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>current</extra>"},
    ]

    def layout(self, result, view):
        return base_layout(
            "Same lr, sum and mean<br><sup>the mean's step is lr/B in sum terms</sup>",
            "step",
            "weight w",
            margin=TITLED_MARGIN,
        )

    def caption(self, result, view):
        s = result.settings
        critical = result.critical_lr
        larger = "the same: B = 1" if s.B == 1 else f"B = {s.B} times larger"
        return (
            f"lr = {s.lr:.4g}: the mean's step is lr/B = {s.lr / s.B:.4g} in sum terms; "
            f"critical lr: sum {critical['sum']:.4g}, mean {critical['mean']:.4g} ({larger})"
        )

    def series(self, result, view):
        s = result.settings
        steps = _steps(s.N + 1)
        return [
            {"x": steps, "y": plottable(result.histories["sum"].weights), "mode": _mode(s.N)},
            {"x": steps, "y": plottable(result.histories["mean"].weights), "mode": _mode(s.N)},
            {"x": [0, s.N], "y": [result.w_star, result.w_star]},
        ]

    def marker(self, result, view, step):
        here = [_at(result.histories[loss].weights, step) for loss in LOSSES]  # both losses are drawn
        return {"x": [step] * sum(len(h) for h in here), "y": sum(here, [])}


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

    def caption(self, result, view):
        s = result.settings
        return "; ".join(
            f"{loss}: lr / critical lr = {s.lr / result.critical_lr[loss]:.3g}"
            for loss in LOSSES
            if shown(view, loss)
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
        return _point(step, _at(np.abs(result.factors[_first_shown(view)][step : step + 1]), 0))


CHARTS = {
    chart.name: chart for chart in (Trajectory(), LossPerStep(), Landscape(), SumVsMean(), Divergence())
}

__all__ = [
    "BESIDE",
    "BESIDE_PROJECTOR",
    "BUNDLE_PATH",
    "CHARTS",
    "COLORS",
    "FRONT_END",
    "FRONT_END_PATH",
    "Chart",
    "base_layout",
    "bundle_url",
    "figure_widget",
    "plottable",
    "send",
    "shown",
    "side_by_side",
]
