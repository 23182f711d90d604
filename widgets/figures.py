"""The explorer's five Plotly charts, as specs: no transport, no page layout.

Each chart is a list of trace styles (fixed), a `series` function giving the changing fields of
every trace but the last for a result and a view (which loss is shown), and a `marker` function
for the last trace, the current step, which playback updates alone. The same functions build the
chart with a maker (a go.Figure, or a widgets.surface.Surface) and update it in place
(widgets.surface.send): when only points moved on fixed axes, the browser moves them without
redrawing the chart. What the charts share (colours, layouts, the `Chart` base) is widgets.chart.
"""

from __future__ import annotations

import numpy as np

from widgets.axes import (
    LOG_TICKS_UP_TO,
    SignedLog,
    log_ticks,
    tick_label,
)
from widgets.chart import (
    COLORS,
    DIVERGED_MARKER,
    NONE,
    PARTING_MARKER,
    STEP_MARKER,
    TITLED_MARGIN,
    YOURS,
    Chart,
    base_layout,
    diverged_point,
    first_shown,
    line_mode,
    line_style,
    note,
    one_point,
    plottable,
    run_name,
    shown,
    step_numbers,
    value_at,
    with_paths,
)
from widgets.landscape import Landscape, Plane, left_frame
from widgets.model import LOSSES, Result, overlaid
from widgets.settings import leaves

# w per step for each loss, and w* as a dashed line: the trajectory and sum-vs-mean charts.
_WEIGHTS_AND_OPTIMUM = [
    line_style("sum", name="w, sum loss", hovertemplate="step %{x}<br>w = %{y:.6g}<extra>sum</extra>"),
    line_style("mean", name="w, mean loss", hovertemplate="step %{x}<br>w = %{y:.6g}<extra>mean</extra>"),
    {
        "mode": "lines",
        "name": "w* (least squares)",
        "line": {"color": COLORS["optimum"], "dash": "dash"},
        "hovertemplate": "w* = %{y:.6g}<extra></extra>",
    },
]


