"""The stability maps: the lesson's run for every cell of a grid of learning rates and batch sizes
(`stability_map`), or of learning rates and momenta at one batch size (`momentum_map`); and the
same two maps of the w, b model (`pytree_stability_map`, `pytree_momentum_map`, at the end).

Each cell (lr, B) is the N-step run of `training_history` on the first B columns of each batch,
x[:n, :B] and y[:n, :B], from one w0, for the sum loss and for the mean loss. The whole grid is one
compiled function: `jax.vmap` (over B) of `jax.vmap` (over lr) of the `lax.scan` training loop. Its
shape depends only on the padded arrays and the grid's size (L, K), so changing n, w0, the learning
rates, the batch sizes or the data never recompiles.

For this linear model a batch enters the gradient only through two sums, Sxx_k = sum(x_k**2) and
Sxy_k = sum(x_k * y_k): the batch loss is w**2*Sxx_k - 2*w*Sxy_k + sum(y_k**2). So the scan reads,
instead of the batch itself, the per-row prefix sums of x*x and x*y over the columns (one cumsum per
call, in float32 or wider), taken at column B-1: a cell costs O(N), not O(N*B). The sums come out of a
different addition order than `training_history`'s pairwise tree, so a cell agrees with the engine
to float32 rounding, not bit for bit.

The scan runs over every padded row (rows past n are masked, not skipped), so the compiled grid costs
the same for every n. Measured on a 2-core CPU, 64 lrs x 32 batch sizes on the explorer's (1000, 512)
arrays: about 5 ms for the compiled grid, and about 30 ms at n = 200 (150 ms at n = 1000) for the
float64 `moments` and `critical_lr` of the 32 batch sizes, which is most of a call.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import LOSSES, PARAMS, check_fits, check_params, check_scalar, is_traced
from core.engine import ALIKE, DIVERGENCE_RATIO
from core.theory import (
    centred,
    critical_lrs,
    critical_with_intercept,
    critical_with_momenta,
    moments,
    optimum,
)
from core.training import check_padded


class StabilityMap(NamedTuple):
    """The outcome of every (lr, B) cell of a grid, for both losses. NumPy arrays throughout.

    lrs: (L,) float64, the grid's learning rates.
    batch_sizes: (K,) int64, the grid's batch sizes.
    log10_error: {"sum", "mean"} -> (K, L) float64, log10 |w_N - w*_B| after the n steps, where w*_B
        is the least-squares optimum of x[:n, :B], y[:n, :B] (`core.optimum`, float64). NaN where the
        run diverged or w*_B is undefined (every x zero); -inf where w_N is exactly w*_B.
    diverged: {"sum", "mean"} -> (K, L) bool, whether the run crossed `DIVERGENCE_RATIO` at any step
        1..n: the same test as `History.diverged_at` (a non-finite weight, or |w - w*| beyond
        DIVERGENCE_RATIO * max(1, |w0 - w*|), w* taken in the carry's precision).
    critical_lr: {"sum", "mean"} -> (K,) float64, `core.critical_lr` of x[:n, :B] for each B: the
        analytic boundary where the product of the per-step factors reaches 1.
    """

    lrs: np.ndarray
    batch_sizes: np.ndarray
    log10_error: dict
    diverged: dict
    critical_lr: dict


def _wide(dtype):
    """The dtype the sums and the step are computed in: the data's, or float32 if narrower."""
    return dtype if jnp.finfo(dtype).bits >= 32 else jnp.dtype(jnp.float32)


def _batch_loss(w, sxx, sxy, scale):
    """One batch's loss through its sums, (w**2*Sxx - 2*w*Sxy) / scale, dropping the constant
    sum(y**2)/scale: the lesson's sum((w*x - y)**2) for scale 1, the mean loss for scale B."""
    return (w * w * sxx - 2 * w * sxy) / scale


_batch_grad = jax.grad(_batch_loss)


def _run(w0, lr, momentum, scale, sxx, sxy, n, reference, limit):
    """One cell: the scan of the lesson's training step over the rows' sums (sxx, sxy: (rows,)),
    with heavy-ball momentum as Optax's (trace = gradient + momentum * trace; w -= lr * trace;
    momentum 0 is the plain step, the trace then being the gradient itself).

    Rows past n leave the carry unchanged. The carry is (w, trace, ever diverged); w keeps the data's
    dtype and each step is computed in `_wide` of it.
    """
    dtype = w0.dtype
    wide = sxx.dtype

    def step(carry, row):
        w, trace, diverged = carry
        i, sxx_k, sxy_k = row
        # Not the engine's step on purpose: the same step through the batch's two sums, O(1).
        grad = _batch_grad(w.astype(wide), sxx_k, sxy_k, scale)
        new_trace = grad + momentum * trace
        new_w = (w.astype(wide) - lr * new_trace).astype(dtype)
        live = i < n
        new_w = jnp.where(live, new_w, w)
        new_trace = jnp.where(live, new_trace, trace)
        distance = jnp.abs(new_w.astype(wide) - reference)
        bad = ~jnp.isfinite(new_w) | (distance > limit)
        return (new_w, new_trace, diverged | (live & bad)), None

    rows = lax.iota(jnp.int32, sxx.shape[0])
    start = (w0, jnp.zeros((), wide), jnp.asarray(False))
    (w, _, diverged), _ = lax.scan(step, start, (rows, sxx, sxy))
    return w, diverged


# Over lr (the map's columns), then over B (its rows: each B has its own sums, scale, w* and limit),
# then over the two losses (only the scale differs).
_run_lrs = jax.vmap(_run, in_axes=(None, 0, None, None, None, None, None, None, None))
_run_grid = jax.vmap(_run_lrs, in_axes=(None, None, None, 0, 1, 1, None, 0, 0))
_run_losses = jax.vmap(_run_grid, in_axes=(None, None, None, 0, None, None, None, None, None))
# The lr x momentum map: over lr, then over momentum (its rows, at one B), then over the two losses.
_momentum_grid = jax.vmap(_run_lrs, in_axes=(None, None, 0, None, None, None, None, None, None))
_momentum_losses = jax.vmap(_momentum_grid, in_axes=(None, None, None, 0, None, None, None, None, None))


def _sums(x, y, columns, w0, n):
    """The rows' prefix sums Sxx, Sxy at `columns` ((K,) or a scalar: (rows, K) or (rows,)) in x's
    dtype; w*_B over the first n rows and the divergence limit, exactly as
    `core.engine.divergence_step`; and the two losses' scales ((2, K) or (2,): sum 1, mean B)."""
    wide = x.dtype
    sxx = jnp.take(jnp.cumsum(x * x, axis=1), columns, axis=1)  # Sxx_k(B)
    sxy = jnp.take(jnp.cumsum(x * y, axis=1), columns, axis=1)
    live = lax.iota(jnp.int32, x.shape[0]) < n
    live = live[:, None] if sxx.ndim == 2 else live
    zero = jnp.zeros((), wide)
    w_star = jnp.sum(jnp.where(live, sxy, zero), axis=0) / jnp.sum(jnp.where(live, sxx, zero), axis=0)
    start = w0.astype(wide)
    reference = jnp.where(jnp.isfinite(w_star), w_star, start)
    limit = DIVERGENCE_RATIO * jnp.maximum(1.0, jnp.abs(start - reference))
    scales = jnp.stack([jnp.ones_like(reference), (columns + 1).astype(wide)])
    return sxx, sxy, reference, limit, scales


@jax.jit
def _map_kernel(x, y, lrs, batch_sizes, w0, n):
    """Final weights (2, K, L) and divergence flags (2, K, L), loss "sum" first, then "mean".

    x, y: the padded (rows, columns) arrays; lrs (L,) in the wide dtype; batch_sizes (K,) int32;
    w0 in the data dtype; n a traced int32. Columns past B and rows past n are ignored.
    """
    wide = lrs.dtype
    sxx, sxy, reference, limit, scales = _sums(x.astype(wide), y.astype(wide), batch_sizes - 1, w0, n)
    return _run_losses(w0, lrs, jnp.zeros((), wide), scales, sxx, sxy, n, reference, limit)


@jax.jit
def _momentum_kernel(x, y, lrs, momenta, batch_size, w0, n):
    """Final weights (2, M, L) and divergence flags (2, M, L) of the lr x momentum map at one batch
    size (a traced int32), loss "sum" first; momenta (M,) in the wide dtype, the rest as above."""
    wide = lrs.dtype
    sxx, sxy, reference, limit, scales = _sums(x.astype(wide), y.astype(wide), batch_size - 1, w0, n)
    return _momentum_losses(w0, lrs, momenta, scales, sxx, sxy, n, reference, limit)


def _map_start(batches, n, lrs, w0) -> tuple:
    """The checks both maps open with: (n as an int, the batches' dtype, the wide dtype the maps
    sum in, lrs checked in it). Raises TypeError or ValueError naming the argument."""
    n, dtype, wide, lrs = _grid_start(batches, n, lrs)
    check_scalar("w0", w0)
    _reject_traced("w0", w0)
    check_fits("w0", w0, dtype)
    return n, dtype, wide, lrs


def _grid_start(batches, n, lrs) -> tuple:
    """`_map_start` but for the start: what every map checks, whatever its carry."""
    check_padded(batches)
    n = _check_n(n, batches.n)
    dtype = jnp.dtype(batches.x.dtype)
    wide = _wide(dtype)
    return n, dtype, wide, _check_lrs(lrs, wide)


def _reject_traced(name: str, value) -> None:
    if is_traced(value):
        raise TypeError(
            f"{name} must be concrete: stability_map returns NumPy arrays, so it cannot run under jax.jit"
        )


def _real_vector(name: str, values, what: str) -> np.ndarray:
    """`values` as a float64 NumPy array, or the error naming `name`: concrete, real, non-empty 1-D
    (`what` says of what, in the error)."""
    _reject_traced(name, values)
    try:
        array = np.asarray(values)
    except (ValueError, TypeError) as err:
        raise TypeError(f"{name} must be a 1-D array of real numbers; {err}") from None
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)) or (
        array.dtype == np.bool_
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array{what}, got shape {array.shape}")
    return array.astype(np.float64)


def _check_lrs(lrs, dtype) -> np.ndarray:
    array = _real_vector("lrs", lrs, " of learning rates")
    if not np.all(np.isfinite(array)):
        raise ValueError("lrs must be finite, got " + np.array2string(array[~np.isfinite(array)][:3]))
    if not np.all(array > 0):
        raise ValueError(f"lrs must be positive, got {array[array <= 0][0]!r}")
    if np.max(array) > float(jnp.finfo(dtype).max):
        raise ValueError(f"lrs = {np.max(array):g} overflows the step's dtype {jnp.dtype(dtype)}")
    return array


def _check_batch_sizes(batch_sizes, columns: int) -> np.ndarray:
    _reject_traced("batch_sizes", batch_sizes)
    try:
        array = np.asarray(batch_sizes)
    except (ValueError, TypeError) as err:
        raise TypeError(f"batch_sizes must be a 1-D array of integers; {err}") from None
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"batch_sizes must hold integers, got dtype {array.dtype}")
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"batch_sizes must be a non-empty 1-D array of integers, got shape {array.shape}")
    if np.min(array) < 1 or np.max(array) > columns:
        bad = array[(array < 1) | (array > columns)][0]
        raise ValueError(
            f"batch_sizes must lie in 1..{columns} (batches.b, the examples per batch), got {int(bad)}"
        )
    return array.astype(np.int64)


