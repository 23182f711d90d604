"""The carry as a parameter pytree: the model y = w*x + b with params {"w": w, "b": b}.

The scan's carry is (params, opt_state); a step takes each batch's loss and gradient by
`jax.value_and_grad` over the dict and updates every leaf with `jax.tree.map`. The update itself
is Optax's, as in `core.optimizers` (optax.sgd's is -lr * g, so plain SGD is
`jax.tree.map(lambda p, g: p - lr * g, params, grads)`). The arithmetic is the engine's, made
padding-proof the same way (`core.training._rounded`), so a run on a `HistoryEngine` corner gives
the unpadded run's params bit for bit, and one compilation per optimizer serves every N, B, loss,
lr, params, momentum and schedule that fit the padded arrays.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import (
    PARAMS,
    carry_dtype,
    check_batches,
    check_fits,
    check_loss,
    check_momentum,
    check_params,
    check_scalar,
    data_dtype,
    reject_traced,
)
from core.optimizers import MOMENTUM, _check_schedule, _optimizer_scan, check_optimizer
from core.training import (
    PaddedBatches,
    _batch_size,
    _divergence_step,
    _pairwise_sum,
    _rounded,
    _wide,
    check_padded,
)


class PytreeHistory(NamedTuple):
    """Per-step record of one run of N steps of y = w*x + b, NumPy arrays in the carry dtype.

    params: {"w": (N+1,), "b": (N+1,)}; row 0 is the start, row k+1 the params after step k.
    losses: (N,) the batch loss of step k at the params that step used.
    grads: {"w": (N,), "b": (N,)}, the gradients the optimizer was handed at step k.
    diverged_at: the first step whose params are non-finite, or whose Euclidean distance in (w, b)
        from the least-squares optimum (w*, b*) exceeds DIVERGENCE_RATIO * max(1, that distance at
        the start); None if no step. When (w*, b*) is undefined (every x alike) the distance is
        taken from the start.
    states: the optimizer's state after each step, Optax's pytree, every leaf with leading axis N
        (for "momentum" and "nesterov" the trace is a dict like params; for "adam" mu and nu are).
    """

    params: dict
    losses: np.ndarray
    grads: dict
    diverged_at: int | None
    states: Any


def _example_loss(params, x, y, keep):
    """(w*x + b - y)**2 for one example; 0 where keep is False (see `_rounded` for the selects)."""
    error = _rounded(params["w"] * x, keep) + params["b"] - y
    return _rounded(error * error, keep)


# Per-example loss and gradients: params shared (in_axes None), each example mapped.
_example_value_and_grads = jax.vmap(jax.value_and_grad(_example_loss), in_axes=(None, 0, 0, 0))


def _batch_loss_and_grads(params, x, y, b):
    """Sum loss of the first b examples of one batch and its gradients {"w": 2*sum(e*x), "b":
    2*sum(e)}, e = w*x + b - y: pairwise sums over a masked batch, so padding drops out exactly."""
    valid = lax.iota(jnp.int32, x.shape[-1]) < b
    losses, grads = _example_value_and_grads(params, x, y, valid)
    return _pairwise_sum(losses), jax.tree.map(lambda g: _pairwise_sum(_rounded(g, valid)), grads)


# var(x) below this fraction of mean(x**2) counts as zero: every x alike within float32 rounding.
_ALIKE = 1e-5


@jax.jit
def _least_squares(x_batches, y_batches, n, b):
    """(w*, b*) of the first n rows and b columns, shape (2,), in at least float32; NaN when every
    x is alike. Centred in two passes: with a large mean(x), sum(x*x) - sum(x)**2/M would lose
    most of var(x) to cancellation."""
    wide = _wide(x_batches.dtype)
    rows, columns = (lax.iota(jnp.int32, size) for size in x_batches.shape)
    valid = (rows < n)[:, None] & (columns < b)[None, :]
    x, y = x_batches.astype(wide), y_batches.astype(wide)

    def total(values):
        return _pairwise_sum(_pairwise_sum(_rounded(values, valid)))

    count = (n * b).astype(wide)
    mean_x, mean_y = total(x) / count, total(y) / count
    dx, dy = x - mean_x, y - mean_y
    var, cov = total(dx * dx), total(dx * dy)
    w_star = jnp.where(var > _ALIKE * total(x * x), cov / var, jnp.nan)
    return jnp.stack([w_star, mean_y - w_star * mean_x])


def _divergence(params0, after, star, n):
    """diverged_at's step (-1 for none): the 1-D rule of `_divergence_step` on the Euclidean
    distance from (w*, b*), or from the start where (w*, b*) is undefined."""
    wide = star.dtype
    start = jnp.stack([params0[key] for key in PARAMS]).astype(wide)
    reference = jnp.where(jnp.all(jnp.isfinite(star)), star, start)
    # hypot: no overflow before the distance itself does; non-finite params give a non-finite one.
    distance = jnp.hypot(*(after[key].astype(wide) - reference[i] for i, key in enumerate(PARAMS)))
    return _divergence_step(jnp.hypot(*(start - reference)), distance, jnp.zeros((), wide), n)


@functools.partial(jax.jit, static_argnames="optimizer")
def _pytree_kernel(
    params0, lr, lrs, scheduled, momentum, x_batches, y_batches, mean, n, b, star, *, optimizer
):
    """`core.optimizers._optimizer_kernel` for the params dict: the scan with (params, opt_state)
    as its carry on the first n rows and b columns, everything traced but `optimizer`."""
    after, losses, grads, states = _optimizer_scan(
        _batch_loss_and_grads,
        params0,
        lr,
        lrs,
        scheduled,
        momentum,
        x_batches,
        y_batches,
        mean,
        n,
        b,
        optimizer,
    )
    params = jax.tree.map(lambda p0, p: jnp.concatenate([p0[None], p]), params0, after)
    return params, losses, grads, states, _divergence(params0, after, star, n)


def _history(outputs, n: int) -> PytreeHistory:
    """The kernel's outputs as a PytreeHistory of NumPy arrays, cut to the first n steps."""
    params, losses, grads, states, diverged = outputs
    k = int(diverged)
    return PytreeHistory(
        {key: np.asarray(params[key])[: n + 1].copy() for key in PARAMS},
        np.asarray(losses)[:n].copy(),
        {key: np.asarray(grads[key])[:n].copy() for key in PARAMS},
        None if k < 0 else k,
        jax.tree.map(lambda leaf: np.asarray(leaf)[:n].copy(), states),
    )


