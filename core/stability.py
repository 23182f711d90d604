"""The stability maps: the training loop's run for every cell of a grid of learning rates and batch
sizes (`stability_map`), or of learning rates and momenta at one batch size (`momentum_map`), for
either model (`w0` for the lesson's, or `params0`; `pytree_stability_map` and
`pytree_momentum_map` are the same maps held to the w, b model).

Each cell (lr, B) is the N-step run of the engine on the first B columns of each batch,
x[:n, :B] and y[:n, :B], from one start, for the sum loss and for the mean loss. The whole grid is
one compiled function: `jax.vmap` (over B) of `jax.vmap` (over lr) of the `lax.scan` training loop.
Its shape depends only on the model, the padded arrays and the grid's size (L, K), so changing n,
the start, the learning rates, the batch sizes or the data never recompiles.

A batch of the linear model over features phi enters the gradient only through the sums of its
feature products, H_k = sum(phi phi^T) and g_k = sum(phi y): the batch loss is p^T H_k p -
2 p^T g_k + sum(y_k**2) (for the lesson's phi = (x): w**2*Sxx_k - 2*w*Sxy_k + ...). So the scan
reads, instead of the batch itself, the per-row prefix sums of those products over the columns (one
cumsum each per call, in float32 or wider), taken at column B-1: a cell costs O(N), not O(N*B). The
sums come out of a different addition order than the engine's pairwise trees, so a cell agrees with
the engine to float32 rounding, not bit for bit.

The scan runs over every padded row (rows past n are masked, not skipped), so the compiled grid costs
the same for every n. Measured on a 2-core CPU, 64 lrs x 32 batch sizes on the explorer's (1000, 512)
arrays: about 5 ms for the compiled grid, and about 30 ms at n = 200 (150 ms at n = 1000) for the
float64 `moments` and `critical_lr` of the 32 batch sizes, which is most of a call.
"""

from __future__ import annotations

import functools
import numbers
import operator
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import LOSSES, MODELS, PARAMS, check_fits, check_params, check_scalar, is_traced
from core.engine import ALIKE, DIVERGENCE_RATIO, norm
from core.model import FEATURES
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


# A batch of the linear model enters a step only through the sums of its feature products:
# H_k = sum(phi phi^T) over the batch's examples (D x D, symmetric) and g_k = sum(phi y) (D). With
# phi = (x): Sxx and Sxy; with phi = (x, 1): Sxx, Sx and B, then Sxy and Sy.


def _pairs(d: int) -> list:
    """H's upper triangle, row by row: the (i, j) whose sums a step reads."""
    return [(i, j) for i in range(d) for j in range(i, d)]


def _batch_loss(params, h, g, scale):
    """One batch's loss through its sums, (p^T H p - 2 p^T g) / scale, the constant sum(y**2)
    dropped: the lesson's sum((w*x - y)**2) = w**2*Sxx - 2*w*Sxy (+ const) for phi = (x),
    w**2*Sxx + 2*w*b*Sx + b**2*B - 2*w*Sxy - 2*b*Sy for phi = (x, 1); scale 1 for the sum loss, B
    for the mean. params (D,); h H's upper triangle (`_pairs`), g (D,), each a 0-d array."""
    p = [params[k] for k in range(params.shape[0])]  # each leaf read once: one gradient per leaf
    quadratic = [
        p[i] * p[j] * h_ij if i == j else 2 * p[i] * p[j] * h_ij
        for (i, j), h_ij in zip(_pairs(len(p)), h, strict=True)
    ]
    loss = functools.reduce(operator.add, quadratic)
    for i, g_i in enumerate(g):
        loss = loss - 2 * p[i] * g_i
    return loss / scale


_batch_grad = jax.grad(_batch_loss)


