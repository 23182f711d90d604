"""The stability maps of the model with an intercept, y = w*x + b: `pytree_stability_map` (lr x B)
and `pytree_momentum_map` (lr x momentum at one B), the params {"w", "b"} as `core.pytree`'s carry.

The lesson's maps (`core.stability`) for two parameters: a batch enters a step only through its
sums Sxx, Sx, Sxy, Sy and its size, so each cell reads per-row prefix sums over the columns and
costs O(N); one compiled grid per padded shape and grid size, as there. The argument checks and
the map types are `core.stability`'s.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import LOSSES, PARAMS, check_fits, check_params
from core.engine import ALIKE, DIVERGENCE_RATIO
from core.stability import (
    MAP_RTOL,
    MomentumMap,
    StabilityMap,
    _check_batch_sizes,
    _check_count,
    _check_momenta,
    _grid_start,
    _reject_traced,
)
from core.theory import (
    _centred,
    _critical_with_intercept,
    moments,
    optimum,
)


def _pytree_batch_loss(params, sums, count, scale):
    """One batch's loss of y = w*x + b through its sums, dropping the constant sum(y**2)/scale:
    sum((w*x + b - y)**2) = w**2*Sxx + 2*w*b*Sx + b**2*B - 2*w*Sxy - 2*b*Sy (+ const), divided by
    scale (1 for the sum loss, B for the mean). params: (2,) [w, b]; sums: (Sxx, Sx, Sxy, Sy)."""
    w, b = params[0], params[1]
    sxx, sx, sxy, sy = sums
    return (w * w * sxx + 2 * w * b * sx + b * b * count - 2 * w * sxy - 2 * b * sy) / scale


_pytree_batch_grad = jax.grad(_pytree_batch_loss)


def _pytree_run(params0, lr, momentum, scale, count, sums, n, reference, limit):
    """One cell of y = w*x + b: `_run` with the carry (w, b) as a (2,) array, through the rows'
    four sums (each (rows,)). Heavy-ball momentum as Optax's; 0 is plain SGD. Diverged is
    `pytree_history`'s rule: the Euclidean distance of (w, b) from `reference` non-finite or past
    `limit`, at any step before n."""
    dtype = params0.dtype
    wide = sums[0].dtype

    def step(carry, row):
        params, trace, diverged = carry
        i, *sums_k = row
        # The gradient of the batch loss through its sums: O(1) per step whatever B is.
        grad = _pytree_batch_grad(params.astype(wide), sums_k, count, scale)
        new_trace = grad + momentum * trace
        new_params = (params.astype(wide) - lr * new_trace).astype(dtype)
        live = i < n
        new_params = jnp.where(live, new_params, params)
        new_trace = jnp.where(live, new_trace, trace)
        offset = new_params.astype(wide) - reference
        distance = jnp.hypot(offset[0], offset[1])  # non-finite params: non-finite distance
        bad = ~jnp.isfinite(distance) | (distance > limit)
        return (new_params, new_trace, diverged | (live & bad)), None

    rows = lax.iota(jnp.int32, sums[0].shape[0])
    start = (params0, jnp.zeros(2, wide), jnp.asarray(False))
    (params, _, diverged), _ = lax.scan(step, start, (rows, *sums))
    return params, diverged


# As `_run`'s: over lr, then over B (or momentum at one B), then over the two losses.
_pytree_lrs = jax.vmap(_pytree_run, in_axes=(None, 0, None, None, None, None, None, None, None))
_pytree_grid = jax.vmap(_pytree_lrs, in_axes=(None, None, None, 0, 0, 1, None, 0, 0))
_pytree_losses = jax.vmap(_pytree_grid, in_axes=(None, None, None, 0, None, None, None, None, None))
_pytree_momentum_grid = jax.vmap(_pytree_lrs, in_axes=(None, None, 0, None, None, None, None, None, None))
_pytree_momentum_losses = jax.vmap(
    _pytree_momentum_grid, in_axes=(None, None, None, 0, None, None, None, None, None)
)


def _pytree_sums(x, y, columns, params0, star):
    """The rows' prefix sums (Sxx, Sx, Sxy, Sy) at `columns` ((K,) or a scalar: each (rows, K) or
    (rows,)) in x's dtype; B as a count; where the divergence distance is taken from (`star`, NaN
    where undefined: then the start) and its limit, as `pytree_history`; the losses' scales."""
    wide = x.dtype
    sums = tuple(jnp.take(jnp.cumsum(a, axis=1), columns, axis=1) for a in (x * x, x, x * y, y))
    start = jnp.broadcast_to(params0.astype(wide), star.shape)
    defined = jnp.broadcast_to(jnp.all(jnp.isfinite(star), axis=-1, keepdims=True), star.shape)
    reference = jnp.where(defined, star, start)
    away = start - reference
    limit = DIVERGENCE_RATIO * jnp.maximum(1.0, jnp.hypot(away[..., 0], away[..., 1]))
    count = (columns + 1).astype(wide)
    scales = jnp.stack([jnp.ones_like(count), count])
    return sums, count, reference, limit, scales


