"""The "optax" panel: the pure train step on a parameter pytree, with an Optax optimizer.

Named optax_panel, not optax, so that no reader takes it for the library. Optax itself is imported
by core.linear only when a fit first runs, that is when this panel is opened."""

from __future__ import annotations

from typing import NamedTuple

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go

import core
from core.shown import shown
from widgets.batch import batched, or_unbatched
from widgets.chart import base_layout
from widgets.code import code_view
from widgets.controls import Choice, LogSlider, Menu
from widgets.hood.common import HOOD_MARGIN, PALETTE, Range, clamped, notice, notices_html, ranged, watch
from widgets.layout import BESIDE, side_by_side
from widgets.surface import send

MAX_STEPS = 1024  # the compiled scan's length: every steps value shares one compile
BATCH_SIZES = {"full (256)": None, "128": 128, "64": 64, "32": 32, "16": 16, "8": 8, "1": 1}
PARAMETERS = ("w[0]", "w[1]", "w[2]", "b")
DEFAULT_OPTIMIZER = "sgd"
DEFAULT_BATCH_SIZE = "full (256)"
RANGES = {
    "lr": Range(1e-4, 10**0.5, 0.1, log=True),
    "steps": Range(1, MAX_STEPS, 200),
    "seed": Range(0, 9999, 0),
}
"""The controls' ranges, read by the widgets and by the clamp of every value a visitor sends."""


class Choices(NamedTuple):
    """The panel's controls as read: optimizer name, lr, batch size (None: the full batch), steps
    and seed."""

    optimizer: str
    lr: float
    batch_size: int | None
    steps: int
    seed: int


class OptaxPanel:
    """`core.train_linear` on the pure train-step example's data for a chosen optimizer, lr, batch
    size, steps and seed: each parameter and the loss per step. One compile per optimizer, made
    when the panel is built; no slider compiles."""

    def __init__(self, figure, beside: str = BESIDE, batch=None, code: bool = True):
        self.batch = or_unbatched(batch)  # a move's changes go to the page as one message
        self.optimizer = Choice(
            options=list(core.OPTIMIZERS), value=DEFAULT_OPTIMIZER, description="optimizer"
        )
        self.lr = ranged(LogSlider, RANGES["lr"], "lr", step=None)
        self.lr.readout_format = ".4g"
        self.batch_size = Menu(options=list(BATCH_SIZES), value=DEFAULT_BATCH_SIZE, description="batch size")
        self.steps = ranged(ipw.IntSlider, RANGES["steps"], "steps")
        self.seed = ranged(ipw.BoundedIntText, RANGES["seed"], "seed", layout={"width": "12em"})
        controls = (self.optimizer, self.lr, self.batch_size, self.steps, self.seed)
        for control in controls:
            control.style = {"description_width": "6em"}
        self.status = ipw.HTML()
        self._data = (0, *core.linear_data(0))  # (seed, x, y): drawn again only when the seed moves
        for optimizer in core.OPTIMIZERS:  # compile each now, not on a click
            core.train_linear(*self._data[1:], optimizer=optimizer, steps=1, max_steps=MAX_STEPS)
        choices, notices = self._read()
        fit = self._fit(choices)
        x_steps = _steps(choices)
        truth = [*core.TRUE_PARAMS["w"], core.TRUE_PARAMS["b"]]
        self.params_figure = figure(
            data=[
                go.Scatter(
                    x=x_steps,
                    y=values,
                    name=name,
                    mode="lines",
                    line={"color": PALETTE[i], "width": 2},
                    hovertemplate="step %{x}<br>%{y:.5g}<extra>" + name + "</extra>",
                )
                for i, (name, values) in enumerate(zip(PARAMETERS, _parameters(fit), strict=True))
            ]
            + [
                go.Scatter(
                    x=[0, MAX_STEPS],
                    y=[value, value],
                    mode="lines",
                    line={"color": PALETTE[i], "width": 1, "dash": "dash"},
                    name=f"true {name} = {value:g}",
                    showlegend=False,
                    hoverinfo="skip",
                )
                for i, (name, value) in enumerate(zip(PARAMETERS, truth, strict=True))
            ],
            layout=base_layout(
                "Each parameter after every step (dashed: the true values)",
                "step",
                "value",
                margin=HOOD_MARGIN,
                xaxis={"title": {"text": "step"}, "range": [0, self.steps.value]},
            ),
        )
        self.loss_figure = figure(
            data=[
                go.Scatter(
                    x=x_steps,
                    y=_positive(fit.losses),
                    mode="lines",
                    line={"color": PALETTE[5], "width": 2},
                    name="loss",
                    hovertemplate="step %{x}<br>loss %{y:.3g}<extra></extra>",
                )
            ],
            layout=base_layout(
                "Minibatch loss before each step",
                "step",
                "mean squared error",
                "log",
                margin=HOOD_MARGIN,
                showlegend=False,
            ),
        )
        self.status.value = _status_text(fit, choices, notices)
        self.widget = ipw.VBox(
            [
                ipw.HBox([self.optimizer, self.batch_size, self.seed], layout={"flex_flow": "row wrap"}),
                ipw.HBox([self.lr, self.steps], layout={"flex_flow": "row wrap"}),
                self.status,
                side_by_side([self.params_figure, self.loss_figure], beside=beside),
                *([code_view(shown("pure_train_step"))] if code else []),
            ]
        )
        watch(controls, self._update)

    def _read(self) -> tuple[Choices, list]:
        """(the controls as read, notices): numbers clamped to RANGES with a notice (or None) each,
        an unknown optimizer taken as the default and an unknown batch size put back to it."""
        optimizer = self.optimizer.value if self.optimizer.value in core.OPTIMIZERS else DEFAULT_OPTIMIZER
        if self.batch_size.value not in BATCH_SIZES:
            self.batch_size.value = DEFAULT_BATCH_SIZE
        lr, lr_notice = clamped(self.lr, RANGES["lr"])
        steps, steps_notice = clamped(self.steps, RANGES["steps"])
        seed, seed_notice = clamped(self.seed, RANGES["seed"])
        choices = Choices(optimizer, lr, BATCH_SIZES[self.batch_size.value], int(steps), int(seed))
        return choices, [lr_notice, steps_notice, seed_notice]

    def _fit(self, choices: Choices):
        """core.train_linear's fit (a core.LinearFit) for `choices`, on the data of its seed."""
        if self._data[0] != choices.seed:
            self._data = (choices.seed, *core.linear_data(choices.seed))
        _, x, y = self._data
        return core.train_linear(
            x,
            y,
            optimizer=choices.optimizer,
            lr=choices.lr,
            steps=choices.steps,
            batch_size=choices.batch_size,
            seed=choices.seed,
            max_steps=MAX_STEPS,
        )

    @batched
    def _update(self, change=None) -> None:
        choices, notices = self._read()
        fit = self._fit(choices)
        x_steps = _steps(choices)
        send(
            self.params_figure,
            [{"x": x_steps, "y": _finite_or_nan(values)} for values in _parameters(fit)],
            range(len(PARAMETERS)),
            {"xaxis.range": [0, choices.steps]},
        )
        send(self.loss_figure, [{"x": x_steps, "y": _positive(fit.losses)}], [0])
        self.status.value = _status_text(fit, choices, notices)


