"""The two landscapes, in one place on the page: the lesson's w model's (the average loss L(w) with
the steps drawn on it) and the w, b model's (the loss's contours over (w, b) with the runs' paths
on them). widgets.figures.CHARTS holds both; each draws its own model's results (`Chart.models`)."""

from __future__ import annotations

import numpy as np

from widgets.chart import (
    COLORS,
    GREY,
    NONE,
    PARTING_MARKER,
    STEP_MARKER,
    TITLED_MARGIN,
    YOURS,
    Chart,
    base_layout,
    first_shown,
    line_mode,
    line_style,
    note,
    plottable,
    run_name,
    shown,
    value_at,
    with_paths,
)
from widgets.model import LOSSES, Result, overlaid

# A point of a run on each landscape, as its hover says it.
L_POINT = "w = %{x:.6g}<br>L = %{y:.4g}"
WB_POINT = "w = %{x:.6g}<br>b = %{y:.6g}"


def _paths(point: str) -> list[dict]:
    """The styles of the two runs' paths, sum then mean, each hovering `point` and its loss."""
    return [
        line_style(loss, name=f"path, {loss} loss", hovertemplate=f"{point}<extra>{loss}</extra>")
        for loss in LOSSES
    ]


class Landscape(Chart):
    name = "landscape"
    models = ("w",)  # `Plane` draws the w, b model's
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
        *_paths(L_POINT),
        {
            "mode": "markers",
            "name": "w*",
            "marker": {"size": 11, "symbol": "star", "color": COLORS["optimum"]},
            "hovertemplate": "w* = %{x:.6g}<extra></extra>",
        },
        # A learner's loop over the lesson's (Explorer(step=fn)); hidden without one.
        {**YOURS, "name": "path, your loop", "hovertemplate": f"{L_POINT}<extra>yours</extra>"},
        {**PARTING_MARKER, "hovertemplate": f"they part here<br>{L_POINT}<extra>yours</extra>"},
        {**STEP_MARKER, "hovertemplate": f"{L_POINT}<extra>current</extra>"},
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
        if not result.landscape_w.size:  # a result of the w, b model, drawn by `Plane`
            return [0.0, 1.0], [0.0, 1.0]
        # Fixed to the computed curve: a diverging path leaves the frame instead of squashing it.
        top = float(np.max(result.landscape_loss))
        return [float(result.landscape_w[0]), float(result.landscape_w[-1])], [0.0, 1.05 * top]

    def _path(self, result, loss, index=slice(None)):
        """The run's (weights, losses) at the steps `index` on the landscape, NaN where they cannot
        be drawn. A run that leaves the frame (a diverging one) ends at its edge, where an arrow says
        from which step it is off the chart: its lines out to points past the edge crossed the bowl
        from above, and the browser cannot place an SVG marker 1e21 pixels away ("attribute
        transform: trailing garbage"). A run that stays in the frame is drawn whole."""
        weights = plottable(result.histories[loss].params["w"][index])
        losses = plottable(result.path_loss[loss][index])
        left = left_frame(result, loss)
        if left is not None:
            cut = np.arange(len(result.histories[loss].params["w"]))[index] >= left[0]
            weights[cut] = losses[cut] = np.nan
        return weights, losses

    def series(self, result, view):
        if not result.landscape_w.size:  # a result of the w, b model, drawn by `Plane`
            return [NONE] * (len(self.styles) - 1)
        paths = {loss: self._path(result, loss) for loss in LOSSES}
        # Every trace says whether it is visible: after the w, b model hid them (NONE), a field
        # left out would stay as that model left it.
        return [
            {"x": result.landscape_w, "y": plottable(result.landscape_loss), "visible": True},
            *(
                {"x": w, "y": v, "visible": shown(view, loss), "mode": line_mode(result.settings.N)}
                for loss, (w, v) in paths.items()
            ),
            {
                "x": [result.w_star] if np.isfinite(result.w_star) else [],
                "y": [result.w_star_loss],
                "visible": True,
            },
            *self._yours(result),
        ]

    @staticmethod
    def _yours(result) -> list[dict]:
        """A learner's weights (`Result.yours`) on the curve, and the ✕ where they part from the
        lesson's; hidden without one. Off the curve's frame they are not drawn, as a run that leaves
        it is not."""
        if result.yours is None:
            return [NONE, NONE]
        w = plottable(result.yours.carries[:, 0])
        frame = result.landscape_w
        with np.errstate(invalid="ignore"):
            w[(w < frame[0]) | (w > frame[-1])] = np.nan
        losses = np.interp(w, frame, result.landscape_loss)  # the curve's value there (NaN stays)
        k = result.yours.parted
        here = k is not None and np.isfinite(w[k])
        return [
            {"x": w, "y": losses, "visible": True},
            {"x": [float(w[k])] if here else [], "y": [float(losses[k])] if here else [], "visible": True},
        ]

    def marker(self, result, view, step):
        if not result.landscape_w.size:
            return {"x": [], "y": []}
        weights, losses = self._path(result, first_shown(view), slice(step, step + 1))
        here = bool(value_at(weights, 0) and value_at(losses, 0))
        return {"x": value_at(weights, 0) if here else [], "y": value_at(losses, 0) if here else []}


