"""The carry grows up: Optax's optimizer state and per-step learning rates inside the lesson's scan.

The scan's carry is the pair (w, opt_state). A constant learning rate is closed over by the step;
a schedule is an array of N learning rates scanned with the batches, step k reading lr_schedule[k].
Each step's loss and gradient are the engine's (`core.training`), so plain SGD with a constant lr
gives `training_history`'s numbers bit for bit; the update is Optax's, applied through the same
run-time select that keeps a compiler from fusing it into the addition.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import check_loss, check_momentum, check_scalar, reject_traced
from core.data import _positive_int
from core.training import (
    PaddedBatches,
    _batch_loss_and_grad,
    _batch_size,
    _divergence_step,
    _mean_of,
    _prepare,
    _rounded,
    _w_star,
    padded_start,
)


def _deferred(name: str):
    """The module `name`, whose code runs when one of its attributes is first read (the standard
    library's LazyLoader). Importing Optax costs a process about 5 MB that a dashboard kernel
    needs only once a visitor opens a panel that trains with it."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


optax = _deferred("optax")

OPTIMIZERS = ("sgd", "momentum", "nesterov", "adam")
MOMENTUM_OPTIMIZERS = ("momentum", "nesterov")
"""The OPTIMIZERS whose update reads `momentum` (heavy ball and Nesterov)."""
"""The optimizers by name, for `optimizer_history` and `core.train_linear`: see `make_optimizer`."""

MOMENTUM = 0.9
"""The default momentum of "momentum" and "nesterov"."""


def check_optimizer(optimizer) -> None:
    """A name in OPTIMIZERS."""
    if not isinstance(optimizer, str) or optimizer not in OPTIMIZERS:
        raise ValueError(
            f"optimizer must be one of {', '.join(map(repr, OPTIMIZERS))}, got {optimizer!r}"[:200]
        )


def make_optimizer(optimizer: str, lr, momentum=MOMENTUM) -> optax.GradientTransformation:
    """The Optax optimizer of that name at learning rate `lr` (traced is fine): "sgd" is
    optax.sgd(lr); "momentum" optax.sgd(lr, momentum=momentum) (heavy ball: trace t = g + m t, then
    p -= lr t); "nesterov" the same with nesterov=True (p -= lr (g + m t)); "adam" optax.adam(lr)
    with Optax's defaults b1=0.9, b2=0.999, eps=1e-8. `momentum` is used by the two that have one."""
    if optimizer == "sgd":
        return optax.sgd(lr)
    if optimizer in MOMENTUM_OPTIMIZERS:
        return optax.sgd(lr, momentum=momentum, nesterov=optimizer == "nesterov")
    check_optimizer(optimizer)
    return _with_standard_promotion(optax.adam(lr))


def _with_standard_promotion(opt: optax.GradientTransformation) -> optax.GradientTransformation:
    """`opt` whose update runs under JAX's standard dtype promotion: Adam's bias correction
    computes b1 ** count, a Python float to an int32 power, which jax_numpy_dtype_promotion="strict"
    (on in the tests) refuses. The result is cast back to each parameter's dtype by Optax."""

    def update(updates, state, params=None):
        with jax.numpy_dtype_promotion("standard"):
            return opt.update(updates, state, params)

    return optax.GradientTransformation(opt.init, update)


SCHEDULES = ("constant", "step", "exponential", "cosine", "warmup")
"""`lr_schedule`'s names, each a shape over N steps that starts from (or rises to) lr."""


class OptimizerHistory(NamedTuple):
    """Per-step record of one run of N steps with an optimizer.

    weights, losses, grads, diverged_at: as in `core.History` (weights (N+1,), losses and grads
    (N,), in the carry dtype; grads are the raw gradients the optimizer was handed).
    states: the optimizer's state after each step, Optax's own pytree with every leaf a NumPy
        array whose leading axis is N (optax.sgd's holds no arrays; heavy ball's trace; Adam's
        count, mu and nu).
    """

    weights: np.ndarray
    losses: np.ndarray
    grads: np.ndarray
    diverged_at: int | None
    states: Any


@functools.partial(jax.jit, static_argnames="optimizer")
def _optimizer_kernel(
    w0, lr, lrs, scheduled, momentum, x_batches, y_batches, mean, n, b, w_star, *, optimizer
):
    """The scan over (x_batches, y_batches, lrs) with (w, opt_state) as its carry, on the first n
    rows and b columns; every array in w0's dtype.

    Only `optimizer` is static: lr, the schedule, whether it is used (`scheduled`), momentum, the
    loss (`mean`), n and b are traced, so one compilation per optimizer serves every setting of
    one array shape. Rows past n leave the carry (w and state) as it is, and columns past b count
    as exact zeros (`_batch_loss_and_grad`), so padded batches give the unpadded numbers."""
    weights_after, losses, grads, states = _optimizer_scan(
        _batch_loss_and_grad, w0, lr, lrs, scheduled, momentum, x_batches, y_batches, mean, n, b, optimizer
    )
    diverged = _divergence_step(w0, weights_after, w_star, n)
    return jnp.concatenate([w0[None], weights_after]), losses, grads, states, diverged


def _optimizer_scan(
    loss_and_grad, params0, lr, lrs, scheduled, momentum, x_batches, y_batches, mean, n, b, optimizer
):
    """The optimizer's scan for any parameter pytree (a scalar w; the dict {"w", "b"}), traced
    inside a caller's jit. loss_and_grad(params, x, y, b) is one batch's sum loss and its
    gradient, a pytree like params. Returns the params after each step, the losses, the grads
    and the states, each with a leading axis of x_batches' rows (rows past n repeat the last)."""
    state0 = make_optimizer(optimizer, lr, momentum).init(params0)

    def step(carry, inputs):
        params, state = carry
        i, x, y, lr_k = inputs
        # A constant lr is closed over; a schedule's lr arrives with this step's batch.
        rate = jnp.where(scheduled, lr_k, lr)
        loss, grad = loss_and_grad(params, x, y, b)
        loss = jnp.where(mean, _mean_of(loss, b), loss)
        grad = jax.tree.map(lambda g: jnp.where(mean, _mean_of(g, b), g), grad)
        updates, new_state = make_optimizer(optimizer, rate, momentum).update(grad, state, params)
        # optax.apply_updates, each addition unfusable: see _rounded.
        new_params = jax.tree.map(lambda p, u: p + _rounded(u, b > 0), params, updates)
        live = i < n
        kept = jax.tree.map(
            lambda new, old: jnp.where(live, new, old), (new_params, new_state), (params, state)
        )
        return kept, (kept[0], loss, grad, kept[1])

    rows = lax.iota(jnp.int32, x_batches.shape[0])
    _, outputs = lax.scan(step, (params0, state0), (rows, x_batches, y_batches, lrs))
    return outputs


def _history(outputs, n: int) -> OptimizerHistory:
    """The kernel's outputs as an OptimizerHistory of NumPy arrays, cut to the first n steps."""
    weights, losses, grads, states, diverged = outputs
    k = int(diverged)
    return OptimizerHistory(
        np.asarray(weights)[: n + 1].copy(),
        np.asarray(losses)[:n].copy(),
        np.asarray(grads)[:n].copy(),
        None if k < 0 else k,
        jax.tree.map(lambda leaf: np.asarray(leaf)[:n].copy(), states),
    )


def _check_schedule(lr_schedule, n: int) -> np.ndarray:
    """lr_schedule as a float64 array of shape (n,): real floating, finite."""
    if isinstance(lr_schedule, (bool, np.bool_, str, bytes)) or np.ndim(lr_schedule) != 1:
        shape = np.shape(lr_schedule) if not isinstance(lr_schedule, (str, bytes)) else "a string"
        raise ValueError(f"lr_schedule must be a 1-D array of N = {n} learning rates, got {shape}")
    values = np.asarray(lr_schedule)
    if not np.issubdtype(values.dtype, np.floating):
        raise TypeError(
            f"lr_schedule must hold real floating-point learning rates, got dtype {values.dtype}; "
            "convert it, e.g. lr_schedule.astype('float32')"
        )
    if values.shape != (n,):
        raise ValueError(f"lr_schedule must have one learning rate per step, N = {n}, got {values.shape[0]}")
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"lr_schedule must be finite, got {values[k]} at step {k}")
    return values.astype(np.float64)


