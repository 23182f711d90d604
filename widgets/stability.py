"""The stability map panel: the outcome of every (lr, B) of a grid, sum and mean side by side.

`widgets.model.Model.stability` computes the map with `core.stability_map`; this module draws it
and keeps it current. Moving lr or B only moves the marker. A change of N, w0 or the data recomputes
the map on a worker thread (36 ms at N = 200, 160 ms at N = 1000 on a 2-core CPU, mostly the
theory's critical lr per B), so the sliders stay live meanwhile and the panel says it is computing;
a request waits SETTLE_S for a newer one (a drag computes once it rests), and a result that a newer
request has made stale is dropped. A click on a cell sets lr and B.
"""

from __future__ import annotations

import concurrent.futures
import html
import threading
import time

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go

from widgets.batch import or_unbatched
from widgets.figures import COLORS, base_layout, plottable
from widgets.model import LOSSES, MAP_BATCH_SIZES, MAP_LRS, Model
from widgets.settings import Settings
from widgets.surface import send

# Cells are placed at (log10 lr, log2 B) on linear axes, labelled in lr and B: a heatmap's cells on
# Plotly's log axes would be sized in linear units.
_X = np.log10(MAP_LRS)
_Y = np.log2(MAP_BATCH_SIZES.astype(np.float64))
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
SETTLE_S = 0.08  # a recompute waits this long for a newer request (a drag) before it starts


def _cell_labels() -> list[list[str]]:
    return [[f"lr = {lr:.3g}, B = {b}" for lr in MAP_LRS] for b in MAP_BATCH_SIZES]


def _axes(loss: str) -> dict:
    lo_x, hi_x = _X[0] - (_X[1] - _X[0]) / 2, _X[-1] + (_X[-1] - _X[-2]) / 2
    decades = np.arange(np.ceil(lo_x), np.floor(hi_x) + 1)
    powers = np.arange(0, int(_Y[-1]) + 1)
    suffix = _SUFFIX[loss]
    return {
        f"xaxis{suffix}": {
            "domain": _DOMAINS[loss],
            "range": [lo_x, hi_x],
            "tickvals": decades.tolist(),
            "ticktext": [f"{10.0**d:g}" for d in decades],
            "title": {"text": f"lr ({loss} loss)"},
            "anchor": f"y{suffix}",
        },
        f"yaxis{suffix}": {
            "range": [-0.5, _Y[-1] + 0.3],
            "tickvals": powers.tolist(),
            "ticktext": [str(2**p) for p in powers],
            "title": {"text": "B"},
            "anchor": f"x{suffix}",
        },
    }