def _check_count(name: str, value, limit: int, noun: str, source: str) -> int:
    """A concrete integer `value` in 1..limit, as an int; the errors name `name`, say what it counts
    (`noun`) and where the limit comes from (`source`)."""
    if is_traced(value) or isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{noun}, got {type(value).__name__} {value!r}"[:200])
    if not 1 <= value <= limit:
        raise ValueError(f"{name} must lie in 1..{limit} ({source}), got {value}")
    return int(value)


def _check_n(n, limit: int) -> int:
    if n is None:
        return limit
    return _check_count("n", n, limit, " number of steps", "batches.n, the batches available")


def stability_map(batches, lrs, batch_sizes, *, w0, n=None) -> StabilityMap:
    """Run the lesson's training loop for every (lr, B) of a grid, for the sum and the mean loss.

    Cell (B, lr) is the run `training_history(w0, lr, x[:n, :B], y[:n, :B], loss=...)`: n sequential
    gradient steps, one per batch, on the first B examples of each. The grid is one compiled
    function, `jax.vmap` over B of `jax.vmap` over lr of a `lax.scan` over the padded rows (rows past
    n leave the carry unchanged), that compiles once per padded shape, grid size (L, K) and dtype:
    changing n, w0, the learning rates, the batch sizes or the data reuses it.

    A batch of this linear model enters the gradient only through Sxx_k = sum(x_k**2) and
    Sxy_k = sum(x_k*y_k), so the scan's xs are the per-row prefix sums of x*x and x*y over the
    columns (one cumsum per call, in float32 or wider) taken at column B-1: each cell costs O(N)
    rather than O(N*B). The step is still the training step: the gradient is `jax.grad` of the batch
    loss written as w**2*Sxx - 2*w*Sxy (+ const), divided by B for the mean loss.

    Args:
      batches: the `PaddedBatches` that `HistoryEngine.pad` returns. The weight is carried in its
        dtype (float32 for the explorer's data); sums and steps are computed in float32 or wider.
      lrs: (L,) learning rates, finite and positive (a geometric grid reads best).
      batch_sizes: (K,) integers in 1..batches.b.
      w0: the initial weight of every run, a finite real scalar.
      n: the number of steps, 1..batches.n; default batches.n.

    Returns:
      A `StabilityMap`; its per-loss arrays are (K, L): one row per batch size, one column per lr.
      Divergence is data: nothing raises or warns. `critical_lr` comes from float64 NumPy
      (`core.moments` and `core.critical_lr` per B), as does w*_B in `log10_error`.

    Raises:
      TypeError or ValueError naming the argument: `batches` not a PaddedBatches; `lrs` not 1-D,
      empty, non-finite or not positive; `batch_sizes` not 1-D integers in 1..batches.b; `w0` not a
      finite real scalar (or overflowing the carry dtype); `n` not an integer in 1..batches.n. Every
      argument must be concrete (this returns NumPy arrays, so it does not run under `jax.jit`).
    """
    n, dtype, wide, lrs = _map_start(batches, n, lrs, w0)
    batch_sizes = _check_batch_sizes(batch_sizes, batches.b)

    finals, diverged = _map_kernel(
        batches.x,
        batches.y,
        np.asarray(lrs, dtype=wide),
        np.asarray(batch_sizes, dtype=np.int32),
        np.asarray(w0, dtype=dtype),
        np.int32(n),
    )

    # The analytic side, in float64 NumPy, while the kernel runs.
    x, y = np.asarray(batches.x)[:n], np.asarray(batches.y)[:n]
    critical = {loss: np.empty(batch_sizes.size) for loss in LOSSES}
    w_star = np.empty(batch_sizes.size)
    for k, b in enumerate(batch_sizes):
        data = moments(x[:, :b], y[:, :b])
        w_star[k] = optimum(data)
        for loss, value in critical_lrs(data).items():  # one search for both: most of this time
            critical[loss][k] = value

    log10_error, flags = _outcomes(finals, diverged, w_star[:, None])
    return StabilityMap(lrs, batch_sizes, log10_error, flags, critical)