# b per step for each loss and b* (the w, b model's), beside w on the trajectory: dash-dot lines.
_BIASES_AND_OPTIMUM = [
    {
        **line_style("sum", name="b, sum loss", hovertemplate="step %{x}<br>b = %{y:.6g}<extra>sum</extra>"),
        "line": {"color": COLORS["sum"], "width": 2, "dash": "dashdot"},
    },
    {
        **line_style(
            "mean", name="b, mean loss", hovertemplate="step %{x}<br>b = %{y:.6g}<extra>mean</extra>"
        ),
        "line": {"color": COLORS["mean"], "width": 2, "dash": "dashdot"},
    },
    {
        "mode": "lines",
        "name": "b* (least squares)",
        "line": {"color": COLORS["optimum"], "dash": "dot"},
        "hovertemplate": "b* = %{y:.6g}<extra></extra>",
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


def _diverging_scale(result: Result, runs) -> SignedLog | None:
    """A SignedLog scale when any of `runs` (core histories) diverged, else None."""
    if any(h.diverged_at is not None for h in runs):
        s = result.settings
        if "b" in leaves(s):  # w and b share the axis
            return SignedLog.around(s.w0, result.w_star, s.b0, result.b_star)
        return SignedLog.around(s.w0, result.w_star)
    return None


class WeightChart(Chart):
    """A chart of the weight per step: a plain axis, or a SignedLog one when a run it draws diverges
    (`scale`), said in its axis title and a note."""

    signed_log = True
    title = ""

    pytree_title = ""  # the title under the w, b model, when it differs

    def layout(self, result, view):
        layout = base_layout(self.title, "step", "weight w", margin=TITLED_MARGIN)
        return with_paths(layout, self.layout_update(result, view))

    def layout_update(self, result, view):
        both = "b" in leaves(result.settings) and self.pytree_title
        words = _scale_words(self.scale(result, view), "w and b" if both else "weight w")
        return {**words, "title.text": self.pytree_title if both else self.title}


class Trajectory(WeightChart):
    name = "trajectory"
    styles = [
        *_WEIGHTS_AND_OPTIMUM,
        # x counts steps taken: the weight past the limit that step k produced stands at k + 1, where
        # the status and the loss chart say "step k". "diverged: step k + 1" read as a contradiction.
        {
            **DIVERGED_MARKER,
            "name": "diverged",
            "hovertemplate": "diverged: w after %{x} steps = %{y:.4g}<extra></extra>",
        },
        # The chosen optimizer and schedule from the same w0 on the same batches, against plain SGD.
        {
            "mode": "lines",
            "line": {"color": COLORS["optimizer"], "width": 3, "dash": "dot"},
            "hovertemplate": "step %{x}<br>w = %{y:.6g}",  # and the trace's name
        },
        *_BIASES_AND_OPTIMUM,
        # A learner's loop over the lesson's (Explorer(step=fn)); hidden without one.
        {**YOURS, "name": "w, your loop", "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>yours</extra>"},
        {**PARTING_MARKER, "hovertemplate": "they part after step %{x}<br>yours: %{y:.6g}<extra></extra>"},
        {**STEP_MARKER, "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>current</extra>"},
    ]

    title = (
        "Trajectory: the carry w after each step<br><sup>w* (dashed): the weight that fits the run's "
        "batches best</sup>"
    )
    pytree_title = (
        'Trajectory: the carry {"w", "b"} per step<br><sup>w solid, b dash-dot; w* and b* '
        "(dashed, dotted): the best fit</sup>"
    )

    def scale(self, result, view):
        runs = [result.histories[loss] for loss in LOSSES if shown(view, loss)]
        if overlaid(result.settings):
            runs.append(result.optimized[first_shown(view)])
        return _diverging_scale(result, runs)

    def series(self, result, view):
        s = result.settings
        scale = self.scale(result, view)
        steps = step_numbers(s.N + 1)
        drawn = {loss: plottable(result.histories[loss].params["w"]) for loss in LOSSES}
        points = [diverged_point(result.histories[loss], drawn[loss]) for loss in LOSSES if shown(view, loss)]
        points = [p for p in points if p is not None]
        styles = self.styles
        return [
            {
                "x": steps,
                **_weights(styles[0], drawn["sum"], scale),
                "visible": shown(view, "sum"),
                "mode": line_mode(s.N),
            },
            {
                "x": steps,
                **_weights(styles[1], drawn["mean"], scale),
                "visible": shown(view, "mean"),
                "mode": line_mode(s.N),
            },
            {"x": [0, s.N], **_weights(styles[2], [result.w_star] * 2, scale)},
            {"x": [k for k, _ in points], **_weights(styles[3], [v for _, v in points], scale)},
            self._overlay(result, view, scale),
            *self._biases(result, view, scale),
            *self._yours(result, scale),
        ]

    def _yours(self, result, scale) -> list[dict]:
        """A learner's w per step (`Result.yours`) and the ✕ where it parts; hidden without one."""
        yours = result.yours
        if yours is None:
            return [NONE, NONE]
        w = plottable(yours.carries[:, 0])
        k = yours.parted
        part = [float(w[k])] if k is not None and np.isfinite(w[k]) else []
        return [
            {"x": step_numbers(len(w)), **_weights(self.styles[-3], w, scale), "visible": True},
            {"x": [k] if part else [], **_weights(self.styles[-2], part, scale), "visible": True},
        ]

    def _biases(self, result, view, scale) -> list[dict]:
        """b per step for each loss shown and b*, under the w, b model; hidden under w."""
        s = result.settings
        if "b" not in leaves(s):
            return [NONE] * len(_BIASES_AND_OPTIMUM)
        steps = step_numbers(s.N + 1)
        return [
            *(
                {
                    "x": steps,
                    **_weights(style, plottable(result.histories[loss].params["b"]), scale),
                    "visible": shown(view, loss),
                    "mode": line_mode(s.N),
                }
                for loss, style in zip(LOSSES, _BIASES_AND_OPTIMUM, strict=False)
            ),
            {"x": [0, s.N], **_weights(_BIASES_AND_OPTIMUM[2], [result.b_star] * 2, scale), "visible": True},
        ]

    def _overlay(self, result, view, scale) -> dict:
        """The chosen optimizer's weights for the first loss shown; hidden for plain SGD."""
        s = result.settings
        if not overlaid(s):
            return {"x": [], "y": [], "customdata": None, "visible": False, "name": "another optimizer"}
        loss = first_shown(view)
        return {
            "x": step_numbers(s.N + 1),
            **_weights(self.styles[4], plottable(result.optimized[loss].params["w"]), scale),
            "visible": True,
            "name": f"w, {run_name(s)} ({loss} loss)",
        }

    def marker(self, result, view, step):
        here = value_at(result.histories[first_shown(view)].params["w"], step)
        point = one_point(step, here)
        return {**point, **_weights(self.styles[-1], here, self.scale(result, view))}


class LossPerStep(Chart):
    name = "loss"
    styles = [
        line_style(
            "sum", name="batch loss, sum", hovertemplate="step %{x}<br>loss = %{y:.4g}<extra>sum</extra>"
        ),
        line_style(
            "mean", name="batch loss, mean", hovertemplate="step %{x}<br>loss = %{y:.4g}<extra>mean</extra>"
        ),
        {**DIVERGED_MARKER, "name": "diverged", "hovertemplate": "diverged: step %{x}<extra></extra>"},
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
        {**STEP_MARKER, "hovertemplate": "step %{x}<br>loss = %{y:.4g}<extra>current</extra>"},
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
        return with_paths(layout, self.layout_update(result, view))

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
        steps = step_numbers(result.settings.N)
        drawn = {loss: plottable(result.histories[loss].losses, positive=True) for loss in LOSSES}
        marks = []
        for loss in LOSSES:
            k = result.histories[loss].diverged_at
            if shown(view, loss) and k is not None and value_at(drawn[loss], k):
                marks.append((k, float(drawn[loss][k])))
        zeros = zero_losses(result, view)
        floor = zero_floor(result, view)
        return [
            {
                "x": steps,
                "y": drawn["sum"],
                "visible": shown(view, "sum"),
                "mode": line_mode(result.settings.N),
            },
            {
                "x": steps,
                "y": drawn["mean"],
                "visible": shown(view, "mean"),
                "mode": line_mode(result.settings.N),
            },
            {"x": [k for k, _ in marks], "y": [v for _, v in marks]},
            {"x": zeros, "y": np.full(len(zeros), floor)} if zeros.size else {"x": [], "y": []},
        ]

    def marker(self, result, view, step):
        here = value_at(result.histories[first_shown(view)].losses, step)
        if here and here[0] == 0:
            return one_point(step, [zero_floor(result, view)])  # on the floor, with the step's ▼
        return one_point(step, here if here and here[0] > 0 else [])


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


class SumVsMean(WeightChart):
    name = "sum_vs_mean"
    styles = [
        *_WEIGHTS_AND_OPTIMUM,
        {**STEP_MARKER, "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>current</extra>"},
    ]

    title = "Same lr, sum and mean<br><sup>the mean's step is lr/B in sum terms</sup>"

    def scale(self, result, view):
        return _diverging_scale(result, result.histories.values())  # both losses are drawn

    def series(self, result, view):
        s = result.settings
        scale = self.scale(result, view)
        steps = step_numbers(s.N + 1)
        styles = self.styles
        return [
            {
                "x": steps,
                **_weights(styles[0], plottable(result.histories["sum"].params["w"]), scale),
                "mode": line_mode(s.N),
            },
            {
                "x": steps,
                **_weights(styles[1], plottable(result.histories["mean"].params["w"]), scale),
                "mode": line_mode(s.N),
            },
            {"x": [0, s.N], **_weights(styles[2], [result.w_star] * 2, scale)},
        ]

    def marker(self, result, view, step):
        # Both losses are drawn.
        here = sum((value_at(result.histories[loss].params["w"], step) for loss in LOSSES), [])
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
        {**STEP_MARKER, "hovertemplate": "step %{x}<br>|factor| = %{y:.4g}<extra>current</extra>"},
    ]

    titles = {
        "w": (
            "Per-step factor: |1 − c·lr·S_k|<br><sup>each step multiplies the distance to its batch's "
            "optimum by it</sup>",
            "|1 − c·lr·S_k|",
        ),
        # The step matrix I − c·lr·H_k, H_k = [[S_k, X_k], [X_k, B]], stretches the error (e_w, e_b)
        # by |1 − c·lr·λ| along each eigenvector of H_k: the larger of the two is what can diverge.
        "w,b": (
            "Per-step factor: largest |1 − c·lr·λ_k|<br><sup>λ_k: the curvatures of batch k's loss over "
            "(w, b)</sup>",
            "largest |1 − c·lr·λ_k|",
        ),
    }

    def layout(self, result, view):
        title, y_title = self.titles[result.settings.model]
        return base_layout(title, "step", y_title, margin=TITLED_MARGIN)

    def layout_update(self, result, view):
        title, y_title = self.titles[result.settings.model]
        return {"title.text": title, "yaxis.title.text": y_title}

    def series(self, result, view):
        s = result.settings
        steps = step_numbers(s.N)
        matrix = len(leaves(s)) > 1  # H_k is a matrix: its largest eigenvalue bounds the step
        return [
            {
                "x": steps,
                "y": plottable(np.abs(result.factors[loss])),
                "visible": shown(view, loss),
                "name": name if matrix else style["name"],
            }
            for loss, name, style in zip(
                LOSSES,
                ("largest |1 − 2·lr·λ_k|, sum", "largest |1 − 2·lr·λ_k/B|, mean"),
                self.styles,
                strict=False,
            )
        ] + [{"x": [-0.5, s.N - 0.5], "y": [1.0, 1.0]}]

    def marker(self, result, view, step):
        return one_point(step, value_at(np.abs(result.factors[first_shown(view)][step : step + 1]), 0))


CHARTS = {
    chart.name: chart
    for chart in (Trajectory(), LossPerStep(), Landscape(), Plane(), SumVsMean(), Divergence())
}

__all__ = [
    "CHARTS",
    "Divergence",
    "Landscape",
    "LossPerStep",
    "Plane",
    "SumVsMean",
    "Trajectory",
    "WeightChart",
    "left_frame",
    "run_name",
    "zero_floor",
    "zero_losses",
]