@jax.jit
def _pytree_map_kernel(x, y, lrs, batch_sizes, params0, n, star):
    """Final (w, b) (2, K, L, 2) and divergence flags (2, K, L) of the lr x B map of y = w*x + b,
    loss "sum" first. params0 (2,) in the data dtype; star (K, 2) (w*, b*) per B in the wide dtype
    (NaN: undefined); the rest as `_map_kernel`'s."""
    wide = lrs.dtype
    sums, count, reference, limit, scales = _pytree_sums(
        x.astype(wide), y.astype(wide), batch_sizes - 1, params0, star
    )
    zero = jnp.zeros((), wide)
    return _pytree_losses(params0, lrs, zero, scales, count, sums, n, reference, limit)


@jax.jit
def _pytree_momentum_kernel(x, y, lrs, momenta, batch_size, params0, n, star):
    """Final (w, b) (2, M, L, 2) and flags (2, M, L) of the lr x momentum map of y = w*x + b at one
    batch size (a traced int32); star (2,); the rest as `_pytree_map_kernel`'s."""
    wide = lrs.dtype
    sums, count, reference, limit, scales = _pytree_sums(
        x.astype(wide), y.astype(wide), batch_size - 1, params0, star
    )
    return _pytree_momentum_losses(params0, lrs, momenta, scales, count, sums, n, reference, limit)


def _pytree_start(params0, dtype) -> np.ndarray:
    """params0 checked (errors name params0 and the key) as a (2,) [w, b] array in `dtype`."""
    check_params(params0, "params0")
    for key in PARAMS:
        _reject_traced(f'params0["{key}"]', params0[key])
        check_fits(f'params0["{key}"]', params0[key], dtype)
    return np.array([float(np.asarray(params0[key], np.float64)) for key in PARAMS], dtype=dtype)


def _pytree_optimum(x, y) -> tuple:
    """(Moments, (w*, b*) float64 with NaN where undefined, and the divergence reference's (w*, b*):
    NaN also where `pytree_history` calls it undefined, var(x) within its ALIKE of mean(x**2))."""
    data = moments(x, y)
    star = np.array(optimum(data, intercept=True))
    centred = _centred(data, "optimum")
    alike = not centred.var_x > ALIKE * (centred.var_x + centred.mean_x**2)
    return data, star, np.full(2, np.nan) if alike else star


def _pytree_outcomes(finals, diverged, star) -> tuple[dict, dict]:
    """`_outcomes` for (w, b): finals (2, rows, L, 2), star broadcasting against (rows, L, 2); the
    error is the Euclidean distance from (w*, b*)."""
    finals = np.asarray(finals).astype(np.float64)
    diverged = np.asarray(diverged)
    log10_error, flags = {}, {}
    for index, loss in enumerate(LOSSES):
        offset = finals[index] - star
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            error = np.log10(np.hypot(offset[..., 0], offset[..., 1]))
        flags[loss] = diverged[index].copy()
        log10_error[loss] = np.where(flags[loss], np.nan, error)
    return log10_error, flags