def _outcomes(finals, diverged, w_star) -> tuple[dict, dict]:
    """The kernel's (2, rows, L) final weights and flags as {loss: log10 |w_N - w*|} (NaN where
    the run diverged) and {loss: diverged}; `w_star` broadcasts against a loss's (rows, L)."""
    finals = np.asarray(finals).astype(np.float64)
    diverged = np.asarray(diverged)
    log10_error, flags = {}, {}
    for index, loss in enumerate(LOSSES):
        with np.errstate(divide="ignore", invalid="ignore"):
            error = np.log10(np.abs(finals[index] - w_star))
        flags[loss] = diverged[index].copy()
        log10_error[loss] = np.where(flags[loss], np.nan, error)
    return log10_error, flags


class MomentumMap(NamedTuple):
    """The outcome of every (lr, momentum) cell of a grid at one batch size, for both losses: heavy-ball
    momentum as Optax's optax.sgd(lr, momentum=m). NumPy arrays throughout.

    lrs: (L,) float64, the grid's learning rates.
    momenta: (M,) float64, the grid's momenta, each in [0, 1).
    batch_size: the B of every cell, an int.
    log10_error: {"sum", "mean"} -> (M, L) float64, log10 |w_N - w*_B| after the n steps, as in
        `StabilityMap` (NaN where the run diverged or w*_B is undefined).
    diverged: {"sum", "mean"} -> (M, L) bool, the same divergence test as `StabilityMap`'s.
    critical_lr: {"sum", "mean"} -> (M,) float64, `core.critical_lr(x[:n, :B], loss=..., momentum=m)`
        for each momentum, to a relative 1e-6 (exactly at momentum 0 and for identical batches).
    """

    lrs: np.ndarray
    momenta: np.ndarray
    batch_size: int
    log10_error: dict
    diverged: dict
    critical_lr: dict


