"""Closed-form facts about the lesson's loss, in float64 NumPy.

For batch k let S_k = sum(x_k**2). One step maps the error e = w - w*_k to r_k * e with the
per-step factor r_k = 1 - c*lr*S_k, where c = 2 for the sum loss and c = 2/B for the mean loss.
When every batch has the same optimum (noise-free data) the error after N steps is e_0 times the
product of the factors: the product decides, not the worst single step.

With an intercept, y = w*x + b, the error (e_w, e_b) is a vector and a step multiplies it by the
matrix I - c*lr*H_k, H_k = [[S_k, X_k], [X_k, B]] with X_k = sum(x_k): `optimum` and
`critical_lr` take `intercept=True` for that model, whose parts are the functions at the end of
this module: H_k's eigenvalues, the data's centred moments (for the optimum and the loss
landscape), and the first crossing of 1 by the spectral radius of the N steps' product (4x4 with
heavy-ball momentum), which `core.products` computes. The searches for a first crossing are
`core.search`'s.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from core._checks import (
    check_batch_array,
    check_batches,
    check_loss,
    check_momentum,
    check_scalar,
    reject_traced,
)
from core.products import log_radius_intercept, log_radius_momentum, log_radius_plain
from core.search import GRID, bisect, first_crossing

REGIMES = ("stalled", "monotone", "oscillating", "two-cycle", "diverging")


class Moments(NamedTuple):
    """Per-batch sums of one data set, float64, shape (N,): all that the closed forms need.

    Every function here takes either the batch arrays or their `Moments`; compute them once with
    `moments(x_batches, y_batches)` when asking many questions of the same data.
    """

    sxx: np.ndarray  # S_k = sum(x_k**2)
    sxy: np.ndarray  # sum(x_k * y_k)
    syy: np.ndarray  # sum(y_k**2)
    batch_size: int
    sx: np.ndarray | None = None  # X_k = sum(x_k): needed with intercept=True
    sy: np.ndarray | None = None  # sum(y_k): needed by optimum(..., intercept=True)


def moments(x_batches, y_batches=None) -> Moments:
    """The per-batch sums of (x_batches, y_batches). Without y_batches, sxy and syy are NaN: enough
    for `step_factors`, `critical_lr` and `regime`, which depend on x alone."""
    reject_traced("moments", x_batches, y_batches)
    if y_batches is None:
        x = np.asarray(check_batch_array("x_batches", x_batches))
        unknown = np.full(x.shape[0], np.nan)
        return Moments(_row_dots(x, x), unknown, unknown, x.shape[1], _row_sums(x), unknown)
    x, y = (np.asarray(a) for a in check_batches(x_batches, y_batches))
    return Moments(_row_dots(x, x), _row_dots(x, y), _row_dots(y, y), x.shape[1], _row_sums(x), _row_sums(y))


def _row_sums(a) -> np.ndarray:
    """sum(a, axis=1) in float64 (each value widened exactly before it is added)."""
    return np.add.reduce(a, axis=1, dtype=np.float64)


def _row_dots(a, b) -> np.ndarray:
    """sum(a * b, axis=1) in float64, without (N, B) temporaries: three times faster than that
    expression at (1000, 512), which a move of the B slider pays. einsum widens narrower floats to
    float64 as it goes (exactly), so they need no float64 copy either."""
    return np.einsum("ij,ij->i", a, b, dtype=np.float64)


def _moments(function: str, x_batches, y_batches=None, *, needs_y: bool = False) -> Moments:
    """The Moments of the arguments, which may already be Moments (then checked)."""
    if not isinstance(x_batches, Moments):
        if needs_y and y_batches is None:
            raise TypeError(f"{function} needs y_batches too (or the Moments of both)")
        return moments(x_batches, y_batches)
    data = x_batches
    b = data.batch_size
    if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
        raise ValueError(f"Moments.batch_size must be a positive integer, got {b!r}"[:200])
    sums = [np.asarray(a) for a in data[:3]]
    sums += [None if a is None else np.asarray(a) for a in (data.sx, data.sy)]
    given = [a for a in sums if a is not None]
    if any(a.ndim != 1 or a.shape != sums[0].shape or a.size == 0 for a in given) or not all(
        np.issubdtype(a.dtype, np.floating) for a in given
    ):
        raise ValueError(
            "Moments.sxx, sxy, syy (and sx, sy if given) must be float arrays of one shape (N,), N >= 1"
        )
    return Moments(*sums[:3], int(b), *sums[3:])


def _scale(data: Moments, loss) -> float:
    """lr / scale is the sum loss's learning rate: 1 for sum, B for mean."""
    return float(data.batch_size) if check_loss(loss) else 1.0