def left_frame(result: Result, loss: str) -> tuple[int, float] | None:
    """(k, w_k) of the first weight of `loss`'s run outside the landscape's frame of w (or not
    finite), None when the whole run is in it."""
    if not result.landscape_w.size:
        return None
    weights = result.histories[loss].params["w"].astype(np.float64)
    low, high = float(result.landscape_w[0]), float(result.landscape_w[-1])
    with np.errstate(invalid="ignore"):
        outside = np.flatnonzero(~((weights >= low) & (weights <= high)))
    return None if outside.size == 0 else (int(outside[0]), float(weights[outside[0]]))


class Plane(Chart):
    """The w, b model's landscape: contours of the average loss over (w, b), the runs' paths on them,
    the chosen optimizer's dotted beside plain SGD's, and the minimum ★. In place of `Landscape`."""

    name = "plane"
    models = ("w,b",)
    steps_across = False
    own_ranges = True  # the frame of widgets.model.Plane
    title = (
        "Loss landscape: the steps on L(w, b)<br><sup>ellipses: levels of the average loss; ★ (w*, b*) "
        "at the bottom</sup>"
    )
    styles = [
        {
            "mode": "lines",
            "name": "contours of L(w, b)",
            # The lightest blue-grey with 3:1 on white (WCAG 1.4.11: a part needed to read the
            # chart), thin, so the paths drawn over it stay the eye's first stop.
            "line": {"color": "#8792a2", "width": 1},
            "hovertemplate": "w = %{x:.4g}<br>b = %{y:.4g}<br>L = %{customdata:.4g}<extra>contour</extra>",
        },
        *_paths(WB_POINT),
        {
            "mode": "lines+markers",
            "line": {"color": COLORS["optimizer"], "width": 3, "dash": "dot"},
            "marker": {"size": 4, "color": COLORS["optimizer"]},
            "hovertemplate": WB_POINT,  # and the trace's name
        },
        {
            "mode": "markers",
            "name": "(w*, b*)",
            "marker": {"size": 13, "symbol": "star", "color": COLORS["optimum"]},
            "hovertemplate": "w* = %{x:.6g}<br>b* = %{y:.6g}<extra></extra>",
        },
        # A learner's loop over the lesson's (Explorer(step=fn)); hidden without one.
        {**YOURS, "name": "path, your loop", "hovertemplate": f"{WB_POINT}<extra>yours</extra>"},
        {**PARTING_MARKER, "hovertemplate": f"they part here<br>{WB_POINT}<extra>yours</extra>"},
        {**STEP_MARKER, "hovertemplate": f"{WB_POINT}<extra>current</extra>"},
    ]

    def layout(self, result, view):
        layout = base_layout(self.title, "weight w", "intercept b", margin=TITLED_MARGIN)
        return with_paths(layout, self.layout_update(result, view))

    def layout_update(self, result, view):
        plane = result.plane
        if plane is None:
            return {}
        return {
            "xaxis.range": plane.w_range,
            "yaxis.range": plane.b_range,
            "annotations": self._leaving(result, view),
        }

    def _leaving(self, result, view) -> list[dict]:
        """For each shown run that leaves the frame, a note at the frame's corner, as on
        `Landscape`, and an arrow along its last step inside to where it crosses the edge."""
        arrows = []
        for i, loss in enumerate(loss for loss in LOSSES if shown(view, loss)):
            run = result.histories[loss]
            k = self._left(result, run)
            if k is None:
                continue
            arrows.append(
                {
                    **note(f"{loss}: off the chart from step {k}", "right"),
                    "y": 0.99 - 0.08 * i,
                    "font": {"color": COLORS[loss], "size": 12},
                }
            )
            edge = self._edge(result, run, k)
            if edge is not None:
                (w0, b0), (w1, b1) = edge
                arrows.append(
                    {
                        "x": w1, "y": b1, "ax": w0, "ay": b0,
                        "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
                        "showarrow": True, "arrowhead": 2, "arrowsize": 1.5, "arrowwidth": 2,
                        "arrowcolor": COLORS[loss], "text": "",
                    }
                )  # fmt: skip
        return arrows

    @staticmethod
    def _edge(result, run, k: int):
        """((w, b) of step k - 1, the point where the step to step k crosses the frame's edge), as
        floats, or None when step k is not a number or k is 0 (the start outside the frame)."""
        if k == 0:
            return None
        inside = np.array([run.params["w"][k - 1], run.params["b"][k - 1]], dtype=np.float64)
        outside = np.array([run.params["w"][k], run.params["b"][k]], dtype=np.float64)
        if not np.all(np.isfinite(outside)):
            return None
        frame = np.array([result.plane.w_range, result.plane.b_range], dtype=np.float64)
        step = outside - inside
        with np.errstate(divide="ignore", invalid="ignore"):
            # The share of the step at which each axis's coordinate reaches the bound it passes.
            bound = np.where(step > 0, frame[:, 1], frame[:, 0])
            shares = np.where(step != 0, (bound - inside) / step, np.inf)
        share = float(np.clip(np.min(shares), 0.0, 1.0))
        crossing = inside + share * step
        return (float(inside[0]), float(inside[1])), (float(crossing[0]), float(crossing[1]))

    @staticmethod
    def _left(result, run) -> int | None:
        """The first step whose (w, b) is outside the frame (or not finite), None if none is."""
        (w_low, w_high), (b_low, b_high) = result.plane.w_range, result.plane.b_range
        w, b = run.params["w"].astype(np.float64), run.params["b"].astype(np.float64)
        with np.errstate(invalid="ignore"):
            inside = (w >= w_low) & (w <= w_high) & (b >= b_low) & (b <= b_high)
        outside = np.flatnonzero(~inside)
        return None if outside.size == 0 else int(outside[0])

    def _path(self, result, run, index=slice(None)):
        """(w, b) of `run` at the steps `index`, NaN from where it leaves the frame on (as
        `Landscape._path`: lines out to points far past the edge are not drawn)."""
        w, b = plottable(run.params["w"][index]), plottable(run.params["b"][index])
        left = self._left(result, run)
        if left is not None:
            cut = np.arange(len(run.params["w"]))[index] >= left
            w[cut] = b[cut] = np.nan
        return w, b

    def series(self, result, view):
        if result.plane is None:
            return [NONE] * (len(self.styles) - 1)
        s, contours = result.settings, result.plane.contours
        paths = {loss: self._path(result, result.histories[loss]) for loss in LOSSES}
        overlay = {**NONE, "name": "another optimizer"}
        if overlaid(s):
            w, b = self._path(result, result.optimized[first_shown(view)])
            overlay = {"x": w, "y": b, "visible": True, "name": f"path, {run_name(s)}"}
        return [
            {"x": contours.w, "y": contours.b, "customdata": contours.levels, "visible": True},
            *(
                {"x": w, "y": b, "visible": shown(view, loss), "mode": line_mode(s.N)}
                for loss, (w, b) in paths.items()
            ),
            overlay,
            {"x": [result.w_star], "y": [result.b_star], "visible": True},
            *self._yours(result),
        ]

    @staticmethod
    def _yours(result) -> list[dict]:
        """A learner's (w, b) per step (`Result.yours`) and the ✕ where they part from the lesson's;
        hidden without one. Off the frame they are not drawn, as a run that leaves it is not."""
        if result.yours is None or result.yours.carries.shape[1] != 2:
            return [NONE, NONE]
        w, b = plottable(result.yours.carries[:, 0]), plottable(result.yours.carries[:, 1])
        (w_low, w_high), (b_low, b_high) = result.plane.w_range, result.plane.b_range
        with np.errstate(invalid="ignore"):
            outside = (w < w_low) | (w > w_high) | (b < b_low) | (b > b_high)
        w[outside] = b[outside] = np.nan
        k = result.yours.parted
        here = k is not None and np.isfinite(w[k]) and np.isfinite(b[k])
        return [
            {"x": w, "y": b, "visible": True},
            {"x": [float(w[k])] if here else [], "y": [float(b[k])] if here else [], "visible": True},
        ]

    def marker(self, result, view, step):
        if result.plane is None:
            return {"x": [], "y": []}
        w, b = self._path(result, result.histories[first_shown(view)], slice(step, step + 1))
        here = bool(value_at(w, 0) and value_at(b, 0))
        return {"x": value_at(w, 0) if here else [], "y": value_at(b, 0) if here else []}


__all__ = ["Landscape", "Plane", "left_frame"]