def optimizer_history(
    w, lr, x_batches, y_batches, *, optimizer="sgd", momentum=MOMENTUM, loss="sum", lr_schedule=None
) -> OptimizerHistory:
    """Run the lesson's scan with an Optax optimizer and keep every step, its state included.

    Args:
      w, lr, x_batches, y_batches: as for `core.training_history` (same checks, same carry dtype).
      optimizer: one of OPTIMIZERS.
      momentum: in [0, 1), the heavy-ball (and Nesterov) decay; checked always, used by those two.
      loss: "sum" or "mean", which divides each batch's loss and gradient by B.
      lr_schedule: None (lr at every step, closed over), or N real floating, finite learning rates
        that replace lr: step k uses lr_schedule[k] (see `lr_schedule`).

    Returns:
      An `OptimizerHistory` of NumPy arrays. With optimizer="sgd" and no schedule its weights,
      losses, grads and diverged_at are `training_history`'s bit for bit. Divergence is data, not
      an error.

    Raises:
      TypeError or ValueError naming the argument, for everything `training_history` refuses and
      for an unknown optimizer, a momentum outside [0, 1), and a schedule of the wrong shape,
      dtype or with a non-finite value.
    """
    check_loss(loss)
    check_optimizer(optimizer)
    reject_traced("optimizer_history", w, lr, momentum, x_batches, y_batches, lr_schedule)
    momentum = check_momentum(momentum)
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    n = x.shape[0]
    scheduled = lr_schedule is not None
    lrs = _check_schedule(lr_schedule, n) if scheduled else np.zeros(n)
    b = _batch_size(x)
    outputs = _optimizer_kernel(
        w,
        lr,
        jnp.asarray(lrs, w.dtype),
        jnp.bool_(scheduled),
        jnp.asarray(momentum, w.dtype),
        x,
        y,
        jnp.bool_(loss == "mean"),
        np.int32(n),
        b,
        _w_star(x, y, np.int32(n), np.int32(x.shape[1])),
        optimizer=optimizer,
    )
    return _history(outputs, n)


