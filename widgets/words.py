"""What a learner reads about a run: the status line, the step-by-step carry, the charts' captions
and text alternatives, and the notices, each a pure function of a `Result` (and the playback step).

Every sentence that names the scalar weight w lives here, so a model with another carry (the
`w, b` pytree) rewrites its words in this one file. The sentences are HTML where the page shows
them as HTML (`status_html`, `step_html`, `notices_html`: values escaped, tags ours) and plain text
where a chart's caption or its text alternative takes them.
"""

from __future__ import annotations

import html

import jax
import numpy as np

from widgets.chart import first_shown, shown
from widgets.figures import run_name
from widgets.model import LOSSES, Result, overlaid

REGIME_WORDS = {
    "stalled": "not moving (lr = 0 or every x is 0)",
    # The regimes are those of the step factors (core.regime). With noisy data each batch has its own
    # optimum, so w may still cross w* while no step overshoots its own batch's optimum.
    "monotone": "converging, no step overshooting its batch's optimum",
    "oscillating": "converging, with steps that overshoot their batch's optimum",
    "two-cycle": "a steady two-cycle, bouncing between two values",
    "diverging": "diverging",
}


def _shown_runs(r: Result) -> list:
    """(loss, core.History) of plain SGD's run for each loss the view shows, sum first."""
    return [(loss, r.histories[loss]) for loss in LOSSES if shown(r.settings.loss, loss)]


def status_html(r: Result) -> str:
    """The run's outcome, a line per shown loss and one for the overlaid optimizer: regime, final w
    and its distance to w*, or the step it diverged at. HTML (a `<br>` between lines)."""
    s = r.settings
    lines = []
    for loss, h in _shown_runs(r):
        if h.diverged_at is not None:
            past, final = float(h.weights[h.diverged_at + 1]), float(h.weights[-1])
            words = (
                f"diverged at step {h.diverged_at}: w = {past:.4g}, |w − w*| = {abs(past - r.w_star):.3g}"
                f" (final w = {final:.4g})"
            )
        else:
            final = float(h.weights[-1])
            error = abs(final - r.w_star)
            words = f"{REGIME_WORDS[r.regimes[loss]]}: final w = {final:.6g}, |w − w*| = {error:.3g}"
        lines.append(
            f"<b>{loss} loss</b>: {html.escape(words)} "
            f"(lr = {s.lr:.4g}, critical lr = {r.critical_lr[loss]:.4g}, w* = {r.w_star:.6g})"
        )
    if overlaid(s):
        loss = first_shown(s.loss)
        h = r.optimized[loss]
        if h.diverged_at is not None:
            words = f"diverged at step {h.diverged_at}"
        else:
            final = float(h.weights[-1])
            words = f"final w = {final:.6g}, |w − w*| = {abs(final - r.w_star):.3g}"
        lines.append(f"<b>{html.escape(run_name(s))}</b> ({loss} loss, dotted): {html.escape(words)}")
    return "<br>".join(lines)


def step_html(r: Result, k: int) -> str:
    """Playback's words at step `k` (0 to N): each shown loss's carry in, batch k's gradient and the
    carry out, or the final carry once k = N; then the overlaid run's carry (`carry_html`). HTML."""
    s = r.settings
    lines = []
    for loss, h in _shown_runs(r):
        if k >= s.N:
            lines.append(
                f"<b>{loss}</b>: after {'its one step' if s.N == 1 else f'all {s.N} steps'} the carry is "
                f"w = {float(h.weights[-1]):.6g}."
            )
            continue
        w, g, new = float(h.weights[k]), float(h.grads[k]), float(h.weights[k + 1])
        lines.append(
            f"<b>{loss}</b>, step {k} of {s.N}: carry in w<sub>{k}</sub> = {w:.6g}; batch {k}'s gradient "
            f"at it g = {g:.6g}; carry out w<sub>{k + 1}</sub> = w<sub>{k}</sub> − lr·g = {w:.6g} − "
            f"{s.lr:.4g}·({g:.6g}) = {new:.6g}"
        )
    if overlaid(s):
        lines.append(carry_html(r, k))
    return "<br>".join(lines)


def carry_html(r: Result, k: int) -> str:
    """The overlaid run's carry after `k` steps, (w, the optimizer's state), each leaf of the state
    by its name in Optax's NamedTuples (trace; count, mu, nu), and step k's scheduled lr. HTML."""
    s = r.settings
    h = r.optimized[first_shown(s.loss)]
    # Each leaf of the recorded state is (N, ...): row k - 1 is the state after k steps.
    leaves = jax.tree_util.tree_flatten_with_path(h.states)[0]
    state = ", ".join(
        f"{jax.tree_util.keystr(path[-1:], simple=True)} = {float(np.asarray(leaf)[k - 1]):.6g}"
        for path, leaf in leaves
    )
    state = "state as Optax's init makes it" if k == 0 else state or "a state of no arrays (sgd's)"
    if r.schedule is not None and k < s.N:  # scanned with the batches, not in the carry
        state += f"; step {k}'s lr from the schedule: {float(r.schedule[k]):.4g}"
    return (
        f"<b>{html.escape(run_name(s))}</b>, after {k} steps: carry (w, state) = "
        f"(w = {float(h.weights[k]):.6g}; {html.escape(state)})"
    )


def notices_html(notices) -> str:
    """Each notice (plain text: what was fixed in a visitor's value) as a warning line; "" for none."""
    return "<br>".join(f"&#9888; {html.escape(n)}" for n in notices) if notices else ""


# A chart's numbers that change with the settings go above it, not in its title: a layout that
# changes is drawn by Plotly.react, the whole chart, where moved points alone are drawn by moving
# them (widgets/surface.js).


def _sum_vs_mean(r: Result, view: str) -> str:
    s = r.settings
    critical = r.critical_lr
    larger = "the same: B = 1" if s.B == 1 else f"B = {s.B} times larger"
    return (
        f"lr = {s.lr:.4g}: the mean loss divides each batch's gradient by B, so its step is lr/B = "
        f"{s.lr / s.B:.4g} in sum terms; critical lr (the lr at which the error stops shrinking): "
        f"sum {critical['sum']:.4g}, mean {critical['mean']:.4g} ({larger})"
    )


def _divergence(r: Result, view: str) -> str:
    s = r.settings
    ratios = "; ".join(
        f"{loss}: lr / critical lr = {s.lr / r.critical_lr[loss]:.3g}" for loss in LOSSES if shown(view, loss)
    )
    return f"S_k: the sum of x² over batch k; c: 2 for the sum loss, 2/B for the mean. {ratios}"


CAPTIONS = {"sum_vs_mean": _sum_vs_mean, "divergence": _divergence}
"""The charts (widgets.figures.CHARTS' names) that have a caption, and its sentence."""


def caption(name: str, r: Result, view: str) -> str:
    """The plain-text caption above the named chart for `view` ("sum", "mean", "both"); "" for none."""
    return CAPTIONS[name](r, view) if name in CAPTIONS else ""


def alt_text(title: str, caption: str, run: str) -> str:
    """A chart's text alternative (plain text): its title, its caption's numbers and the run in words
    (`status_html` as plain text), as sentences."""
    return " ".join(part for part in (f"{title}.", caption and f"{caption}.", run) if part)


__all__ = [
    "CAPTIONS",
    "REGIME_WORDS",
    "alt_text",
    "caption",
    "carry_html",
    "notices_html",
    "status_html",
    "step_html",
]