def step_factors(lr, x_batches, *, loss="sum", intercept=False) -> np.ndarray:
    """The per-step factors 1 - c*lr*S_k, shape (N,), float64. x_batches may be `Moments`.

    With intercept=True, for y = w*x + b: a step multiplies the error (e_w, e_b) by the symmetric
    matrix I - c*lr*H_k, H_k = [[S_k, X_k], [X_k, B]], whose two factors are 1 - c*lr*lambda for
    H_k's eigenvalues lambda_min <= lambda_max. Step k's factor is the one of larger magnitude,
    signed (lambda_max's on a tie): the most step k can stretch any error (|.| is the step
    matrix's norm), negative where that direction overshoots. |factor| < 1: the step shrinks every
    error. Needs `Moments` with sx (as `moments` makes them).
    """
    check_scalar("lr", lr)
    reject_traced("step_factors", lr)
    data = _moments("step_factors", x_batches)
    rate = 2.0 * (float(lr) / _scale(data, loss))
    if not intercept:
        return 1.0 - rate * data.sxx
    smallest, largest = _eigenvalues(data, "step_factors")
    steep, shallow = 1.0 - rate * largest, 1.0 - rate * smallest
    return np.where(np.abs(shallow) > np.abs(steep), shallow, steep)


def optimum(x_batches, y_batches=None, *, intercept=False):
    """The least-squares weight over all batches, w* = sum(x*y) / sum(x*x); NaN when every x is 0.

    It minimises the total loss for "sum" and for "mean" alike, since every batch has B examples.
    Takes the batch arrays, or their `Moments` alone.

    With intercept=True, the least-squares (w*, b*) of y = w*x + b over all M = N*B examples, a
    pair of Python floats: w* = cov(x, y) / var(x), b* = mean(y) - w* mean(x). Both are NaN when
    every x is the same value (var(x) no more than 1e-12 of mean(x**2): then a line of (w, b) fits
    equally well).
    """
    data = _moments("optimum", x_batches, y_batches, needs_y=True)
    if intercept:
        return _optimum_with_intercept(data)
    sxx = float(np.sum(data.sxx))
    return float(np.sum(data.sxy)) / sxx if sxx > 0 else float("nan")


