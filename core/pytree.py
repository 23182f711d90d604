"""The carry as a parameter pytree: the model y = w*x + b with params {"w": w, "b": b}.

The scan's carry is (params, opt_state); a step takes each batch's loss and gradient by
`jax.value_and_grad` over the dict and updates every leaf with `jax.tree.map` (Optax's update, as
in `core.optimizers`). The run is the engine's (`core.engine`), the same program as the lesson's w
with one more leaf: a run on a `HistoryEngine` corner gives the unpadded run's params bit for bit,
and one compilation per optimizer serves every N, B, loss, lr, params, momentum and schedule that
fit the padded arrays.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from core import engine
from core._checks import (
    carry_dtype,
    check_batches,
    check_fits,
    check_loss,
    check_momentum,
    check_params,
    check_scalar,
    check_schedule,
    data_dtype,
    reject_traced,
)
from core.engine import PytreeHistory
from core.optimizers import MOMENTUM, check_optimizer
from core.training import PaddedBatches, check_padded


def _start(function: str, params, lr, momentum, lr_schedule, x, y):
    """The checks both entry points share after their own: params and lr as the carry dtype's
    0-d arrays (params' own floating dtypes promoted, else the batches'), momentum a float."""
    keys = check_params(params)
    check_scalar("lr", lr)
    reject_traced(function, *params.values(), lr, momentum, lr_schedule)
    momentum = check_momentum(momentum)
    fallback = data_dtype(x, y)
    with jax.numpy_dtype_promotion("standard"):
        dtype = functools.reduce(jnp.promote_types, [carry_dtype(params[key], fallback) for key in keys])
    for key in keys:
        check_fits(f'params["{key}"]', params[key], dtype)
    check_fits("lr", lr, dtype)
    params = {key: np.asarray(params[key], dtype=dtype) for key in keys}
    return params, np.asarray(lr, dtype=dtype), momentum, dtype


def _schedule(lr_schedule, n: int, rows: int, dtype):
    """The checked schedule zero-padded to the arrays' rows, NumPy of the carry dtype (the compiled
    call takes it as it is); None for a constant lr."""
    if lr_schedule is None:
        return None
    lrs = np.zeros(rows)
    lrs[:n] = check_schedule(lr_schedule, n)
    return np.asarray(lrs, dtype)


def pytree_history(
    params, lr, x_batches, y_batches, *, loss="sum", optimizer="sgd", momentum=MOMENTUM, lr_schedule=None
) -> PytreeHistory:
    """Train y = w*x + b with params {"w": w0, "b": b0} as the scan's carry (or the lesson's y = w*x
    with params {"w": w0}), and keep every step.

    One step per batch: the batch loss sum((w*x + b - y)**2) (or its mean, divided by B), its
    gradients by `jax.value_and_grad` over the dict, Optax's update applied with `jax.tree.map`.

    Args:
      params: {"w": w0, "b": b0} or {"w": w0}, exactly those keys, each a finite real scalar. Their
        floating dtypes (promoted together) are the carry's; Python numbers take the data's dtype.
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
      for params that are not a dict of exactly "w" and "b" (or "w") holding finite real scalars.
    """
    check_loss(loss)
    check_optimizer(optimizer)
    reject_traced("pytree_history", x_batches, y_batches)
    x, y = check_batches(x_batches, y_batches)
    params, lr, momentum, dtype = _start("pytree_history", params, lr, momentum, lr_schedule, x, y)
    n, b = x.shape
    # The padded engine's program in its shape bucket: both losses run, one kept (as training_history).
    x, y = engine.bucketed(jnp.asarray(x, dtype), jnp.asarray(y, dtype))
    lrs = _schedule(lr_schedule, n, x.shape[0], dtype)
    momentum = np.asarray(momentum, dtype)
    runs = engine.start(
        params, lr, x, y, np.int32(n), np.int32(b), optimizer=optimizer, momentum=momentum, lrs=lrs
    )
    return runs()[loss]


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
      and model serves every n, b, params, lr, momentum and schedule that fit the padded arrays.
      Both losses and the optimum come from one compiled call whose work follows (n, b), not the
      arrays' shape.
    """
    return pytree_start(
        params, lr, batches, optimizer=optimizer, momentum=momentum, lr_schedule=lr_schedule
    )()


def pytree_start(params, lr, batches: PaddedBatches, *, optimizer="sgd", momentum=MOMENTUM, lr_schedule=None):
    """Start `pytree_histories(...)` and return a function that waits for it and returns it: the
    run is dispatched asynchronously (this returns in about 0.1 ms), so host work done before
    calling the result runs while the scan does. Arguments are checked here."""
    check_optimizer(optimizer)
    check_padded(batches)
    params, lr, momentum, dtype = _start(
        "pytree_histories", params, lr, momentum, lr_schedule, batches.x, batches.y
    )
    x, y = (a if a.dtype == dtype else a.astype(dtype) for a in (batches.x, batches.y))
    n, b = np.int32(batches.n), np.int32(batches.b)
    lrs = _schedule(lr_schedule, batches.n, x.shape[0], dtype)
    momentum = np.asarray(momentum, dtype)
    return engine.start(params, lr, x, y, n, b, optimizer=optimizer, momentum=momentum, lrs=lrs)


__all__ = ["PytreeHistory", "pytree_histories", "pytree_history", "pytree_start"]