def _steps(choices: Choices) -> np.ndarray:
    """The x of every chart: the step numbers 1..steps (int64, shape (steps,))."""
    return np.arange(1, choices.steps + 1)


def _parameters(fit) -> list:
    """w[0], w[1], w[2] and b after every step, as float64 arrays of shape (steps,)."""
    w = fit.history["w"].astype(np.float64)
    return [w[:, 0], w[:, 1], w[:, 2], fit.history["b"].astype(np.float64)]


def _positive(values) -> np.ndarray:
    """`values` as float64, with NaN where not finite and positive (a log axis's gap)."""
    values = np.asarray(values, np.float64)
    return np.where(np.isfinite(values) & (values > 0), values, np.nan)


def _finite_or_nan(values) -> np.ndarray:
    """`values` as float64, with NaN for each infinity (drawn as a gap)."""
    values = np.asarray(values, np.float64)
    return np.where(np.isfinite(values), values, np.nan)


def _status_text(fit, choices: Choices, notices) -> str:
    """The status line under the controls (HTML): the notices, then the fitted parameters or that
    the run diverged."""
    w, b, loss = fit.params["w"], float(fit.params["b"]), float(fit.losses[-1])
    lead = notices_html(notices, trailing=True)
    if not (np.all(np.isfinite(w)) and np.isfinite(b) and np.isfinite(loss)):
        return lead + notice(
            f"Diverged: the parameters overflowed to inf or NaN. {choices.optimizer} at lr = "
            f"{choices.lr:.4g} is too large a step for these data; try a smaller lr."
        )
    values = ", ".join(f"{v:.4g}" for v in w)
    return (
        f"{lead}After {len(fit.losses)} steps of {choices.optimizer}: w = [{values}], b = {b:.4g}, "
        f"last minibatch loss {loss:.3g} (true w = [2, -1, 0.5], b = 3)"
    )


__all__ = [
    "BATCH_SIZES",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_OPTIMIZER",
    "MAX_STEPS",
    "PARAMETERS",
    "RANGES",
    "Choices",
    "OptaxPanel",
]