def _run(params0, lr, momentum, scale, sums, n, reference, limit):
    """One cell: the scan of the training step over the rows' sums (`_feature_sums`: H's upper
    triangle and g, each (rows,)), with heavy-ball momentum as Optax's (trace = gradient +
    momentum * trace; params -= lr * trace; momentum 0 is the plain step, the trace then being the
    gradient itself). params0 (D,) in the data's dtype; each step is computed in `_wide` of it.

    Rows past n leave the carry unchanged. Diverged is the engine's rule (`core.engine`): the
    Euclidean distance of the params from `reference` (D,) non-finite or past `limit`, at any step
    before n. Returns the final params (D,) and that flag.
    """
    dtype = params0.dtype
    h, g = sums
    wide = g[0].dtype

    def step(carry, row):
        params, trace, diverged = carry
        i, h_k, g_k = row
        # Not the engine's step on purpose: the same step through the batch's sums, O(1) whatever B.
        grad = _batch_grad(params.astype(wide), h_k, g_k, scale)
        new_trace = grad + momentum * trace
        new_params = (params.astype(wide) - lr * new_trace).astype(dtype)
        live = i < n
        new_params = jnp.where(live, new_params, params)
        new_trace = jnp.where(live, new_trace, trace)
        offset = new_params.astype(wide) - reference
        distance = norm([offset[k] for k in range(offset.shape[0])])  # non-finite params: non-finite
        bad = ~jnp.isfinite(distance) | (distance > limit)
        return (new_params, new_trace, diverged | (live & bad)), None

    rows = lax.iota(jnp.int32, g[0].shape[0])
    start = (params0, jnp.zeros(params0.shape, wide), jnp.asarray(False))
    (params, _, diverged), _ = lax.scan(step, start, (rows, h, g))
    return params, diverged


# Over lr (the map's columns), then over B (its rows: each B has its own sums, scale, optimum and
# limit), then over the two losses (only the scale differs).
_run_lrs = jax.vmap(_run, in_axes=(None, 0, None, None, None, None, None, None))
_run_grid = jax.vmap(_run_lrs, in_axes=(None, None, None, 0, 1, None, 0, 0))
_run_losses = jax.vmap(_run_grid, in_axes=(None, None, None, 0, None, None, None, None))
# The lr x momentum map: over lr, then over momentum (its rows, at one B), then over the two losses.
_momentum_grid = jax.vmap(_run_lrs, in_axes=(None, None, 0, None, None, None, None, None))
_momentum_losses = jax.vmap(_momentum_grid, in_axes=(None, None, None, 0, None, None, None, None))


def _feature_sums(x, y, columns, names):
    """The rows' prefix sums over the columns, taken at `columns` ((K,) or a scalar: each sum
    (rows, K) or (rows,)), of the model's feature products, in x's dtype: (h, g), h H's upper
    triangle (`_pairs`), g sum(phi_i y) per leaf. A constant feature's products need no pass:
    1 * 1 sums to B, 1 * a to a's own sum."""
    phi = [x if FEATURES[name] == "x" else None for name in names]
    count = jnp.broadcast_to((columns + 1).astype(x.dtype), (x.shape[0], *jnp.shape(columns)))

    def total(a, b):
        if a is None and b is None:
            return count
        product = b if a is None else a if b is None else a * b
        return jnp.take(jnp.cumsum(product, axis=1), columns, axis=1)

    h = tuple(total(phi[i], phi[j]) for i, j in _pairs(len(names)))
    return h, tuple(total(feature, y) for feature in phi)


def _cells(x, y, columns, params0, star, names):
    """What every cell at `columns` reads: the feature sums, where its divergence distance is taken
    from (`star` (K, D) or (D,), NaN where undefined: then the start) and its limit, exactly as
    `core.engine.divergence_step`, and the two losses' scales ((2, K) or (2,): sum 1, mean B)."""
    wide = x.dtype
    start = jnp.broadcast_to(params0.astype(wide), star.shape)
    defined = jnp.broadcast_to(jnp.all(jnp.isfinite(star), axis=-1, keepdims=True), star.shape)
    reference = jnp.where(defined, star, start)
    away = start - reference
    limit = DIVERGENCE_RATIO * jnp.maximum(1.0, norm([away[..., k] for k in range(len(names))]))
    count = (columns + 1).astype(wide)
    scales = jnp.stack([jnp.ones_like(count), count])
    return _feature_sums(x, y, columns, names), reference, limit, scales


@functools.partial(jax.jit, static_argnames="names")
def _map_kernel(x, y, lrs, batch_sizes, params0, n, star, *, names):
    """Final params (2, K, L, D) and divergence flags (2, K, L), loss "sum" first, then "mean".

    x, y: the padded (rows, columns) arrays; lrs (L,) in the wide dtype; batch_sizes (K,) int32;
    params0 (D,) in the data dtype, the leaves `names`; n a traced int32; star (K, D) the optimum
    per B in the wide dtype (NaN: undefined). Columns past B and rows past n are ignored.
    """
    wide = lrs.dtype
    sums, reference, limit, scales = _cells(
        x.astype(wide), y.astype(wide), batch_sizes - 1, params0, star, names
    )
    return _run_losses(params0, lrs, jnp.zeros((), wide), scales, sums, n, reference, limit)