def _start(function: str, params, lr, momentum, lr_schedule, x, y):
    """The checks both entry points share after their own: params and lr as the carry dtype's
    0-d arrays (params' own floating dtypes promoted, else the batches'), momentum a float."""
    check_params(params)
    check_scalar("lr", lr)
    reject_traced(function, *params.values(), lr, momentum, lr_schedule)
    momentum = check_momentum(momentum)
    fallback = data_dtype(x, y)
    with jax.numpy_dtype_promotion("standard"):
        dtype = jnp.promote_types(*(carry_dtype(params[key], fallback) for key in PARAMS))
    for key in PARAMS:
        check_fits(f'params["{key}"]', params[key], dtype)
    check_fits("lr", lr, dtype)
    params = {key: np.asarray(params[key], dtype=dtype) for key in PARAMS}
    return params, np.asarray(lr, dtype=dtype), momentum, dtype


def _schedule(lr_schedule, n: int, rows: int, dtype):
    """(lrs (rows,), scheduled): the checked schedule zero-padded to the arrays' rows."""
    lrs = np.zeros(rows)
    if lr_schedule is not None:
        lrs[:n] = _check_schedule(lr_schedule, n)
    return jnp.asarray(lrs, dtype), jnp.bool_(lr_schedule is not None)


def pytree_history(
    params, lr, x_batches, y_batches, *, loss="sum", optimizer="sgd", momentum=MOMENTUM, lr_schedule=None
) -> PytreeHistory:
    """Train y = w*x + b with params {"w": w0, "b": b0} as the scan's carry, and keep every step.

    One step per batch: the batch loss sum((w*x + b - y)**2) (or its mean, divided by B), its
    gradients by `jax.value_and_grad` over the dict, Optax's update applied with `jax.tree.map`.

    Args:
      params: {"w": w0, "b": b0}, exactly those keys, each a finite real scalar. Their floating
        dtypes (promoted together) are the carry's; Python numbers take the data's dtype.
      lr: the learning rate, a finite real scalar.
      x_batches, y_batches: real floating arrays of one shape (N, B), N >= 1, B >= 1.
      loss: "sum" or "mean".
      optimizer: one of OPTIMIZERS ("sgd", "momentum", "nesterov", "adam"), as Optax defines them.
      momentum: in [0, 1), the decay of "momentum" and "nesterov"; checked always.
      lr_schedule: None, or N real floating, finite learning rates: step k uses lr_schedule[k].

    Returns:
      A `PytreeHistory` of NumPy arrays in the carry dtype. Divergence is data, not an error.

    Raises:
      TypeError or ValueError naming the argument, for everything `optimizer_history` refuses, and
      for params that are not a dict of exactly "w" and "b" holding finite real scalars.
    """
    check_loss(loss)
    check_optimizer(optimizer)
    reject_traced("pytree_history", x_batches, y_batches)
    x, y = check_batches(x_batches, y_batches)
    params, lr, momentum, dtype = _start("pytree_history", params, lr, momentum, lr_schedule, x, y)
    x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
    n, columns = np.int32(x.shape[0]), np.int32(x.shape[1])
    lrs, scheduled = _schedule(lr_schedule, int(n), int(n), dtype)
    outputs = _pytree_kernel(
        params,
        lr,
        lrs,
        scheduled,
        jnp.asarray(momentum, dtype),
        x,
        y,
        jnp.bool_(loss == "mean"),
        n,
        _batch_size(x),
        _least_squares(x, y, n, columns),
        optimizer=optimizer,
    )
    return _history(outputs, int(n))