def pytree_stability_map(batches, lrs, batch_sizes, *, params0, n=None) -> StabilityMap:
    """`stability_map` for the model y = w*x + b: every (lr, B) cell is the n-step plain-SGD run of
    `pytree_history(params0, lr, x[:n, :B], y[:n, :B], loss=...)`, for both losses.

    As in `stability_map`, a batch enters the gradient only through its sums, here four: Sxx_k,
    Sx_k = sum(x_k), Sxy_k and Sy_k = sum(y_k) (and B). The scan reads their prefix sums over the
    columns taken at column B-1, so a cell costs O(N), not O(N*B); the gradient is `jax.grad` of the
    batch loss written through them. One compiled function (vmap over B of vmap over lr of the
    scan) per padded shape, grid size (L, K) and dtype serves every n, params0, lrs, batch sizes and
    data. A cell agrees with `pytree_history` to float32 rounding (another order of addition), not
    bit for bit.

    Args:
      batches: the `PaddedBatches` that `HistoryEngine.pad` returns; (w, b) is carried in its dtype
        and the sums and steps are computed in float32 or wider.
      lrs: (L,) learning rates, finite and positive.
      batch_sizes: (K,) integers in 1..batches.b.
      params0: {"w": w0, "b": b0}, the start of every run, finite real scalars.
      n: the number of steps, 1..batches.n; default batches.n.

    Returns:
      A `StabilityMap` (per-loss arrays (K, L)) whose log10_error is log10 of the Euclidean
      distance of (w_N, b_N) from the least-squares (w*_B, b*_B) of x[:n, :B], y[:n, :B]
      (`core.optimum(..., intercept=True)`, float64; NaN where the run diverged or every x is
      alike); diverged is `pytree_history`'s test (a non-finite (w, b), or a distance from
      (w*_B, b*_B) beyond DIVERGENCE_RATIO * max(1, that distance at the start)); critical_lr is
      `core.critical_lrs(x[:n, :B], intercept=True)` per B, to a relative MAP_RTOL
      (exactly for identical batches).

    Raises:
      TypeError or ValueError naming the argument, as `stability_map`, and for params0 not a dict
      of exactly "w" and "b" holding finite real scalars that fit the batches' dtype.
    """
    n, dtype, wide, lrs = _grid_start(batches, n, lrs)
    batch_sizes = _check_batch_sizes(batch_sizes, batches.b)
    params0 = _pytree_start(params0, dtype)

    x, y = np.asarray(batches.x)[:n], np.asarray(batches.y)[:n]
    data, star, reference = zip(*(_pytree_optimum(x[:, :b], y[:, :b]) for b in batch_sizes), strict=True)
    finals, diverged = _pytree_map_kernel(
        batches.x,
        batches.y,
        np.asarray(lrs, dtype=wide),
        np.asarray(batch_sizes, dtype=np.int32),
        params0,
        np.int32(n),
        np.asarray(reference, dtype=wide),
    )

    # The critical lrs in float64 NumPy while the kernel runs: most of a call's time, so each
    # search stops at MAP_RTOL, as momentum_map's.
    sum_rate = np.array([_critical_with_intercept(moments_b, 0.0, MAP_RTOL) for moments_b in data])
    critical = {"sum": sum_rate, "mean": batch_sizes * sum_rate}

    log10_error, flags = _pytree_outcomes(finals, diverged, np.asarray(star)[:, None, :])
    return StabilityMap(lrs, batch_sizes, log10_error, flags, critical)


def pytree_momentum_map(batches, lrs, momenta, *, batch_size, params0, n=None) -> MomentumMap:
    """`momentum_map` for the model y = w*x + b: cell (m, lr) is the heavy-ball run
    `pytree_history(params0, lr, x[:n, :B], y[:n, :B], optimizer="momentum", momentum=m, loss=...)`,
    for both losses, computed as `pytree_stability_map` computes its cells (the four prefix sums,
    O(N) a cell; one compiled function per padded shape, grid size (L, M) and dtype).

    Args:
      batches, lrs, n: as for `pytree_stability_map`.
      momenta: (M,) momenta in [0, 1).
      batch_size: B, an integer in 1..batches.b.
      params0: {"w": w0, "b": b0}, the start of every run.

    Returns:
      A `MomentumMap` (per-loss arrays (M, L)); log10_error and diverged as `pytree_stability_map`'s,
      critical_lr `core.critical_lr(x[:n, :B], loss=..., momentum=m, intercept=True)` per momentum,
      to a relative MAP_RTOL (exactly for identical batches).

    Raises:
      TypeError or ValueError naming the argument, as `momentum_map` and `pytree_stability_map`.
    """
    n, dtype, wide, lrs = _grid_start(batches, n, lrs)
    momenta = _check_momenta(momenta)
    batch_size = _check_count("batch_size", batch_size, batches.b, "", "batches.b, the examples per batch")
    params0 = _pytree_start(params0, dtype)

    x, y = np.asarray(batches.x)[:n, :batch_size], np.asarray(batches.y)[:n, :batch_size]
    data, star, reference = _pytree_optimum(x, y)
    finals, diverged = _pytree_momentum_kernel(
        batches.x,
        batches.y,
        np.asarray(lrs, dtype=wide),
        np.asarray(momenta, dtype=wide),
        np.int32(batch_size),
        params0,
        np.int32(n),
        np.asarray(reference, dtype=wide),
    )
    sum_rate = np.array([_critical_with_intercept(data, float(m), MAP_RTOL) for m in momenta])
    critical = {"sum": sum_rate, "mean": batch_size * sum_rate}
    log10_error, flags = _pytree_outcomes(finals, diverged, star)
    return MomentumMap(lrs, momenta, batch_size, log10_error, flags, critical)