@functools.partial(jax.jit, static_argnames="names")
def _momentum_kernel(x, y, lrs, momenta, batch_size, params0, n, star, *, names):
    """Final params (2, M, L, D) and divergence flags (2, M, L) of the lr x momentum map at one
    batch size (a traced int32); momenta (M,) in the wide dtype; star (D,); the rest as above."""
    wide = lrs.dtype
    sums, reference, limit, scales = _cells(
        x.astype(wide), y.astype(wide), batch_size - 1, params0, star, names
    )
    return _momentum_losses(params0, lrs, momenta, scales, sums, n, reference, limit)


def _start_of(w0, params0, dtype, models=MODELS) -> tuple:
    """The start every cell runs from, checked (errors name w0, or params0 and the key): exactly
    one of w0 (the lesson's model) and params0 (a dict of one of `models`' leaves). Returns
    (leaves, the start (D,) in `dtype`)."""
    if (w0 is None) == (params0 is None):
        raise TypeError(
            "give the start as exactly one of w0 (the lesson's model) and params0 (a params dict)"
        )
    if params0 is None:
        check_scalar("w0", w0)
        _reject_traced("w0", w0)
        check_fits("w0", w0, dtype)
        return ("w",), np.asarray([w0], dtype=dtype)
    names = check_params(params0, "params0", models=models)
    for key in names:
        _reject_traced(f'params0["{key}"]', params0[key])
        check_fits(f'params0["{key}"]', params0[key], dtype)
    return names, np.array([float(np.asarray(params0[key], np.float64)) for key in names], dtype=dtype)


def _grid_start(batches, n, lrs) -> tuple:
    """What every map checks first: (n as an int, the batches' dtype, the wide dtype the maps sum
    in, lrs checked in it). Raises TypeError or ValueError naming the argument."""
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


def stability_map(batches, lrs, batch_sizes, *, w0=None, params0=None, n=None) -> StabilityMap:
    """Run the training loop for every (lr, B) of a grid, for the sum and the mean loss.

    Cell (B, lr) is the run `training_history(w0, lr, x[:n, :B], y[:n, :B], loss=...)` (or, from
    params0, `pytree_history(params0, lr, ...)`): n sequential gradient steps, one per batch, on
    the first B examples of each. The grid is one compiled function, `jax.vmap` over B of
    `jax.vmap` over lr of a `lax.scan` over the padded rows (rows past n leave the carry unchanged),
    that compiles once per model, padded shape, grid size (L, K) and dtype: changing n, the start,
    the learning rates, the batch sizes or the data reuses it.

    A batch of the linear model enters the gradient only through the sums of its feature
    products, H_k = sum(phi phi^T) and g_k = sum(phi y): Sxx_k = sum(x_k**2) and Sxy_k =
    sum(x_k*y_k) for the lesson's model, and Sx_k, B and Sy_k too with an intercept. So the scan's
    xs are the per-row prefix sums of those products over the columns (one cumsum each per call, in
    float32 or wider) taken at column B-1: each cell costs O(N) rather than O(N*B). The step is
    still the training step: the gradient is `jax.grad` of the batch loss written as
    p^T H_k p - 2 p^T g_k (+ const), divided by B for the mean loss. The sums come out of another
    addition order than the engine's pairwise trees, so a cell agrees with the engine to float32
    rounding, not bit for bit.

    Args:
      batches: the `PaddedBatches` that `HistoryEngine.pad` returns. The params are carried in its
        dtype (float32 for the explorer's data); sums and steps are computed in float32 or wider.
      lrs: (L,) learning rates, finite and positive (a geometric grid reads best).
      batch_sizes: (K,) integers in 1..batches.b.
      w0: the initial weight of every run of the lesson's model, a finite real scalar; or
      params0: {"w": w0} or {"w": w0, "b": b0}, the start of every run, finite real scalars.
      n: the number of steps, 1..batches.n; default batches.n.

    Returns:
      A `StabilityMap`; its per-loss arrays are (K, L): one row per batch size, one column per lr.
      log10_error is log10 of the Euclidean distance of the final params from the least-squares
      optimum of x[:n, :B], y[:n, :B] (`core.optimum`, float64; NaN where the run diverged or the
      optimum is undefined: every x zero, or with an intercept every x alike); diverged is the
      engine's test; critical_lr is `core.critical_lrs(x[:n, :B])` per B (with an intercept, to a
      relative MAP_RTOL, exactly for identical batches). Divergence is data: nothing raises or warns.

    Raises:
      TypeError or ValueError naming the argument: `batches` not a PaddedBatches; `lrs` not 1-D,
      empty, non-finite or not positive; `batch_sizes` not 1-D integers in 1..batches.b; not exactly
      one of `w0` and `params0`; `w0` not a finite real scalar (or overflowing the carry dtype);
      `params0` not a dict of a model's leaves holding such scalars; `n` not an integer in
      1..batches.n. Every argument must be concrete (this returns NumPy arrays, so it does not run
      under `jax.jit`).
    """
    n, dtype, wide, lrs = _grid_start(batches, n, lrs)
    batch_sizes = _check_batch_sizes(batch_sizes, batches.b)
    return _stability_map(batches, lrs, batch_sizes, *_start_of(w0, params0, dtype), n, wide)


