"""The closed-form facts of the model with an intercept, y = w*x + b, in float64 NumPy.

For batch k a plain step multiplies the error (e_w, e_b) by I - c*lr*H_k, H_k = [[S_k, X_k],
[X_k, B]] (S_k = sum(x_k**2), X_k = sum(x_k)); a heavy-ball step multiplies (e_w, e_b, t_w, t_b) by
a 4x4 matrix. Here are H_k's eigenvalues, the data's centred moments (for the optimum and the loss
landscape), and the spectral radius of the N steps' product with its first crossing of 1: the parts
of `core.theory`'s public functions with `intercept=True` (or `b=`), which call them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from core.search import _GRID, _first_crossing

if TYPE_CHECKING:
    from core.theory import Moments


def _sums_of_x(data: Moments, function: str) -> np.ndarray:
    """data.sx, which the model with an intercept needs."""
    if data.sx is None:
        raise ValueError(f"{function}(..., intercept=True) needs Moments with sx (as moments() makes them)")
    return data.sx


class _Centred(NamedTuple):
    """The whole data set's means and (co)variances per example, float64 Python floats."""

    mean_x: float
    mean_y: float
    var_x: float
    cov_xy: float
    var_y: float
    alike: bool  # var(x) no more than 1e-12 of mean(x**2): every x the same value


def _centred(data: Moments, function: str) -> _Centred:
    if data.sy is None or data.sx is None:
        raise ValueError(
            f"{function}(..., intercept=True) needs Moments with sx and sy (as moments() makes them)"
        )
    count = data.sxx.size * data.batch_size
    sxx, sxy, syy = (float(np.sum(a)) / count for a in data[:3])
    mean_x, mean_y = float(np.sum(data.sx)) / count, float(np.sum(data.sy)) / count
    var_x = sxx - mean_x * mean_x
    return _Centred(
        mean_x, mean_y, var_x, sxy - mean_x * mean_y, syy - mean_y * mean_y, not var_x > 1e-12 * sxx
    )


def _optimum_with_intercept(data: Moments) -> tuple:
    moments_ = _centred(data, "optimum")
    if moments_.alike:
        return float("nan"), float("nan")
    w_star = moments_.cov_xy / moments_.var_x
    return w_star, moments_.mean_y - w_star * moments_.mean_x


def _average_loss_with_intercept(weights, b, data: Moments) -> np.ndarray:
    """mean((w*x + b - y)**2) at each broadcast (w, b), from the data's centred moments."""
    m = _centred(data, "average_loss")
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


def _critical_with_intercept(data: Moments, momentum: float, rtol: float = 0.0) -> float:
    """The sum-loss rate u = lr/scale at which the product's spectral radius first reaches 1, for
    y = w*x + b (see `critical_lr`). With `rtol` > 0 the search stops once its bracket is that
    narrow (relative), as `_critical_with_momenta`'s."""
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
        log_radius = lambda rows, u: _log_radius_intercept(u, sxx, sx, b, momentum) - slack  # noqa: E731
        return float(_first_crossing(log_radius, low, high, rtol)[0])
    # Without momentum each step matrix is symmetric, so the product's spectral radius is at most
    # the product of the steps' norms, max |1 - 2*u*lambda| over H_k's two eigenvalues: a bound
    # that costs O(N) per rate, not a product of matrices. On the general search's grid spacing,
    # the true search starts at the last rate where the bound is below 1 (nothing grows there),
    # and walks up in short grids of that spacing until a rate grows.
    smallest = _eigenvalues(data, "critical_lr")[0]
    low = 0.5 / float(largest.max())  # every |1 - 2*u*lambda| <= 1 below 1/lambda_max
    spacing = 1000.0 ** (1 / (_GRID - 1))  # the general grid's, 1.4%
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
    log_radius = lambda rows, u: _log_radius_plain(u, sxx[None], sx[None], np.array([b])) - slack  # noqa: E731
    found = _first_crossing(
        log_radius,
        np.array([start]),
        np.array([start * spacing ** (points - 1)]),
        rtol,
        points,
        spacing ** (points - 1),
    )
    return float(found[0])