class StabilityChart:
    """One figure, two panels (sum, mean), TRACES_PER_LOSS traces each, and the current setting's
    box around its cell on each panel, a layout shape (`marker`)."""

    def layout(self, settings: Settings) -> dict:
        # Lines short enough for a phone (Plotly does not wrap titles): at 390 px each fits the 342
        # px from the title's start to the chart's edge, for N up to 2048 and a w0 of up to four
        # characters (a slider value: -9.5); a w0 typed with many more digits may run past it.
        title = (
            f"Stability map: outcome after N = {settings.N} steps<br><sup>where each (lr, B) ends from w0 = "
            f"{settings.w0:.4g}; striped orange: diverged<br>colour: log10 |w_N − w*|; dashed: the critical "
            "lr of theory<br>white box: the current setting; click a cell to go there</sup>"
        )
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
                    "title": {"text": "log10 |w − w*|", "side": "bottom"},
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
            layout.update(_axes(loss))
        layout["shapes"] = self.marker(settings)
        return layout

    @staticmethod
    def styles() -> list[dict]:
        labels = _cell_labels()
        styles = []
        for loss in LOSSES:
            axes = {"xaxis": f"x{_SUFFIX[loss]}", "yaxis": f"y{_SUFFIX[loss]}"}
            styles += [
                {
                    "type": "heatmap",
                    "x": _X,
                    "y": _Y,
                    "text": labels,
                    "coloraxis": "coloraxis",
                    "name": f"outcome, {loss}",
                    "hovertemplate": "%{text}<br>log10 |w − w*| = %{z:.3g}<extra>" + loss + "</extra>",
                    **axes,
                },
                {
                    "type": "heatmap",
                    "x": _X,
                    "y": _Y,
                    "text": labels,
                    "colorscale": [[0, COLORS["diverged"]], [1, COLORS["diverged"]]],
                    # A 1 px gap between rows of diverged cells: a striped texture, not the colour
                    # alone, tells them (rows only: at 390 px a column is under 2 px wide).
                    "ygap": 1,
                    "showscale": False,
                    "name": "diverged",
                    "hovertemplate": "%{text}<br>diverged<extra>" + loss + "</extra>",
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

    @staticmethod
    def series(stability) -> dict[str, list[dict]]:
        """Fields of the traces that change with the map, by loss (the box's are `marker`'s)."""
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
                {"x": boundary_x, "y": _Y},
                {"x": boundary_x, "y": _Y, "customdata": critical},
            ]
        return fields

    @staticmethod
    def marker(settings: Settings) -> list[dict]:
        """The current setting's box around its cell, white on a black outline (two shapes), the
        same on both panels: layout shapes, so that a move of lr or B changes the layout alone, which
        the browser draws without computing the heatmaps again. Not enlarged in the projector view:
        twice as thick, it would hide most of the 8 px cell it marks."""
        x, y = float(np.log10(settings.lr)), float(np.log2(settings.B))
        half_x, half_y = (_X[1] - _X[0]) / 2, 0.25
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
        return {"title.text": self.layout(settings)["title"]["text"], "shapes": self.marker(settings)}


CHART = StabilityChart()


class StabilityPanel:
    """The map's figure and a line saying whether it is current; `widget` is what a page shows.

    `follow(settings)` is called after every change of the explorer's settings. `pick` receives the
    (lr, B) of a clicked cell.
    """

    def __init__(self, model: Model, settings: Settings, pick, widget, background=True, batch=None):
        self.model = model
        self._pick = pick
        self._batch = or_unbatched(batch)  # the caller's widgets.batch.Batch: its changes go as one
        self._lock = threading.Lock()
        self._wanted = Model.map_key(settings)  # the key of the newest request
        self._settings = settings
        self._executor = concurrent.futures.ThreadPoolExecutor(1, "stability-map") if background else None
        self._future: concurrent.futures.Future | None = None
        self._widget_class = widget  # makes the map's figure (widgets.surface.surface_maker)
        self._drawn = model.stability(settings)  # the map the figure shows
        self.figure = self._build()
        self.figure.alt = self._alt(self._drawn, settings)
        self.status = ipw.HTML(self._ready_text(settings))
        self.widget = ipw.VBox([self.status, self.figure])

    def _build(self):
        """The map's figure as last drawn, its cells clickable."""
        figure = CHART.build(self._drawn, self._settings, self._widget_class)
        figure.on_click(self._clicked)
        return figure

    @staticmethod
    def _ready_text(settings: Settings) -> str:
        return f"Stability map for N = {settings.N}, w0 = {settings.w0:.4g}: up to date."

    def follow(self, settings: Settings) -> None:
        """Move the marker; recompute the map (in the background) when N, w0 or the data changed."""
        key = Model.map_key(settings)
        with self._lock:
            self._settings = settings
            changed = key != self._wanted
            self._wanted = key
        if not changed:
            with self._lock:  # the worker may be drawing this figure
                CHART.update_marker(self.figure, settings)
            return
        if self._executor is None:
            self._compute(key, settings, settle=0.0)
            return
        with self._lock:
            self.status.value = (
                f"<i>Computing the stability map for N = {settings.N}, w0 = {settings.w0:.4g}…</i> "
                "(the sliders stay live)"
            )
            self.figure.alt = f"Stability map: being computed for N = {settings.N}, w0 = {settings.w0:.4g}."
            CHART.update_marker(self.figure, settings)
        self._batch.flush()  # "Computing…" reaches the page before the worker's map
        self._future = self._executor.submit(self._compute, key, settings)

    def _compute(self, key, settings: Settings, settle: float = SETTLE_S) -> None:
        time.sleep(settle)  # while a slider is dragged, compute once it rests
        with self._lock:
            if key != self._wanted:
                return  # a newer request is queued behind this one
        try:
            stability = self.model.stability(settings)
        except Exception as error:  # the map is a view: say so, keep the last one, keep the sliders
            with self._lock:
                if key == self._wanted:
                    self.status.value = (
                        "&#9888; The stability map could not be computed for these settings "
                        f"({html.escape(type(error).__name__)}: {html.escape(str(error)[:200])}); "
                        "it shows the last one."
                    )
            return
        self._draw(key, stability)

    def _draw(self, key, stability) -> None:
        with self._lock:
            if key != self._wanted:
                return
            settings = self._settings
            self._drawn = stability
            CHART.update(self.figure, stability, settings)
            self.status.value = self._ready_text(settings)
            self.figure.alt = self._alt(stability, settings)

    @staticmethod
    def _alt(stability, settings: Settings) -> str:
        """The map in words (its text alternative): what each cell is, and how many diverged."""
        lrs, sizes = stability.lrs, stability.batch_sizes
        counts = ", ".join(
            f"{loss} loss {int(np.sum(stability.diverged[loss]))}" for loss in stability.diverged
        )
        return (
            f"Stability map for N = {settings.N}, w0 = {settings.w0:.4g}: for {len(lrs)} learning rates "
            f"from {lrs[0]:.2g} to {lrs[-1]:.2g} and {len(sizes)} batch sizes from {sizes[0]} to "
            f"{sizes[-1]}, the colour is log10 |w − w*| after N steps, sum loss on the left and mean "
            f"loss on the right; the orange cells, striped by thin gaps between rows, diverged ({counts} of "
            f"{len(lrs) * len(sizes)} each). "
            "The dashed line is the critical lr, the box the current lr and B."
        )

    def wait(self, timeout: float = 30.0) -> None:
        """Block until the newest map is drawn (tests and scripts)."""
        if self._future is not None:
            self._future.result(timeout)

    def _clicked(self, points: list[dict]) -> None:
        """A click on the page (widgets.surface.Surface.on_click): the first point on a cell."""
        for point in points:
            if point.get("trace") not in CELLS:
                continue  # the boundary's line
            try:
                x, y = float(point["x"]), float(point["y"])
            except (KeyError, TypeError, ValueError):
                continue  # a visitor can send anything
            if not (np.isfinite(x) and np.isfinite(y)):
                continue
            column = int(np.argmin(np.abs(_X - x)))
            row = int(np.argmin(np.abs(_Y - y)))
            self._pick(float(MAP_LRS[column]), int(MAP_BATCH_SIZES[row]))
            return


__all__ = ["CHART", "StabilityChart", "StabilityPanel"]
