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
from widgets.settings import leaves, of_rows

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
    """(loss, core.PytreeHistory) of plain SGD's run for each loss the view shows, sum first."""
    return [(loss, r.histories[loss]) for loss in LOSSES if shown(r.settings.loss, loss)]


def _leaves(tree: dict, k: int, digits: int = 6) -> str:
    """A params-like dict's values at row k in the model's words: "w = 1.5", or "{w: 1.5, b: 0.2}".
    The carry after k steps is `_leaves(h.params, k)`, the gradients of step k `_leaves(h.grads, k)`."""
    if len(tree) == 1:
        ((name, value),) = tree.items()
        return f"{name} = {float(value[k]):.{digits}g}"
    return "{" + ", ".join(f"{name}: {float(value[k]):.{digits}g}" for name, value in tree.items()) + "}"


def _distance(r: Result, h, k: int) -> str:
    """How far the carry after k steps is from the best fit: "|w − w*| = 0.1", or the Euclidean
    distance over the leaves, in (w, b) under the w, b model."""
    star = _star(r)
    d = float(np.linalg.norm([float(h.params[name][k]) - star[name] for name in h.params]))
    if len(h.params) == 1:
        return f"|w − w*| = {d:.3g}"
    return f"distance to ({', '.join(f'{name}*' for name in star)}) = {d:.3g}"


def _star(r: Result) -> dict:
    """The best fit per leaf: {"w": w*}, or {"w": w*, "b": b*}."""
    return {"w": r.w_star} if r.b_star is None else {"w": r.w_star, "b": r.b_star}


def _optimum(r: Result) -> str:
    return ", ".join(f"{name}* = {value:.6g}" for name, value in _star(r).items())


def _diverged(h) -> str:
    """ "diverged at step k" and what that means: the carry's distance from the best fit past
    core.engine's limit, a million times the start's (or a million, whichever is more), so it has
    grown over a million-fold either way. The trajectory marks that carry, after k + 1 steps; the
    loss chart marks step k's loss."""
    star = "(w*, b*)" if len(h.params) > 1 else "w*"
    return (
        f"diverged at step {h.diverged_at} (after {h.diverged_at + 1} steps the distance of the carry from "
        f"{star} had grown over a million-fold)"
    )


def status_html(r: Result, standardize: bool = True) -> str:
    """The run's outcome, a line per shown loss and one for the overlaid optimizer: regime, final
    carry and its distance to the best fit, or the step it diverged at; then which rows the star
    fits and the lr standardising x would allow (naming the control unless `standardize` is False:
    a page that hides it). HTML (a `<br>` between lines)."""
    s = r.settings
    lines = []
    for loss, h in _shown_runs(r):
        if h.diverged_at is not None:
            k = h.diverged_at + 1
            past, final = _leaves(h.params, k, 4), _leaves(h.params, -1, 4)
            words = f"{_diverged(h)}: {past}, {_distance(r, h, k)} (final {final})"
        else:
            words = f"{REGIME_WORDS[r.regimes[loss]]}: final {_leaves(h.params, -1)}, {_distance(r, h, -1)}"
        lines.append(
            f"<b>{loss} loss</b>: {html.escape(words)} "
            f"(lr = {s.lr:.4g}, critical lr = {r.critical_lr[loss]:.4g}, {html.escape(_optimum(r))})"
        )
    if overlaid(s):
        loss = first_shown(s.loss)
        h = r.optimized[loss]
        if h.diverged_at is not None:
            words = _diverged(h)
        else:
            words = f"final {_leaves(h.params, -1)}, {_distance(r, h, -1)}"
        lines.append(f"<b>{html.escape(run_name(s))}</b> ({loss} loss, dotted): {html.escape(words)}")
    if r.rows_fit is not None and r.rows_fit.used != r.rows_fit.rows:
        lines.append(html.escape(_rows_fit(r.rows_fit)))
    if r.standardized_lr is not None:  # said of the first loss it rescues
        loss = next(loss for loss in LOSSES if loss in r.standardized_lr)
        named = "“standardize”: " if standardize else ""
        lines.append(
            html.escape(
                f"x as it is needs lr below {r.critical_lr[loss]:.3g} ({loss} loss); standardised "
                f"({named}x rescaled to mean 0 and spread 1) it allows up to "
                f"{r.standardized_lr[loss]:.3g}."
            )
        )
    return "<br>".join(lines)


def _rows_fit(fit) -> str:
    """Which rows the star fits, and the fit of all of them (data of rows, when they differ)."""
    names = ", ".join(f"{leaf}*" for leaf in fit.star)
    again = " (rows used again)" if fit.used > fit.rows else ""
    whole = ", ".join(f"{leaf}* = {value:.4g}" for leaf, value in fit.star.items())
    return (
        f"{names}: the least-squares fit of the {fit.used:,} rows this run uses{again}; "
        f"all {fit.rows:,} rows give {whole}"
    )