def average_loss(weights, x_batches, y_batches=None, *, b=None) -> np.ndarray:
    """The loss landscape: the average of (w*x - y)**2 over all N*B examples, at each of `weights`.

    It is the total loss over every batch divided by N*B, so the sum and the mean runs share it (the
    same curve up to a factor); float64, shape of `weights`. Non-finite or overflowing weights give
    inf or NaN without a warning. Takes the batch arrays, or their `Moments` alone.

    With b (array-like, broadcast against `weights`): the average of (w*x + b - y)**2 for the model
    with an intercept, float64 of the broadcast shape, from the sums alone (a grid of (w, b) costs
    no pass over the data). Needs `Moments` with sx and sy (as `moments` makes them).
    """
    reject_traced("average_loss", weights, b)
    data = _moments("average_loss", x_batches, y_batches, needs_y=True)
    if b is not None:
        return _average_loss_with_intercept(weights, b, data)
    sxx, sxy, syy = float(np.sum(data.sxx)), float(np.sum(data.sxy)), float(np.sum(data.syy))
    w = np.asarray(weights, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        # (w - w*)**2 * Sxx + the residual at w*: no cancellation near w*, which the plain
        # expansion w**2*Sxx - 2*w*Sxy + Syy suffers from.
        w_star = sxy / sxx if sxx > 0 else 0.0
        residual = max(syy - sxy * w_star, 0.0)
        return ((w - w_star) ** 2 * sxx + residual) / (data.sxx.size * data.batch_size)


def _log_growth(u, sums, counts):
    """sum_j counts_j * log|1 - 2*u*S_j|: log of the product of factors at sum-loss rate u."""
    with np.errstate(divide="ignore"):
        return float(np.dot(counts, np.log(np.abs(1.0 - 2.0 * u * sums))))


def _slope(u, sums, counts):
    return float(np.dot(counts, -2.0 * sums / (1.0 - 2.0 * u * sums)))


def critical_lr(x_batches, *, loss="sum", momentum=0.0, intercept=False) -> float:
    """The smallest learning rate at which the product of |1 - c*lr*S_k| over the N steps reaches 1.

    For identical batches this is the familiar threshold, exactly 1/S for the sum loss and B/S for
    the mean loss: below it every step shrinks |w - w*|, at it w settles into a two-cycle, above it
    every step grows the error. With varying batches the product, not the largest S_k, decides, and
    the result lies between 1/S_max and 1/S_min (times B for the mean). Below it a noise-free run
    ends closer to w* than it started, though single steps with a large S_k may still amplify the
    error on the way (with B = 1, by many orders of magnitude). Above it the product can dip back
    below 1 between the poles lr = 1/(c*S_k), so a larger lr may again contract; this is the first
    crossing. Batches of all-zero x never move w and are left out; if every batch is zero the
    result is inf.

    With heavy-ball momentum m (optax.sgd(lr, momentum=m): t = g + m*t, then w -= lr*t), a step
    maps (e, t), the error and the trace, by the 2x2 matrix M_k = [[1 - c*lr*S_k, -lr*m],
    [c*S_k, m]], and the N steps by their product P = M_N ... M_1. The critical lr is then the
    smallest one at which the spectral radius of P reaches 1: below it, passes over the same
    batches shrink (e, t) for good; above it they grow. For identical batches that is exactly
    (1 + m)/S for the sum loss and B(1 + m)/S for the mean (0 < lr*2S < 2(1 + m)); for varying
    ones it is the first crossing on a geometric grid of 512 learning rates, narrowed by finer grids
    to float64 resolution (a rise above 1 narrower than the first grid's steps, 1.4% apart or
    more, can be missed). m = 0 is the product above, bit for bit.

    With intercept=True, for the model y = w*x + b: a plain step maps the error (e_w, e_b) by the
    2x2 matrix A_k = I - c*lr*H_k, H_k = [[S_k, X_k], [X_k, B]] (X_k = sum(x_k)), and a heavy-ball
    step maps (e_w, e_b, t_w, t_b) by the 4x4 matrix [[A_k, -lr*m*I], [c*H_k, m*I]]. The critical
    lr is the smallest one at which the spectral radius of the N steps' product reaches 1, found by
    the same grid search as with momentum, a product counting as grown once the log of its spectral
    radius passes 16*N ulps (`regime`'s two-cycle tolerance): with a large |mean(x)| the shallow
    direction contracts by less than float64 resolves, so nearer 0 rounding decides the sign. For
    identical batches it is exactly
    2(1 + m) / (c * lambda_max(H)): lr < 2/(c * lambda_max) for plain gradient descent. When every
    x is the same value, all H_k share one null direction, along which no step moves (b and w trade
    off exactly); it is left out and the same closed form holds. A larger |mean(x)| makes H's
    eigenvalues further apart: the lr is held by the steep direction while the shallow one crawls.

    Args:
      x_batches: real floating (N, B) array, or its `Moments`.
      loss: "sum" or "mean".
      momentum: a real number in [0, 1).
      intercept: False (the lesson's y = w*x; the result unchanged bit for bit) or True (y = w*x + b).

    Returns:
      A Python float.
    """
    momentum = check_momentum(momentum)
    data = _moments("critical_lr", x_batches)
    if intercept:
        return _scale(data, loss) * critical_with_intercept(data, momentum)
    if momentum == 0.0:
        return _critical(data, [_scale(data, loss)])[0]
    return _scale(data, loss) * _critical_with_momentum(data.sxx, momentum)


def critical_lrs(x_batches, *, momentum=0.0, intercept=False) -> dict:
    """{"sum": critical_lr(x_batches, loss="sum", ...), "mean": critical_lr(x_batches, loss="mean", ...)},
    equal to those bit for bit, from one search (the mean's threshold is B times the sum's)."""
    data = _moments("critical_lrs", x_batches)
    losses = ("sum", "mean")
    scales = [_scale(data, loss) for loss in losses]
    momentum = check_momentum(momentum)
    if intercept or momentum:
        rate = (
            critical_with_intercept(data, momentum)
            if intercept
            else _critical_with_momentum(data.sxx, momentum)
        )
        return {loss: scale * rate for loss, scale in zip(losses, scales, strict=True)}
    return dict(zip(losses, _critical(data, scales), strict=True))


def _critical(data: Moments, scales: list) -> list:
    """critical_lr of `data` for each lr scale (1 for the sum loss, B for the mean)."""
    sums, counts = np.unique(data.sxx[data.sxx > 0], return_counts=True)
    if sums.size == 0:
        return [float("inf")] * len(scales)
    if sums.size == 1:
        return [scale / float(sums[0]) for scale in scales]
    # Work in u = lr/scale. For u < 1/S_max every |factor| < 1; for u >= 1/S_min every |factor| >= 1.
    # Between, the log of the product is concave on each interval between poles u = 1/(2*S_j), so
    # each interval holds at most one climb above 0: find its peak, then the first crossing.
    lo, hi = 1.0 / float(sums[-1]), 1.0 / float(sums[0])
    with np.errstate(over="ignore", divide="ignore"):  # subnormal S_k: poles at inf drop out below
        poles = np.sort(0.5 / sums)
    edges = [lo, *poles[(poles > lo) & (poles < hi)], hi]
    growth = lambda u: _log_growth(u, sums, counts)  # noqa: E731
    for left, right in zip(edges[:-1], edges[1:], strict=True):
        if right < hi:
            # Upper bound on the interval: each |factor| is convex in u, so at most its larger end value.
            with np.errstate(divide="ignore"):
                bound = np.dot(
                    counts, np.log(np.maximum(np.abs(1 - 2 * left * sums), np.abs(1 - 2 * right * sums)))
                )
            if bound < 0:
                continue
        peak = right if right == hi else bisect(lambda u: _slope(u, sums, counts) <= 0, left, right)
        if growth(peak) >= 0:
            u = bisect(lambda u: growth(u) >= 0, left, peak)
            return [scale * u for scale in scales]
    return [scale * hi for scale in scales]  # unreachable: the product is at least 1 at hi


def _critical_with_momentum(sxx: np.ndarray, momentum: float) -> float:
    """The sum-loss rate u at which the heavy-ball product's spectral radius first reaches 1."""
    return float(critical_with_momenta(sxx, np.array([momentum]))[0])


def critical_with_momenta(sxx: np.ndarray, momenta: np.ndarray, rtol: float = 0.0) -> np.ndarray:
    """`_critical_with_momentum` for each of `momenta` (M,), every momentum's search in the same
    passes over the batches: the same rates tried, so the same results as one at a time. With
    `rtol` > 0 a search stops once its bracket is that narrow (relative), at the rate that grew:
    what a chart needs, in 2 finer passes instead of about 8."""
    momenta = np.asarray(momenta, np.float64)
    positive = sxx[sxx > 0]
    if positive.size == 0:
        return np.full(momenta.shape, np.inf)  # w never moves
    if positive.size == sxx.size and np.all(sxx == sxx[0]):
        return (1.0 + momenta) / float(sxx[0])  # identical batches: the closed form
    # Every batch alone is stable below (1 + m)/S_k: the first crossing lies past a small fraction
    # of the fastest batch's threshold, and by the slowest one's the product has (nearly always)
    # grown; the search goes on doubling past it if not.
    low = (1.0 + momenta) / float(positive.max()) / 1000
    high = (1.0 + momenta) / float(positive.min())
    return first_crossing(lambda rows, u: log_radius_momentum(u, sxx, momenta[rows, None]), low, high, rtol)


def regime(lr, x_batches, *, loss="sum", intercept=False) -> str:
    """The run's behaviour in words, from the per-step factors r_k = 1 - c*lr*S_k.

    "stalled": every r_k is 1 (lr = 0 or all x zero), w never moves.
    "monotone": every r_k in [0, 1) and the product below 1: w approaches w* from one side.
    "oscillating": some r_k < 0 and |product| < 1: w overshoots, the zig-zag shrinks.
    "two-cycle": some r_k < 0 and |product| = 1 (to rounding): w bounces between two values forever.
    "diverging": |product| > 1: the error grows.

    With intercept=True, for y = w*x + b, the same words from the step matrices I - c*lr*H_k (see
    `step_factors`): "some r_k < 0" reads "some step's factor along lambda_max(H_k) is negative",
    and |product| is the spectral radius of the N steps' product, whose first crossing of 1 is
    `critical_lr(..., intercept=True)`. When every x is the same value, the direction along which
    no step moves is left out, as there. Needs `Moments` with sx.
    """
    factors = step_factors(lr, x_batches, loss=loss)  # checks lr and the data too
    if intercept:
        return _regime_with_intercept(float(lr), _moments("regime", x_batches), loss)
    if np.all(factors == 1.0):
        return "stalled"
    with np.errstate(divide="ignore"):
        log_growth = float(np.sum(np.log(np.abs(factors))))
    return _regime_of(log_growth, factors.size, bool(np.any(factors < 0)))


def _regime_of(log_growth: float, steps: int, overshoots: bool) -> str:
    """regime's words from the log of |product| over `steps` steps, and whether a step overshoots."""
    tolerance = 16 * steps * np.finfo(np.float64).eps
    if log_growth > tolerance:
        return "diverging"
    if overshoots:
        return "two-cycle" if log_growth >= -tolerance else "oscillating"
    return "monotone"


def _regime_with_intercept(lr: float, data: Moments, loss) -> str:
    if lr == 0.0:
        return "stalled"  # every step is the identity (B >= 1: otherwise b always moves)
    u = lr / _scale(data, loss)
    sxx, sx, b = data.sxx, _sums_of_x(data, "regime"), float(data.batch_size)
    steep = 1.0 - 2.0 * u * _largest_eigenvalues(sxx, sx, b)
    if _every_x_alike(data):
        # Every H_k is B*(x, 1)(x, 1)^T: the steps share eigenvectors, and the null one is left out.
        with np.errstate(divide="ignore"):
            log_growth = float(np.sum(np.log(np.abs(steep))))
    else:
        log_growth = float(log_radius_intercept(np.float64(u), sxx, sx, b, 0.0))
    return _regime_of(log_growth, sxx.size, bool(np.any(steep < 0)))


# The model with an intercept, y = w*x + b.


def _sums_of_x(data: Moments, function: str) -> np.ndarray:
    """data.sx, which the model with an intercept needs."""
    if data.sx is None:
        raise ValueError(f"{function}(..., intercept=True) needs Moments with sx (as moments() makes them)")
    return data.sx


class Centred(NamedTuple):
    """The whole data set's means and (co)variances per example, float64 Python floats."""

    mean_x: float
    mean_y: float
    var_x: float
    cov_xy: float
    var_y: float
    alike: bool  # var(x) no more than 1e-12 of mean(x**2): every x the same value


def centred(data: Moments, function: str) -> Centred:
    if data.sy is None or data.sx is None:
        raise ValueError(
            f"{function}(..., intercept=True) needs Moments with sx and sy (as moments() makes them)"
        )
    count = data.sxx.size * data.batch_size
    sxx, sxy, syy = (float(np.sum(a)) / count for a in data[:3])
    mean_x, mean_y = float(np.sum(data.sx)) / count, float(np.sum(data.sy)) / count
    var_x = sxx - mean_x * mean_x
    return Centred(
        mean_x, mean_y, var_x, sxy - mean_x * mean_y, syy - mean_y * mean_y, not var_x > 1e-12 * sxx
    )


def _optimum_with_intercept(data: Moments) -> tuple:
    moments_ = centred(data, "optimum")
    if moments_.alike:
        return float("nan"), float("nan")
    w_star = moments_.cov_xy / moments_.var_x
    return w_star, moments_.mean_y - w_star * moments_.mean_x


def _average_loss_with_intercept(weights, b, data: Moments) -> np.ndarray:
    """mean((w*x + b - y)**2) at each broadcast (w, b), from the data's centred moments."""
    m = centred(data, "average_loss")
    try:
        w, b = np.broadcast_arrays(np.asarray(weights, np.float64), np.asarray(b, np.float64))
    except (ValueError, TypeError) as err:
        raise ValueError(f"b must be real numbers that broadcast against weights; {err}"[:300]) from None
    with np.errstate(over="ignore", invalid="ignore"):
        # The loss splits into the spread about the means and the offset of the line at mean(x):
        # var_y - 2*w*cov + w**2*var_x + (w*mean_x + b - mean_y)**2. The spread is written, as in
        # the 1-D landscape, as var_x*(w - w*)**2 + its minimum: no cancellation near (w*, b*).
        if m.alike:  # no w* (every x the same value); var_x and cov are rounding's
            spread = m.var_y + w * (w * m.var_x - 2 * m.cov_xy)
        else:
            w_star = m.cov_xy / m.var_x
            spread = (w - w_star) ** 2 * m.var_x + max(m.var_y - m.cov_xy * w_star, 0.0)
        return spread + (w * m.mean_x + b - m.mean_y) ** 2


def _largest_eigenvalues(sxx, sx, b):
    """lambda_max of each H_k = [[S_k, X_k], [X_k, B]], float64 (N,)."""
    half_trace, half_gap = (sxx + b) / 2, (sxx - b) / 2
    return half_trace + np.hypot(half_gap, sx)


def _eigenvalues(data: Moments, function: str) -> tuple:
    """(lambda_min, lambda_max) of each H_k, float64 (N,) each. lambda_min as det(H_k)/lambda_max:
    no cancellation when lambda_min is far smaller than lambda_max (x with a large mean)."""
    b = float(data.batch_size)
    largest = _largest_eigenvalues(data.sxx, _sums_of_x(data, function), b)
    det = np.maximum(data.sxx * b - data.sx * data.sx, 0.0)  # >= 0 but for rounding
    return det / largest, largest  # largest >= B >= 1


def _every_x_alike(data: Moments) -> bool:
    """var(x) no more than 1e-12 of mean(x**2) over all N*B examples: every x the same value, so
    every H_k shares the null direction (1, -x) (see `critical_lr`). Needs data.sx."""
    count = data.sxx.size * data.batch_size
    mean_x, total_xx = float(np.sum(data.sx)) / count, float(np.sum(data.sxx))
    return not total_xx / count - mean_x * mean_x > 1e-12 * total_xx / count


def _rounding(steps: int) -> float:
    """How far rounding can carry the log of a product of `steps` steps' spectral radius from
    its true value: 16 ulps a step, `core.theory.regime`'s tolerance for a two-cycle. A few ulps
    a step were measured (N = 20 to 200, momentum 0 to 0.9, |mean(x)| up to 10**4 spreads)."""
    return 16 * steps * float(np.finfo(np.float64).eps)


def critical_with_intercept(data: Moments, momentum: float, rtol: float = 0.0) -> float:
    """The sum-loss rate u = lr/scale at which the product's spectral radius first reaches 1, for
    y = w*x + b (see `critical_lr`). With `rtol` > 0 the search stops once its bracket is that
    narrow (relative), as `critical_with_momenta`'s."""
    sxx, sx, b = data.sxx, _sums_of_x(data, "critical_lr"), float(data.batch_size)
    largest = _largest_eigenvalues(sxx, sx, b)
    if _every_x_alike(data) or (np.all(sxx == sxx[0]) and np.all(sx == sx[0])):
        # Identical steps (every x alike makes them so): the closed form.
        return (1.0 + momentum) / float(largest.max())
    high = np.array([(1.0 + momentum) / float(largest.min())])
    # A rate grows only past rounding's reach (as `regime` reads "diverging"): with a large
    # |mean(x)| the shallow direction contracts by less than float64 resolves over the N steps,
    # so its eigenvalue of the product, less than an ulp below 1, is computed as likely above 1
    # as below. Counted as growth, that noise stopped the momentum search at its lowest rate,
    # 1000 times too small (x = 1000 + N(0, 0.01), B = 8, momentum 0.5), and the plain one up to
    # half the closed form for batches identical but for an ulp.
    slack = _rounding(sxx.size)
    if momentum != 0.0:
        low = np.array([(1.0 + momentum) / float(largest.max()) / 1000])
        log_radius = lambda rows, u: log_radius_intercept(u, sxx, sx, b, momentum) - slack  # noqa: E731
        return float(first_crossing(log_radius, low, high, rtol)[0])
    # Without momentum each step matrix is symmetric, so the product's spectral radius is at most
    # the product of the steps' norms, max |1 - 2*u*lambda| over H_k's two eigenvalues: a bound
    # that costs O(N) per rate, not a product of matrices. On the general search's grid spacing,
    # the true search starts at the last rate where the bound is below 1 (nothing grows there),
    # and walks up in short grids of that spacing until a rate grows.
    smallest = _eigenvalues(data, "critical_lr")[0]
    low = 0.5 / float(largest.max())  # every |1 - 2*u*lambda| <= 1 below 1/lambda_max
    spacing = 1000.0 ** (1 / (GRID - 1))  # the general grid's, 1.4%
    rates = low * spacing ** np.arange(int(np.ceil(np.log(high[0] / low) / np.log(spacing))) + 2)
    with np.errstate(divide="ignore"):
        bound = np.sum(
            np.log(
                np.maximum(
                    np.abs(1 - 2 * rates[:, None] * smallest), np.abs(1 - 2 * rates[:, None] * largest)
                )
            ),
            axis=1,
        )
    start = rates[max(int(np.argmax(bound >= 0)) - 1, 0)]
    points = 16
    log_radius = lambda rows, u: log_radius_plain(u, sxx[None], sx[None], np.array([b])) - slack  # noqa: E731
    found = first_crossing(
        log_radius,
        np.array([start]),
        np.array([start * spacing ** (points - 1)]),
        rtol,
        points,
        spacing ** (points - 1),
    )
    return float(found[0])