def _stability_map(batches, lrs, batch_sizes, names, params0, n, wide) -> StabilityMap:
    """`stability_map` of checked arguments."""
    x, y = np.asarray(batches.x)[:n], np.asarray(batches.y)[:n]
    data, star, reference = zip(*(_optimum(x[:, :b], y[:, :b], names) for b in batch_sizes), strict=True)
    finals, diverged = _map_kernel(
        batches.x,
        batches.y,
        np.asarray(lrs, dtype=wide),
        np.asarray(batch_sizes, dtype=np.int32),
        params0,
        np.int32(n),
        np.asarray(reference, dtype=wide),
        names=names,
    )
    # The critical lrs in float64 NumPy while the kernel runs: most of a call's time.
    still = np.zeros(1)
    rates = [_critical(data_b, names, still) for data_b in data]
    critical = {loss: np.array([rate[loss][0] for rate in rates]) for loss in LOSSES}
    log10_error, flags = _outcomes(finals, diverged, np.asarray(star)[:, None, :])
    return StabilityMap(lrs, batch_sizes, log10_error, flags, critical)


def _optimum(x, y, names) -> tuple:
    """(Moments, the least-squares params (D,) float64, NaN where undefined, and the divergence
    reference's: NaN also where the engine calls it undefined, with an intercept var(x) within
    ALIKE of mean(x**2))."""
    data = moments(x, y)
    if "b" not in names:
        star = np.array([optimum(data)])
        return data, star, star
    star = np.array(optimum(data, intercept=True))
    spread = centred(data, "optimum")
    alike = not spread.var_x > ALIKE * (spread.var_x + spread.mean_x**2)
    return data, star, np.full(2, np.nan) if alike else star


def _critical(data, names, momenta) -> dict:
    """{"sum", "mean"}: the critical lr (M,) float64 at each of `momenta` for the model of
    `names` on one batch size's `Moments`, to the maps' precision (MAP_RTOL; exactly at momentum
    0 for the lesson's model and for identical batches). For the lesson's model every momentum's
    search runs in the same passes over the batches; with an intercept, one search each."""
    b = data.batch_size
    if "b" in names:
        rate = np.array([critical_with_intercept(data, float(m), MAP_RTOL) for m in momenta])
        return {"sum": rate, "mean": b * rate}
    plain = critical_lrs(data)  # momentum 0, exactly
    still = momenta == 0
    rate = critical_with_momenta(data.sxx, momenta, rtol=MAP_RTOL) if not still.all() else momenta
    return {"sum": np.where(still, plain["sum"], rate), "mean": np.where(still, plain["mean"], b * rate)}


def _outcomes(finals, diverged, star) -> tuple[dict, dict]:
    """The kernel's final params (2, rows, L, D) and flags (2, rows, L) as {loss: log10 of the
    Euclidean distance from `star`} (NaN where the run diverged) and {loss: diverged}; `star`
    broadcasts against a loss's (rows, L, D)."""
    finals = np.asarray(finals).astype(np.float64)
    diverged = np.asarray(diverged)
    log10_error, flags = {}, {}
    for index, loss in enumerate(LOSSES):
        offset = finals[index] - star
        components = [offset[..., k] for k in range(offset.shape[-1])]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            error = np.log10(functools.reduce(np.hypot, components[1:], np.abs(components[0])))
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


