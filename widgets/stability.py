"""The stability map panel: the outcome of every (lr, B) of a grid, sum and mean side by side, or of
every (lr, momentum) at the current B (the `map` control: Distill's momentum phase diagram with the
batch axis it lacks).

`widgets.model.Model.stability` computes the map with `core.stability_map` or `core.momentum_map`;
this module draws it and keeps it current. Moving lr or B (momentum) only moves the marker. A
change of N, w0 or the data (B on the lr x momentum map, the map itself) recomputes
the map on a worker thread (lr x B: about 40 ms at N = 200, 170 ms at N = 1000 on a 2-core CPU;
lr x momentum: 50 ms at N = 100, 0.5 s at N = 1000, mostly the theory's critical lr per row), so
the sliders stay live meanwhile and the panel says it is computing. A request that comes less
than SETTLE_S after the one before (a drag) waits SETTLE_S for a newer one, so a drag computes its
first value at once and its last once it rests; a single move starts at once, and a result that
a newer request has made stale is dropped. The worker only computes: the map is drawn on the
kernel's own thread (`_on_kernel_thread`), as the controls' changes are. The last map of each
kind is kept, each on its own figure: switching between the two with nothing else changed shows
the other figure as it was drawn, in the move's own message. A click on a cell sets lr and B, or
lr and momentum (and the momentum optimizer).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html
import math
import threading
import time
from typing import NamedTuple

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go

from widgets.batch import or_unbatched
from widgets.chart import COLORS, base_layout, plottable
from widgets.model import LOSSES, MAP_BATCH_SIZES, MAP_LRS, MAP_MOMENTA, Model, params
from widgets.settings import Settings, leaves, of_rows
from widgets.surface import send

# Cells are placed at (log10 lr, log2 B) or (log10 lr, momentum) on linear axes, labelled in lr and
# B: a heatmap's cells on Plotly's log axes would be sized in linear units.
_X = np.log10(MAP_LRS)
_ERROR_RANGE = (-6.0, 3.0)  # log10 |w_N - w*| from converged (float32 rounding) to nearly diverged
_DOMAINS = {"sum": (0.0, 0.44), "mean": (0.56, 1.0)}
_SUFFIX = {"sum": "", "mean": "2"}  # Plotly's axis names: x, y for the left panel, x2, y2 the right
TRACES_PER_LOSS = 4  # outcome, diverged cells, critical boundary's outline, critical boundary
CELLS = frozenset(TRACES_PER_LOSS * i + k for i in range(len(LOSSES)) for k in (0, 1))  # the heatmaps
# The lines over the cells are white on black: any cell colour has a contrast of at least 4.6:1
# (sqrt(21)) with one of the two, where one colour alone falls below 3:1 on part of the scale
# (white on Viridis's yellow 1.2:1, magenta on its green 1.3:1, black on its purple 1.2:1).
OUTLINE = "#000000"
BOX = {"color": "#ffffff", "width": 2}  # the current setting's box, a shape on each panel
BOX_OUTLINE = {"color": OUTLINE, "width": 4.5}  # beneath it, showing 1.25 px on each side
BOUNDARY = {"color": "#ffffff", "width": 2.5, "dash": "dash"}
BOUNDARY_OUTLINE = {"color": OUTLINE, "width": 4.5}
# A request this soon after the one before (a drag) waits this long for a newer one. A dragged
# slider's page sends its next value once the kernel has answered the last: the trajectory redraws
# 8 to 15 times a second in benchmarks.drag, 65 to 125 ms apart, so 80 ms computed a map for most
# of a drag's values, and those maps took the CPU from its charts.
SETTLE_S = 0.2


class Rows(NamedTuple):
    """What a map's rows are: `name` (the Settings field and the axis's title), their values and
    the positions they are drawn at, the axis's ticks and range, half a cell's height (the box's)."""

    name: str
    values: np.ndarray
    positions: np.ndarray
    tickvals: list
    ticktext: list
    span: list
    half: float

    def position(self, settings: Settings) -> float:
        """Where the current setting's row is drawn."""
        value = getattr(settings, self.name)
        return float(np.log2(value)) if self.name == "B" else float(value)


_POWERS = np.arange(0, int(np.log2(MAP_BATCH_SIZES[-1])) + 1)
_B_ROWS = Rows(
    "B",
    MAP_BATCH_SIZES,
    np.log2(MAP_BATCH_SIZES.astype(np.float64)),
    _POWERS.tolist(),
    [str(2**p) for p in _POWERS],
    [-0.5, float(np.log2(MAP_BATCH_SIZES[-1])) + 0.3],
    0.25,
)
_STEP = float(MAP_MOMENTA[1] - MAP_MOMENTA[0])
_MOMENTUM_ROWS = Rows(
    "momentum",
    MAP_MOMENTA,
    MAP_MOMENTA.astype(np.float64),
    [0.0, 0.2, 0.4, 0.6, 0.8, 0.99],
    ["0", "0.2", "0.4", "0.6", "0.8", "0.99"],
    [float(MAP_MOMENTA[0]) - _STEP, float(MAP_MOMENTA[-1]) + _STEP],
    _STEP / 2,
)


def _axes(loss: str, rows: Rows) -> dict:
    lo_x, hi_x = _X[0] - (_X[1] - _X[0]) / 2, _X[-1] + (_X[-1] - _X[-2]) / 2
    decades = np.arange(np.ceil(lo_x), np.floor(hi_x) + 1)
    suffix = _SUFFIX[loss]
    return {
        f"xaxis{suffix}": {
            "domain": _DOMAINS[loss],
            "range": [lo_x, hi_x],
            # A tick at every decade, a label at every other one, level: six labels turned on their
            # side under a panel 120 px wide on a 390 px phone, and ran into the axis's title.
            # (Plotly's ticklabelstep does nothing for ticks given as an array.)
            "tickvals": decades.tolist(),
            "ticktext": [f"{10.0**d:g}" if d % 2 == 0 else "" for d in decades],
            "tickangle": 0,
            "title": {"text": f"lr ({loss} loss)"},
            "anchor": f"y{suffix}",
        },
        f"yaxis{suffix}": {
            "range": rows.span,
            "tickvals": rows.tickvals,
            "ticktext": rows.ticktext,
            # The rows are the sum panel's, titled there: beside the mean panel, "momentum" ran into
            # the sum panel in the projector view, and "B" into its cells on a phone.
            "title": {"text": rows.name if loss == "sum" else ""},
            "anchor": f"x{suffix}",
        },
    }


def _point(names) -> str:
    """Names as one point: "w", or "(w, b)" over several leaves."""
    names = list(names)
    return names[0] if len(names) == 1 else f"({', '.join(names)})"


def _start(settings: Settings) -> str:
    """Where every cell's run starts: "w0 = 1.5", or "(w0, b0) = (1.5, 4)" under the w, b model."""
    start = params(settings)
    return f"{_point(f'{name}0' for name in start)} = {_point(f'{v:.4g}' for v in start.values())}"


def _error(settings: Settings, final: str = "_N") -> str:
    """What the colour is: "log10 |w_N − w*|", or the distance in (w, b) under the w, b model."""
    start = params(settings)
    return f"log10 |{_point(start)}{final} − {_point(f'{name}*' for name in start)}|"


class StabilityChart:
    """One figure, two panels (sum, mean), TRACES_PER_LOSS traces each, and the current setting's
    box around its cell on each panel, a layout shape (`marker`); `rows` says what its rows are."""

    def __init__(self, rows: Rows):
        self.rows = rows

    def title(self, settings: Settings) -> str:
        # Lines short enough for a phone (Plotly does not wrap titles): at 390 px each fits the 342
        # px from the title's start to the chart's edge, for N up to 2048 and a w0 of up to four
        # characters (a slider value: -9.5); a w0 typed with many more digits may run past it.
        if self.rows.name == "momentum":
            return (
                f"Stability map: lr × momentum at B = {settings.B}<br><sup>N = {settings.N} steps from "
                f"{_start(settings)}; striped orange: diverged<br>colour: {_error(settings)}; dashed: the "
                "critical lr of theory<br>white box: the current setting; click a cell to go there</sup>"
            )
        return (
            f"Stability map: outcome after N = {settings.N} steps<br><sup>where each (lr, B) ends from "
            f"{_start(settings)}; striped orange: diverged<br>colour: {_error(settings)}; dashed: the "
            "critical lr of theory<br>white box: the current setting; click a cell to go there</sup>"
        )

    def layout(self, settings: Settings) -> dict:
        title = self.title(settings)
        # The explorer's common layout; its single pair of axes is replaced by one pair per panel.
        layout = base_layout(
            title,
            "",
            "",
            # Panels about 305 px tall between the title above and the colour bar below.
            height=540,
            # Above, a title and three <sup> lines; below, the axes' labels and titles, then the colour
            # bar and its labels; on the left the B axis's tick labels: as wide as Plotly makes them
            # on a window 1024 px wide or more (widgets.figures.MARGIN).
            margin={"l": 61, "t": 115, "b": 120},
            # The subtitle says what the lines are: a legend would show the white dashes on white.
            showlegend=False,
            coloraxis={
                "colorscale": "Viridis",
                "cmin": _ERROR_RANGE[0],
                "cmax": _ERROR_RANGE[1],
                # Below the panels, across the middle: on the right it would take 136 px of every
                # window's width from the two panels, which a 390 px phone cannot spare.
                "colorbar": {
                    "title": {"text": _error(settings, ""), "side": "bottom"},
                    "orientation": "h",
                    "x": 0.5,
                    "xanchor": "center",
                    "len": 0.6,
                    "thickness": 12,
                    "yref": "container",
                    "y": 0,
                    "yanchor": "bottom",
                    "ypad": 6,
                },
            },
        )
        for loss in LOSSES:
            layout.update(_axes(loss, self.rows))
        layout["shapes"] = self.marker(settings)
        return layout

    def styles(self) -> list[dict]:
        # Each cell's lr and row value, (rows, lrs, 2) float32, for its hover text: a binary buffer
        # of 16 KB per heatmap, where the same words as a text array were 50 KB of JSON, sent again
        # with every new map (the figure's data goes whole).
        cells = np.stack(
            np.broadcast_arrays(
                np.asarray(MAP_LRS, dtype=np.float32)[None, :],
                np.asarray(self.rows.values, dtype=np.float32)[:, None],
            ),
            axis=-1,
        )
        row = "%{customdata[1]:.2~g}" if self.rows.name == "momentum" else "%{customdata[1]}"
        cell = f"lr = %{{customdata[0]:.3~g}}, {self.rows.name} = {row}"
        y = self.rows.positions
        styles = []
        for loss in LOSSES:
            axes = {"xaxis": f"x{_SUFFIX[loss]}", "yaxis": f"y{_SUFFIX[loss]}"}
            styles += [
                {
                    "type": "heatmap",
                    "x": _X,
                    "y": y,
                    "customdata": cells,
                    # A cell of neither kind (NaN here) says nothing: Plotly's default labels the
                    # gaps too, and every stable cell then said "diverged" (the overlay's words).
                    "hoverongaps": False,
                    "coloraxis": "coloraxis",
                    "name": f"outcome, {loss}",
                    "hovertemplate": cell + "<br>log10 |w − w*| = %{z:.3g}<extra>" + loss + "</extra>",
                    **axes,
                },
                {
                    "type": "heatmap",
                    "x": _X,
                    "y": y,
                    "customdata": cells,
                    "hoverongaps": False,
                    "colorscale": [[0, COLORS["diverged"]], [1, COLORS["diverged"]]],
                    # A 1 px gap between rows of diverged cells: a striped texture, not the colour
                    # alone, tells them (rows only: at 390 px a column is under 2 px wide).
                    "ygap": 1,
                    "showscale": False,
                    "name": "diverged",
                    "hovertemplate": cell + "<br>diverged<extra>" + loss + "</extra>",
                    **axes,
                },
                {
                    "type": "scatter",
                    "mode": "lines",
                    "line": BOUNDARY_OUTLINE,
                    "name": "critical lr (theory), outline",
                    "hoverinfo": "skip",
                    **axes,
                },
                {
                    "type": "scatter",
                    "mode": "lines",
                    "line": BOUNDARY,
                    "name": "critical lr (theory)",
                    "hovertemplate": "critical lr %{customdata:.4g}<extra>" + loss + "</extra>",
                    **axes,
                },
            ]
        return styles

    def series(self, stability) -> dict[str, list[dict]]:
        """Fields of the traces that change with the map, by loss (the box's are `marker`'s)."""
        y = self.rows.positions
        fields = {}
        for loss in LOSSES:
            diverged = stability.diverged[loss]
            critical = stability.critical_lr[loss]
            shown = np.isfinite(critical) & (critical > 0)
            with np.errstate(divide="ignore"):
                boundary_x = np.where(shown, np.log10(np.where(shown, critical, 1.0)), np.nan)
            fields[loss] = [
                {"z": plottable(np.clip(stability.log10_error[loss], *_ERROR_RANGE))},
                {"z": plottable(np.where(diverged, 1.0, np.nan))},
                {"x": boundary_x, "y": y},
                {"x": boundary_x, "y": y, "customdata": critical},
            ]
        return fields

    def marker(self, settings: Settings) -> list[dict]:
        """The current setting's box around its cell, white on a black outline (two shapes), the
        same on both panels: layout shapes, so that a move of lr or B changes the layout alone, which
        the browser draws without computing the heatmaps again. Not enlarged in the projector view:
        twice as thick, it would hide most of the 8 px cell it marks."""
        x, y = float(np.log10(settings.lr)), self.rows.position(settings)
        half_x, half_y = (_X[1] - _X[0]) / 2, self.rows.half
        return [
            {
                "type": "rect",
                "xref": f"x{_SUFFIX[loss]}",
                "yref": f"y{_SUFFIX[loss]}",
                "x0": x - half_x,
                "x1": x + half_x,
                "y0": y - half_y,
                "y1": y + half_y,
                "line": line,
                "layer": "above",
            }
            for loss in LOSSES
            for line in (BOX_OUTLINE, BOX)
        ]

    def data(self, stability) -> list[dict]:
        series = self.series(stability)
        return [fields for loss in LOSSES for fields in series[loss]]

    def build(self, stability, settings: Settings, widget=go.Figure):
        """The map as `widget(data=..., layout=...)` makes it (widgets.figures.Chart.build)."""
        traces = []
        for style, fields in zip(self.styles(), self.data(stability), strict=True):
            kind = style.pop("type")
            traces.append((go.Heatmap if kind == "heatmap" else go.Scatter)(**style, **fields))
        return widget(data=traces, layout=self.layout(settings))

    def update(self, figure, stability, settings: Settings) -> None:
        data = self.data(stability)
        send(figure, data, range(len(data)), self.layout_update(settings))

    def update_marker(self, figure, settings: Settings) -> None:
        send(figure, [], [], {"shapes": self.marker(settings)})

    def layout_update(self, settings: Settings) -> dict:
        return {
            "title.text": self.title(settings),
            "coloraxis.colorbar.title.text": _error(settings, ""),
            "shapes": self.marker(settings),
        }


CHART = StabilityChart(_B_ROWS)
MOMENTUM_CHART = StabilityChart(_MOMENTUM_ROWS)
CHARTS = {"B": CHART, "momentum": MOMENTUM_CHART}  # by the `map` setting


KEYS = {
    ("w",): "Colour: log10 |w_N − w*|, how far the weight ends from w* (the least-squares weight) after N "
    "steps: −6 is on it, 0 one unit away, 3 a thousand away. The critical lr of theory is the lr at "
    "which the error stops shrinking: right of the dashed line, theory says a run diverges.",
    ("w", "b"): "Colour: log10 |(w, b)_N − (w*, b*)|, how far the params end from the least-squares (w*, b*) "
    "after N steps: −6 is on it, 0 one unit away, 3 a thousand away. The critical lr of theory is the "
    "largest lr the valley's steepest direction allows: right of the dashed line, theory says a run "
    "diverges.",
}
"""What the map's colour and dashed line mean, in words, under it, for each model's leaves."""

BLANK_ROWS = (
    " Blank rows: batch sizes whose N batches need more rows than the data have (tick replace to use "
    "rows again)."
)
"""Said under the lr x B map of data of rows without replace (widgets.rows.stitched_map)."""


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread (a kernel's, while it runs a cell), or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def on_loop(loop: asyncio.AbstractEventLoop | None, draw, *args) -> None:
    """Run `draw(*args)` on `loop`, the kernel's, between its messages, or here when `loop` is None
    (no kernel's event loop: tests). A page that connects again asks for every widget's state, and
    the kernel writes them all into one reply: a figure sent by a worker thread while that reply
    was being written would go before it, and the reply's older figure would be drawn last."""
    if loop is None:
        draw(*args)
        return
    try:
        loop.call_soon_threadsafe(draw, *args)
    except RuntimeError:  # the loop is closed: the kernel is stopping
        pass


def map_key_text(settings: Settings) -> str:
    """The words under the map: what its symbols mean, for the model and the data."""
    text = KEYS[leaves(settings)]
    if of_rows(settings) and not settings.replace and settings.map == "B":
        text += BLANK_ROWS
    return text


class StabilityPanel:
    """The map's figure and a line saying whether it is current; `widget` is what a page shows, with
    `control` (the explorer's `map` control) above it when given.

    `follow(settings)` is called after every change of the explorer's settings. `pick(**fields)`
    receives the Settings fields of a clicked cell: lr and B, or lr and momentum.
    """

    def __init__(
        self, model: Model, settings: Settings, pick, widget, background=True, batch=None, control=None
    ):
        self.model = model
        self._pick = pick
        self._batch = or_unbatched(batch)  # the caller's widgets.batch.Batch: its changes go as one
        self._lock = threading.Lock()
        self._wanted = model.map_key(settings)  # the key of the newest request
        self._asked = -math.inf  # when it came (time.monotonic)
        self._settings = settings
        self._executor = concurrent.futures.ThreadPoolExecutor(1, "stability-map") if background else None
        self._future: concurrent.futures.Future | None = None
        # The kernel's loop, where the worker's maps are drawn (none without a worker: drawn at once).
        self._loop = running_loop() if background else None
        self._widget_class = widget  # makes the map's figures (widgets.surface.surface_maker)
        # A figure for each kind of map (`map`) shown so far, by kind, and the map each draws: the
        # one shown is `kind`'s, the other is hidden, not removed. Switching back to a map drawn
        # already shows its figure as the page drew it, where one figure for both had Plotly draw
        # both heatmaps anew (146 ms of the page's main thread a switch, docs/performance.md).
        self._figures = {}
        self._maps = {}  # by kind: (key, map) drawn on its figure
        self.kind = settings.map
        # The title's symbols in words, under the map (a title does not wrap, and a phone has room
        # for no more of it). Styled as a caption, but it never changes: not one of the captions
        # that follow each move.
        self.key = ipw.HTML(map_key_text(settings))
        self.key.add_class("scanlab-key")
        self.status = ipw.HTML(self._ready_text(settings))
        self._head = [*([control] if control is not None else []), self.status]
        self.widget = ipw.VBox()
        self._draw_figure(self._wanted, model.stability(settings), settings)

    @property
    def figure(self):
        """The figure shown: the map of the current kind, or the last one drawn while it computes."""
        return self._figures[self.kind]

    def _draw_figure(self, key, stability, settings: Settings) -> None:
        """Draw `stability` on the figure of `settings.map`'s kind, made when first needed, and show
        that figure alone: its changes are sent before it is shown and the other one hidden."""
        kind, chart = settings.map, CHARTS[settings.map]
        figure = self._figures.get(kind)
        if figure is None:
            figure = self._figures[kind] = chart.build(stability, settings, self._widget_class)
            figure.on_click(lambda points: self._clicked(chart, points))
            self.widget.children = [*self._head, *self._figures.values(), self.key]
        elif self._maps[kind][0] != key:
            chart.update(figure, stability, settings)
        else:  # the map it shows: only its box (lr, and B or momentum) may have moved
            chart.update_marker(figure, settings)
        self._maps[kind] = (key, stability)
        figure.alt = self._alt(chart, stability, settings)
        figure.layout.display = None
        for other, hidden in self._figures.items():
            if other != kind:
                hidden.layout.display = "none"
        self.kind = kind

    @staticmethod
    def _which(settings: Settings) -> str:
        if settings.map == "momentum":
            return (
                f"Stability map, lr × momentum at B = {settings.B}, for N = {settings.N}, {_start(settings)}"
            )
        return f"Stability map for N = {settings.N}, {_start(settings)}"

    def _ready_text(self, settings: Settings) -> str:
        return f"{self._which(settings)}: up to date."

    def follow(self, settings: Settings) -> None:
        """Move the marker; recompute the map (in the background) when what it shows changed."""
        key = self.model.map_key(settings)
        now = time.monotonic()
        self.key.value = map_key_text(settings)  # sent when it changes only
        with self._lock:
            self._settings = settings
            changed = key != self._wanted
            self._wanted = key
            dragged = changed and now - self._asked < SETTLE_S  # this request came soon after the last
            if changed:
                self._asked = now
        if not changed:
            with self._lock:  # the worker may be drawing this figure
                CHARTS[self.kind].update_marker(self.figure, settings)
            return
        drawn = self._maps.get(settings.map)
        kept = drawn[1] if drawn and drawn[0] == key else self.model.kept_stability(settings)
        if kept is not None:
            self._draw(key, kept)
            return
        if self._executor is None:
            self._compute(key, settings, settle=0.0)
            return
        with self._lock:
            which = self._which(settings)
            self.status.value = f"<i>Computing the {which[0].lower()}{which[1:]}…</i> (the sliders stay live)"
            self.figure.alt = f"{which}: being computed."
            if self.kind == settings.map:
                CHARTS[self.kind].update_marker(self.figure, settings)
        self._batch.flush()  # "Computing…" reaches the page before the worker's map
        self._future = self._executor.submit(self._compute, key, settings, SETTLE_S if dragged else 0.0)

    def _compute(self, key, settings: Settings, settle: float) -> None:
        # Nothing to do once a newer request is queued behind this one: checked before the wait
        # too, or a drag's queued requests would each wait in turn.
        with self._lock:
            if key != self._wanted:
                return
        if settle:
            time.sleep(settle)  # while a slider is dragged, compute once it rests
            with self._lock:
                if key != self._wanted:
                    return
        try:
            stability = self.model.stability(settings)
        except Exception as error:  # the map is a view: say so, keep the last one, keep the sliders
            self._on_kernel_thread(self._failed, key, error)
            return
        self._on_kernel_thread(self._draw, key, stability)

    def _on_kernel_thread(self, draw, *args) -> None:
        on_loop(self._loop, draw, *args)

    def _failed(self, key, error: Exception) -> None:
        with self._lock:
            if key == self._wanted:
                self.status.value = (
                    "&#9888; The stability map could not be computed for these settings "
                    f"({html.escape(type(error).__name__)}: {html.escape(str(error)[:200])}); "
                    "it shows the last one."
                )

    def _draw(self, key, stability) -> None:
        with self._lock:
            if key != self._wanted:
                return
            settings = self._settings
            self._draw_figure(key, stability, settings)
            self.status.value = self._ready_text(settings)

    def _alt(self, chart: StabilityChart, stability, settings: Settings) -> str:
        """The map in words (its text alternative): what each cell is, and how many diverged."""
        lrs, rows = stability.lrs, chart.rows
        values = rows.values
        counts = ", ".join(
            f"{loss} loss {int(np.sum(stability.diverged[loss]))}" for loss in stability.diverged
        )
        shown = (
            f"{values[0]:.2g} to {values[-1]:.2g}"
            if rows.name == "momentum"
            else f"{values[0]} to {values[-1]}"
        )
        at = f" at B = {settings.B}, heavy-ball momentum" if rows.name == "momentum" else ""
        return (
            f"{self._which(settings)}: for {len(lrs)} learning rates from {lrs[0]:.2g} to {lrs[-1]:.2g} "
            f"and {len(values)} values of {rows.name} from {shown}{at}, the colour is {_error(settings, '')} "
            "after N steps, sum loss on the left and mean loss on the right; the orange cells, striped "
            f"by thin gaps between rows, diverged ({counts} of {len(lrs) * len(values)} each). "
            f"The dashed line is the critical lr, the box the current lr and {rows.name}."
        )

    def wait(self, timeout: float = 30.0) -> None:
        """Block until the newest map is computed (tests and scripts): drawn too, unless a running
        event loop draws it (`_on_kernel_thread`), once this thread gives the loop its turn."""
        if self._future is not None:
            self._future.result(timeout)

    def _clicked(self, chart: StabilityChart, points: list[dict]) -> None:
        """A click on `chart`'s figure (widgets.surface.Surface.on_click): the first point on a cell."""
        for point in points:
            if point.get("trace") not in CELLS:
                continue  # the boundary's line
            try:
                x, y = float(point["x"]), float(point["y"])
            except (KeyError, TypeError, ValueError):
                continue  # a visitor can send anything
            if not (np.isfinite(x) and np.isfinite(y)):
                continue
            rows = chart.rows
            column = int(np.argmin(np.abs(_X - x)))
            row = int(np.argmin(np.abs(rows.positions - y)))
            value = rows.values[row]
            self._pick(lr=float(MAP_LRS[column]), **{rows.name: value.item()})
            return


__all__ = ["CHART", "CHARTS", "MOMENTUM_CHART", "Rows", "StabilityChart", "StabilityPanel"]
