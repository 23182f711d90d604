"""The trajectory chart: the weight after every step of the scan, against the optimum w*."""

from __future__ import annotations

import html
from typing import NamedTuple

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go

import core

# Okabe-Ito: distinguishable with every common colour-vision deficiency.
COLORS = {"sum": "#0072B2", "mean": "#E69F00", "optimum": "#009E73", "diverged": "#D55E00"}


class RunSettings(NamedTuple):
    """One run of the explorer, in the seed's names."""

    lr: float = 0.01
    N: int = 100
    B: int = 16
    w0: float = 0.0
    true_w: float | None = None  # None: make_batches' default for the kind (2 for gaussian, 1 for ones)
    noise: float = 0.5
    seed: int = 0
    kind: str = "gaussian"
    loss: str = "sum"


class Run(NamedTuple):
    settings: RunSettings
    history: core.History
    w_star: float
    regime: str


def compute_run(settings: RunSettings | None = None) -> Run:
    """Data, history and theory for one setting (default: `RunSettings()`), all from `core`."""
    settings = settings or RunSettings()
    x, y = core.make_batches(
        settings.N,
        settings.B,
        seed=settings.seed,
        kind=settings.kind,
        true_w=settings.true_w,
        noise=settings.noise,
    )
    history = core.training_history(settings.w0, settings.lr, x, y, loss=settings.loss)
    return Run(settings, history, core.optimum(x, y), core.regime(settings.lr, x, loss=settings.loss))


def _finite_or_none(values: np.ndarray) -> list:
    # Plotly draws None as a gap; NaN or inf would blank or wreck the axis range.
    return [float(v) if np.isfinite(v) else None for v in values.astype(np.float64)]


def trajectory_figure(run: Run) -> go.FigureWidget:
    """A FigureWidget with every trace and the layout given to its constructor (Voila drops later
    changes made while the notebook first runs)."""
    s, h = run.settings, run.history
    steps = np.arange(len(h.weights))
    traces = [
        go.Scatter(
            x=steps,
            y=_finite_or_none(h.weights),
            mode="lines+markers",
            name=f"w ({s.loss} loss)",
            line={"color": COLORS[s.loss], "width": 2},
            marker={"size": 4},
            hovertemplate="step %{x}<br>w = %{y:.6g}<extra></extra>",
        ),
        go.Scatter(
            x=[0, s.N],
            y=[run.w_star, run.w_star],
            mode="lines",
            name="w* (least squares)",
            line={"color": COLORS["optimum"], "dash": "dash"},
            hovertemplate="w* = %{y:.6g}<extra></extra>",
        ),
    ]
    return go.FigureWidget(
        data=traces,
        layout={
            "title": {"text": "Trajectory: the carry w after each step of lax.scan"},
            "xaxis": {"title": {"text": "step"}},
            "yaxis": {"title": {"text": "weight w"}},
            "template": "plotly_white",
            "height": 420,
            "margin": {"l": 60, "r": 20, "t": 60, "b": 50},
            "legend": {"orientation": "h", "y": -0.2},
        },
    )


def run_summary(run: Run) -> str:
    """One line in words, HTML-escaped."""
    s, h = run.settings, run.history
    outcome = (
        f"diverged at step {h.diverged_at}"
        if h.diverged_at is not None
        else f"w goes from {s.w0:g} to {float(h.weights[-1]):.6g} (w* = {run.w_star:.6g})"
    )
    text = (
        f"lr = {s.lr:g}, N = {s.N}, B = {s.B}, {s.loss} loss, {s.kind} data: {outcome}; regime: {run.regime}."
    )
    return html.escape(text)


def build_app(settings: RunSettings | None = None) -> ipw.VBox:
    """The dashboard's root widget: the default run's trajectory and a summary line."""
    run = compute_run(settings)
    summary = ipw.HTML(f"<p class='scanlab-summary'>{run_summary(run)}</p>")
    return ipw.VBox([trajectory_figure(run), summary])