def _log_radius_plain(u, sxx, sx, b):
    """`_log_radius_intercept` without momentum for M data sets at once: u (M, G) sum-loss rates,
    sxx and sx (M, N), b (M,); returns (M, G).

    The 2x2 step matrices I - u*2*H_k are held as four (M, G, N) arrays of their entries and
    multiplied as a pairwise tree, the later step on the left, each partial product rescaled to
    largest entry 1 (its log kept) so long runs do not overflow: elementwise arithmetic on whole
    levels, where a batched matmul of 2x2 matrices pays a call per matrix."""
    u = np.asarray(u, np.float64)[..., None]  # (M, G, 1) against the steps' (M, 1, N)
    h_xx, h_x = (2.0 * np.asarray(a, np.float64)[:, None, :] for a in (sxx, sx))
    h_b = 2.0 * np.asarray(b, np.float64)[:, None, None]
    a, d = 1.0 - u * h_xx, np.broadcast_to(1.0 - u * h_b, u.shape[:2] + h_xx.shape[-1:])
    c = -u * h_x
    entries = [a, c, c, d]  # [[a, b], [c, d]], symmetric
    steps = a.shape[-1]
    width = 1 << (steps - 1).bit_length()
    if width > steps:  # identities last, applied after every step
        pad = [(0, 0), (0, 0), (0, width - steps)]
        entries = [
            np.pad(e, pad, constant_values=v) for e, v in zip(entries, (1.0, 0.0, 0.0, 1.0), strict=True)
        ]
    log_scale, level = 0.0, 0
    while entries[0].shape[-1] > 1:
        (la, lb, lc, ld), (ea, eb, ec, ed) = (
            [e[..., 1::2] for e in entries],
            [e[..., 0::2] for e in entries],
        )
        entries = [la * ea + lb * ec, la * eb + lb * ed, lc * ea + ld * ec, lc * eb + ld * ed]
        if isinstance(log_scale, np.ndarray):
            log_scale = log_scale[..., 1::2] + log_scale[..., 0::2]
        level += 1
        if level % 2 and entries[0].shape[-1] > 1:
            continue  # entries at most 2*m**2 from m: rescaling every other level cannot overflow
        big = np.maximum(
            np.maximum(np.abs(entries[0]), np.abs(entries[1])),
            np.maximum(np.abs(entries[2]), np.abs(entries[3])),
        )
        big = np.where(big > 0, big, 1.0)
        entries = [e / big for e in entries]
        log_scale = log_scale + np.log(big)
    product = np.stack([np.stack(entries[:2], -1), np.stack(entries[2:], -1)], -2)[..., 0, :, :]
    with np.errstate(divide="ignore"):
        radius = np.log(np.max(np.abs(np.linalg.eigvals(product)), axis=-1))
    return (log_scale[..., 0] if isinstance(log_scale, np.ndarray) else log_scale) + radius