def optimizer_histories(
    w, lr, batches: PaddedBatches, *, optimizer="sgd", momentum=MOMENTUM, lr_schedule=None
) -> dict:
    """`optimizer_history` of both losses on padded batches: the explorer's, behind its controls.

    Args:
      w, lr: as for `HistoryEngine.run` (the carry dtype follows w, else the batches).
      batches: `HistoryEngine.pad` or `.corner`: the first batches.n steps of batches.b examples.
      optimizer, momentum: as for `optimizer_history`.
      lr_schedule: None, or batches.n learning rates (as for `optimizer_history`).

    Returns:
      {"sum": OptimizerHistory, "mean": OptimizerHistory}, each what `optimizer_history` gives on
      the unpadded (n, b) batches: the same weights and diverged_at bit for bit, the recorded grads
      and states the same within float32 rounding (a compiler may round a recorded output in a
      fusion of its own). One compilation per optimizer serves every n, b, w, lr, momentum and
      schedule that fit the padded arrays. With "sgd" and no schedule the weights, losses, grads
      and diverged_at are `HistoryEngine.histories`' bit for bit.
    """
    check_optimizer(optimizer)
    w, lr, x, y, n, b, w_star = padded_start("optimizer_histories", w, lr, batches, momentum, lr_schedule)
    momentum = check_momentum(momentum)
    dtype = x.dtype
    scheduled = lr_schedule is not None
    lrs = np.zeros(x.shape[0])
    if scheduled:
        lrs[: batches.n] = _check_schedule(lr_schedule, batches.n)
    common = (
        w,
        lr,
        jnp.asarray(lrs, dtype),
        jnp.bool_(scheduled),
        jnp.asarray(momentum, dtype),
        x,
        y,
    )
    outputs = {
        loss: _optimizer_kernel(*common, jnp.bool_(loss == "mean"), n, b, w_star, optimizer=optimizer)
        for loss in ("sum", "mean")
    }
    return {loss: _history(out, batches.n) for loss, out in outputs.items()}