MAP_RTOL = 1e-6
"""The relative precision of `MomentumMap.critical_lr` (a drawn line; critical_lr's own is float64's)."""


def _check_momenta(momenta) -> np.ndarray:
    array = _real_vector("momenta", momenta, "")
    bad = ~(np.isfinite(array) & (array >= 0) & (array < 1))
    if bad.any():
        raise ValueError(f"momenta must lie in [0, 1), got {float(array[bad][0]):g}")
    return array


def momentum_map(batches, lrs, momenta, *, batch_size, w0, n=None) -> MomentumMap:
    """Run heavy-ball momentum for every (lr, momentum) of a grid at one batch size, both losses.

    Cell (m, lr) is `optimizer_history(w0, lr, x[:n, :B], y[:n, :B], optimizer="momentum",
    momentum=m, loss=...)`'s final weight, computed as `stability_map` computes its cells: one
    compiled function (`jax.vmap` over momentum of `jax.vmap` over lr of a `lax.scan` over the rows'
    two sums), that compiles once per padded shape, grid size (L, M) and dtype; changing n, w0, B,
    the learning rates, the momenta or the data reuses it. Distill's phase diagram of momentum, on the
    lesson's batches.

    Args:
      batches: the `PaddedBatches` that `HistoryEngine.pad` returns.
      lrs: (L,) learning rates, finite and positive.
      momenta: (M,) momenta in [0, 1).
      batch_size: B, an integer in 1..batches.b.
      w0: the initial weight of every run, a finite real scalar.
      n: the number of steps, 1..batches.n; default batches.n.

    Returns:
      A `MomentumMap`; its per-loss arrays are (M, L): one row per momentum, one column per lr. The
      critical lr of each row is float64 NumPy (`core.critical_lr` with that momentum, searched for
      all rows at once, to MAP_RTOL).

    Raises:
      TypeError or ValueError naming the argument, as `stability_map`; `momenta` not a non-empty
      1-D array in [0, 1); `batch_size` not an integer in 1..batches.b.
    """
    n, dtype, wide, lrs = _map_start(batches, n, lrs, w0)
    momenta = _check_momenta(momenta)
    batch_size = _check_count("batch_size", batch_size, batches.b, "", "batches.b, the examples per batch")

    finals, diverged = _momentum_kernel(
        batches.x,
        batches.y,
        np.asarray(lrs, dtype=wide),
        np.asarray(momenta, dtype=wide),
        np.int32(batch_size),
        np.asarray(w0, dtype=dtype),
        np.int32(n),
    )

    x, y = np.asarray(batches.x)[:n, :batch_size], np.asarray(batches.y)[:n, :batch_size]
    data = moments(x, y)
    w_star = optimum(data)
    plain = critical_lrs(data)  # momentum 0, exactly
    sum_rate = critical_with_momenta(data.sxx, momenta, rtol=MAP_RTOL)
    still = momenta == 0
    critical = {
        "sum": np.where(still, plain["sum"], sum_rate),
        "mean": np.where(still, plain["mean"], batch_size * sum_rate),
    }
    log10_error, flags = _outcomes(finals, diverged, w_star)
    return MomentumMap(lrs, momenta, batch_size, log10_error, flags, critical)