def step_html(r: Result, k: int) -> str:
    """Playback's words at step `k` (0 to N): each shown loss's carry in, batch k's gradient and the
    carry out, or the final carry once k = N; then the overlaid run's carry (`carry_html`). HTML."""
    s = r.settings
    lines = []
    for loss, h in _shown_runs(r):
        if k >= s.N:
            lines.append(
                f"<b>{loss}</b>: after {'its one step' if s.N == 1 else f'all {s.N} steps'} the carry is "
                f"{_leaves(h.params, -1)}."
            )
            continue
        if len(h.params) > 1:
            grads = _leaves(h.grads, k)
            lines.append(
                f"<b>{loss}</b>, step {k} of {s.N}: carry in params = {_leaves(h.params, k)}; batch {k}'s "
                f"gradients at it grads = {grads}; carry out = jax.tree.map(lambda p, g: p − lr·g, "
                f"params, grads) = {_leaves(h.params, k + 1)} (lr = {s.lr:.4g})"
            )
            continue
        w, g, new = float(h.params["w"][k]), float(h.grads["w"][k]), float(h.params["w"][k + 1])
        lines.append(
            f"<b>{loss}</b>, step {k} of {s.N}: carry in w<sub>{k}</sub> = {w:.6g}; batch {k}'s gradient "
            f"at it g = {g:.6g}; carry out w<sub>{k + 1}</sub> = w<sub>{k}</sub> − lr·g = {w:.6g} − "
            f"{s.lr:.4g}·({g:.6g}) = {new:.6g}"
        )
    if overlaid(s):
        lines.append(carry_html(r, k))
    return "<br>".join(lines)


def _state_name(path, params: int) -> str:
    """A leaf of Optax's state by its name there: "trace", "count", "mu"; a part that is a dict like
    the params also by the param's name ("trace.b") when the model has more than one."""
    name = [key.name for key in path if isinstance(key, jax.tree_util.GetAttrKey)][-1:]
    param = [str(key.key) for key in path if isinstance(key, jax.tree_util.DictKey)][-1:]
    return ".".join(name + (param if params > 1 else []))


def carry_html(r: Result, k: int) -> str:
    """The overlaid run's carry after `k` steps, (w, the optimizer's state), each leaf of the state
    by its name in Optax's NamedTuples (trace; count, mu, nu), and step k's scheduled lr. HTML."""
    s = r.settings
    h = r.optimized[first_shown(s.loss)]
    # Each leaf of the recorded state is (N, ...): row k - 1 is the state after k steps.
    state_leaves = jax.tree_util.tree_flatten_with_path(h.states)[0]
    names = [_state_name(path, len(h.params)) for path, _ in state_leaves]
    values = [float(np.asarray(leaf)[k - 1]) for _, leaf in state_leaves]
    state = ", ".join(f"{name} = {value:.6g}" for name, value in zip(names, values, strict=True))
    state = "state as Optax's init makes it" if k == 0 else state or "a state of no arrays (sgd's)"
    if r.schedule is not None and k < s.N:  # scanned with the batches, not in the carry
        state += f"; step {k}'s lr from the schedule: {float(r.schedule[k]):.4g}"
    params = "params" if len(h.params) > 1 else "w"
    return (
        f"<b>{html.escape(run_name(s))}</b>, after {k} steps: carry ({params}, state) = "
        f"({html.escape(_leaves(h.params, k))}; {html.escape(state)})"
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
    return f"{CURVATURES[leaves(s)]}; c: 2 for the sum loss, 2/B for the mean. {ratios}"


CURVATURES = {
    ("w",): "S_k: the sum of x² over batch k",
    ("w", "b"): "λ_k: the curvatures of batch k's loss over (w, b)",
}
"""What the divergence sentence's symbol for a batch's curvature is, for each model's leaves."""


NARROW = 10.0
"""A valley whose walls are this many times steeper than its floor is called narrow, and why it
matters is said under the contour chart."""


def _plane(r: Result, view: str) -> str:
    if r.plane is None:
        return ""  # a result of the w model, which the landscape draws
    critical = "; ".join(f"{loss} {r.critical_lr[loss]:.4g}" for loss in LOSSES if shown(view, loss))
    valley = r.plane.valley
    if valley == float("inf"):
        shape = "every x is alike, so the valley's floor is a line of equally good fits"
    elif valley >= NARROW:
        shape = (
            f"the valley's walls are {valley:.0f} times steeper than its floor: an lr small enough for "
            "the walls zig-zags across them and crawls along the floor; momentum adds up the steps "
            "along the floor"
        )
    else:
        shape = f"the valley is round enough ({valley:.2g}:1) for plain steps to head straight down"
    # Generated x is drawn around x_mean; the rows of a table have the mean they have.
    centre = f"{r.plane.x_centre:.3g}" if of_rows(r.settings) else f"{r.settings.x_mean:g}"
    paths = _across(r, view) if valley >= NARROW else ""
    return (
        f"{_optimum(r)}, x centred at {centre}: {shape}. Critical lr (the largest lr the "
        f"walls allow): {critical}" + (f". {paths}" if paths else "")
    )


def _across(r: Result, view: str) -> str:
    """How the first shown loss's runs cross the valley's floor, in numbers (the runs that did not
    diverge): what the contour chart's paths show."""
    loss = first_shown(view)
    said = []
    for name, path, histories in zip(
        ("SGD", f"{run_name(r.settings)} (dotted)"),
        r.valley_paths[loss],
        (r.histories, r.optimized or {}),
        strict=True,
    ):
        if path is None or histories[loss].diverged_at is not None:
            continue
        if not said:
            said.append(
                f"{name} crosses the floor (the line through ★ along the valley) at {path.crossings} of "
                f"its {path.steps} steps, keeps {path.settled:.2g} from it after step {path.after} (on "
                f"average) and ends {path.end:.3g} from ★"
            )
        else:
            said.append(f"{name}: {path.crossings} of {path.steps}, {path.settled:.2g} and {path.end:.3g}")
    return "; ".join(said)


CAPTIONS = {"sum_vs_mean": _sum_vs_mean, "divergence": _divergence, "plane": _plane}
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