def pytree_histories(
    params, lr, batches: PaddedBatches, *, optimizer="sgd", momentum=MOMENTUM, lr_schedule=None
) -> dict:
    """`pytree_history` of both losses on padded batches (`HistoryEngine.pad` or `.corner`).

    Args:
      params, lr, optimizer, momentum: as for `pytree_history` (the carry dtype follows params,
        else the batches').
      batches: a `PaddedBatches`: the first batches.n steps of batches.b examples.
      lr_schedule: None, or batches.n learning rates.

    Returns:
      {"sum": PytreeHistory, "mean": PytreeHistory}, each what `pytree_history` gives on the
      unpadded (n, b) batches (params and diverged_at bit for bit). One compilation per optimizer
      serves every n, b, params, lr, momentum and schedule that fit the padded arrays; (w*, b*) is
      computed once for both losses.
    """
    check_optimizer(optimizer)
    check_padded(batches)
    params, lr, momentum, dtype = _start(
        "pytree_histories", params, lr, momentum, lr_schedule, batches.x, batches.y
    )
    x, y = (a if a.dtype == dtype else a.astype(dtype) for a in (batches.x, batches.y))
    n, b = np.int32(batches.n), np.int32(batches.b)
    lrs, scheduled = _schedule(lr_schedule, batches.n, x.shape[0], dtype)
    star = _least_squares(x, y, n, b)
    common = (params, lr, lrs, scheduled, jnp.asarray(momentum, dtype), x, y)
    outputs = {
        loss: _pytree_kernel(*common, jnp.bool_(loss == "mean"), n, b, star, optimizer=optimizer)
        for loss in ("sum", "mean")
    }
    return {loss: _history(out, batches.n) for loss, out in outputs.items()}


__all__ = ["PytreeHistory", "pytree_histories", "pytree_history"]