# The maps of the model with an intercept, y = w*x + b, the params {"w", "b"} as `core.pytree`'s
# carry: a batch enters a step only through its sums Sxx, Sx, Sxy, Sy and its size, so each cell
# reads per-row prefix sums over the columns and costs O(N), as above; the argument checks and the
# map types are the lesson's maps'.


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
    check_params(params0, "params0", models=(PARAMS,))
    for key in PARAMS:
        _reject_traced(f'params0["{key}"]', params0[key])
        check_fits(f'params0["{key}"]', params0[key], dtype)
    return np.array([float(np.asarray(params0[key], np.float64)) for key in PARAMS], dtype=dtype)


def _pytree_optimum(x, y) -> tuple:
    """(Moments, (w*, b*) float64 with NaN where undefined, and the divergence reference's (w*, b*):
    NaN also where `pytree_history` calls it undefined, var(x) within its ALIKE of mean(x**2))."""
    data = moments(x, y)
    star = np.array(optimum(data, intercept=True))
    spread = centred(data, "optimum")
    alike = not spread.var_x > ALIKE * (spread.var_x + spread.mean_x**2)
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
    sum_rate = np.array([critical_with_intercept(moments_b, 0.0, MAP_RTOL) for moments_b in data])
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
    sum_rate = np.array([critical_with_intercept(data, float(m), MAP_RTOL) for m in momenta])
    critical = {"sum": sum_rate, "mean": batch_size * sum_rate}
    log10_error, flags = _pytree_outcomes(finals, diverged, star)
    return MomentumMap(lrs, momenta, batch_size, log10_error, flags, critical)