def momentum_map(batches, lrs, momenta, *, batch_size, w0=None, params0=None, n=None) -> MomentumMap:
    """Run heavy-ball momentum for every (lr, momentum) of a grid at one batch size, both losses.

    Cell (m, lr) is `optimizer_history(w0, lr, x[:n, :B], y[:n, :B], optimizer="momentum",
    momentum=m, loss=...)`'s final weight (or, from params0, `pytree_history`'s final params),
    computed as `stability_map` computes its cells: one compiled function (`jax.vmap` over momentum
    of `jax.vmap` over lr of a `lax.scan` over the rows' sums), that compiles once per model,
    padded shape, grid size (L, M) and dtype; changing n, the start, B, the learning rates, the
    momenta or the data reuses it. Distill's phase diagram of momentum, on the lesson's batches.

    Args:
      batches: the `PaddedBatches` that `HistoryEngine.pad` returns.
      lrs: (L,) learning rates, finite and positive.
      momenta: (M,) momenta in [0, 1).
      batch_size: B, an integer in 1..batches.b.
      w0 or params0: the start of every run, as for `stability_map`.
      n: the number of steps, 1..batches.n; default batches.n.

    Returns:
      A `MomentumMap`; its per-loss arrays are (M, L): one row per momentum, one column per lr,
      log10_error and diverged as `stability_map`'s. The critical lr of each row is float64 NumPy
      (`core.critical_lr` with that momentum, searched for all rows at once, to MAP_RTOL).

    Raises:
      TypeError or ValueError naming the argument, as `stability_map`; `momenta` not a non-empty
      1-D array in [0, 1); `batch_size` not an integer in 1..batches.b.
    """
    n, dtype, wide, lrs = _grid_start(batches, n, lrs)
    momenta = _check_momenta(momenta)
    batch_size = _check_count("batch_size", batch_size, batches.b, "", "batches.b, the examples per batch")
    names, params0 = _start_of(w0, params0, dtype)
    return _momentum_map(batches, lrs, momenta, batch_size, names, params0, n, wide)


def _momentum_map(batches, lrs, momenta, batch_size, names, params0, n, wide) -> MomentumMap:
    """`momentum_map` of checked arguments."""
    x, y = np.asarray(batches.x)[:n, :batch_size], np.asarray(batches.y)[:n, :batch_size]
    data, star, reference = _optimum(x, y, names)
    finals, diverged = _momentum_kernel(
        batches.x,
        batches.y,
        np.asarray(lrs, dtype=wide),
        np.asarray(momenta, dtype=wide),
        np.int32(batch_size),
        params0,
        np.int32(n),
        np.asarray(reference, dtype=wide),
        names=names,
    )
    critical = _critical(data, names, momenta)
    log10_error, flags = _outcomes(finals, diverged, star)
    return MomentumMap(lrs, momenta, batch_size, log10_error, flags, critical)


def pytree_stability_map(batches, lrs, batch_sizes, *, params0, n=None) -> StabilityMap:
    """`stability_map` for the model y = w*x + b: params0 must be {"w": w0, "b": b0}. Every
    (lr, B) cell is the n-step plain-SGD run of `pytree_history(params0, lr, x[:n, :B],
    y[:n, :B], loss=...)`, for both losses; see `stability_map`."""
    n, dtype, wide, lrs = _grid_start(batches, n, lrs)
    batch_sizes = _check_batch_sizes(batch_sizes, batches.b)
    names, params0 = _start_of(None, params0, dtype, models=(PARAMS,))
    return _stability_map(batches, lrs, batch_sizes, names, params0, n, wide)


def pytree_momentum_map(batches, lrs, momenta, *, batch_size, params0, n=None) -> MomentumMap:
    """`momentum_map` for the model y = w*x + b: params0 must be {"w": w0, "b": b0}; see
    `momentum_map`."""
    n, dtype, wide, lrs = _grid_start(batches, n, lrs)
    momenta = _check_momenta(momenta)
    batch_size = _check_count("batch_size", batch_size, batches.b, "", "batches.b, the examples per batch")
    names, params0 = _start_of(None, params0, dtype, models=(PARAMS,))
    return _momentum_map(batches, lrs, momenta, batch_size, names, params0, n, wide)