_COUNTS = 2048  # the explorer's largest N


EXPONENTIAL_DECAY = 0.01  # "exponential" falls from lr at step 0 to lr * EXPONENTIAL_DECAY at step N


def schedule_function(schedule: str, lr, n: int):
    """Optax's schedule of that name (one of SCHEDULES) over n steps from `lr`, a function of the
    step count (`lr_schedule` evaluates it into N rates; Optax's own optimizers take it as their
    learning rate and keep the count in their state). `lr` may be traced; checks are the caller's."""
    quarter, tenth = max(n // 4, 1), max(n // 10, 1)
    if schedule == "constant":
        return optax.constant_schedule(lr)
    if schedule == "step":
        return optax.exponential_decay(lr, transition_steps=quarter, decay_rate=0.5, staircase=True)
    if schedule == "exponential":
        return optax.exponential_decay(lr, transition_steps=n, decay_rate=EXPONENTIAL_DECAY)
    if schedule == "cosine":
        return optax.cosine_decay_schedule(lr, decay_steps=n)
    if schedule == "warmup":
        return optax.join_schedules(
            [optax.linear_schedule(0.0, lr, tenth), optax.constant_schedule(lr)], [tenth]
        )
    raise ValueError(f"schedule must be one of {', '.join(map(repr, SCHEDULES))}, got {schedule!r}"[:200])


def lr_schedule(schedule, lr, n) -> np.ndarray:
    """N per-step learning rates shaped by the named schedule, from Optax's schedule functions.

    "constant": lr at every step. "step": halved every quarter of the run (a staircase).
    "exponential": decays smoothly to a hundredth of lr at step N. "cosine": lr * (1 + cos(pi k/N))/2,
    from lr at step 0 towards 0. "warmup": rises linearly from 0 to lr over the first tenth of the
    run, then stays at lr.

    Args:
      schedule: one of SCHEDULES.
      lr: the peak learning rate, a finite real scalar.
      n: the number of steps N, a whole number >= 1.

    Returns:
      float32 NumPy array of shape (N,): step k's learning rate at index k, for
      `optimizer_history(..., lr_schedule=...)`.
    """
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(map(repr, SCHEDULES))}, got {schedule!r}"[:200])
    check_scalar("lr", lr)
    reject_traced("lr_schedule", lr)
    lr, n = float(lr), _positive_int("n", n)
    function = schedule_function(schedule, lr, n)
    # Evaluated on at least _COUNTS steps, a fixed length, so that a new N compiles nothing.
    counts = jnp.arange(max(_COUNTS, 1 << (n - 1).bit_length()), dtype=jnp.int32)
    with jax.numpy_dtype_promotion("standard"):  # Optax mixes its int32 step count with floats
        return np.asarray(jax.vmap(function)(counts), dtype=np.float32)[:n].copy()


__all__ = [
    "MOMENTUM",
    "OPTIMIZERS",
    "make_optimizer",
    "SCHEDULES",
    "OptimizerHistory",
    "lr_schedule",
    "optimizer_histories",
    "optimizer_history",
]