def _log_radius_intercept(u, sxx, sx, b, momentum):
    """log of the spectral radius of the N steps' product for y = w*x + b at each sum-loss rate in
    `u` (any shape): 2x2 products without momentum (`_log_radius_plain`), 4x4 with.

    All N step matrices are built at once and multiplied as a pairwise tree, log2(N) batched
    matmuls instead of N small ones (N = 1000 took 1.3 s one step at a time); every partial
    product is rescaled to largest entry 1, its log scale kept, so long runs do not overflow."""
    u = np.asarray(u, np.float64)
    if momentum == 0.0:
        return _log_radius_plain(u.reshape(1, -1), sxx[None], sx[None], np.array([b]))[0].reshape(u.shape)
    if u.size > 64:  # in pieces of 64 rates: the 16 entries' arrays stay in cache (twice as fast)
        pieces = np.array_split(u.ravel(), -(-u.size // 64))
        return np.concatenate([_log_radius_intercept(p, sxx, sx, b, momentum) for p in pieces]).reshape(
            u.shape
        )
    # The heavy-ball step [[I - u*h, -u*m*I], [h, m*I]], h = 2*H_k, as 16 entries: (G, N) arrays,
    # (G, 1) or scalars (0 where the step has none, skipped in the products).
    r = u.reshape(-1, 1)
    h11, h12, h22 = 2.0 * np.asarray(sxx, np.float64)[None], 2.0 * np.asarray(sx, np.float64)[None], 2.0 * b
    a11, a12, a22 = 1.0 - r * h11, -r * h12, 1.0 - r * h22
    drag = -r * momentum
    h11, h12 = np.broadcast_to(h11, a11.shape), np.broadcast_to(h12, a11.shape)
    step = [
        [a11, a12, drag, 0.0],
        [a12, a22, 0.0, drag],
        [h11, h12, momentum, 0.0],
        [h12, h22, 0.0, momentum],
    ]
    return _log_radius_tree(step, a11.shape).reshape(u.shape)


def _log_radius_tree(step, shape) -> np.ndarray:
    """log of the spectral radius of M_N ... M_1 at each of G rates, the d x d steps given as
    entries step[i][j]: (G, N) arrays, or (G, 1) arrays and floats that hold for every step (0.0
    is skipped in the products). Multiplied as a pairwise tree, the later step on the left, with
    elementwise arithmetic on whole levels (a batched matmul of 4x4 matrices pays a loop per
    matrix: N = 1000 at 512 rates took 0.9 s that way); each partial product is rescaled to
    largest entry 1 every other level, its log kept, so long runs do not overflow."""
    d, steps = len(step), shape[-1]
    product = [
        [e if np.ndim(e) == 2 and e.shape[-1] == steps else np.broadcast_to(e, shape) for e in row]
        for row in step
    ]
    sparse = [[isinstance(e, float) and e == 0.0 for e in row] for row in step]
    log_scale, level = 0.0, 0
    while steps > 1:
        later = [[e[:, 1::2] for e in row] for row in product]
        earlier = [[e[:, 0 : steps - 1 : 2] for e in row] for row in product]
        odd = steps % 2  # the last step waits, unpaired, for the next level
        merged = []
        for i in range(d):
            row = []
            for k in range(d):
                terms = [later[i][j] * earlier[j][k] for j in range(d) if not (sparse[i][j] or sparse[j][k])]
                total = terms[0]
                for term in terms[1:]:
                    total = total + term
                row.append(np.concatenate([total, product[i][k][:, -1:]], 1) if odd else total)
            merged.append(row)
        sparse = [[False] * d for _ in range(d)]
        product, steps = merged, (steps + 1) // 2
        if isinstance(log_scale, np.ndarray):
            pairs = log_scale[:, 1::2] + log_scale[:, 0 : log_scale.shape[1] - 1 : 2]
            log_scale = np.concatenate([pairs, log_scale[:, -1:]], 1) if odd else pairs
        level += 1
        if level % 2 and steps > 1:
            continue  # entries grow at most d*m**2 from m: rescaling every other level is enough
        big = np.max(np.abs(np.stack([e for row in product for e in row])), axis=0)
        big = np.where(big > 0, big, 1.0)
        product = [[e / big for e in row] for row in product]
        log_scale = log_scale + np.log(big)
    matrices = np.stack([np.stack([e[:, 0] for e in row], -1) for row in product], -2)
    with np.errstate(divide="ignore"):
        radius = np.log(np.max(np.abs(np.linalg.eigvals(matrices)), axis=-1))
    return (log_scale[:, 0] if isinstance(log_scale, np.ndarray) else log_scale) + radius
