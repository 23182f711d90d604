"""The optimizers and learning-rate schedules the explorer offers, as Optax defines them.

`make_optimizer` names Optax's optimizers (the carry grows up: (params, opt_state)); `lr_schedule`
evaluates Optax's schedules into N per-step learning rates, which the engine (`core.engine`) scans
with the batches, step k reading lr_schedule[k]. The runs themselves are `core.optimizer_history`
and `core.pytree_history`'s.
"""

from __future__ import annotations

import importlib.util
import sys

import jax
import jax.numpy as jnp
import numpy as np

from core._checks import check_positive_int, check_scalar, reject_traced


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
    return with_standard_promotion(optax.adam(lr))


def with_standard_promotion(opt: optax.GradientTransformation) -> optax.GradientTransformation:
    """`opt` whose update runs under JAX's standard dtype promotion: Adam's bias correction
    computes b1 ** count, a Python float to an int32 power, which jax_numpy_dtype_promotion="strict"
    (on in the tests) refuses. The result is cast back to each parameter's dtype by Optax."""

    def update(updates, state, params=None):
        with jax.numpy_dtype_promotion("standard"):
            return opt.update(updates, state, params)

    return optax.GradientTransformation(opt.init, update)


SCHEDULES = ("constant", "step", "exponential", "cosine", "warmup")
"""`lr_schedule`'s names, each a shape over N steps that starts from (or rises to) lr."""


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
    lr, n = float(lr), check_positive_int("n", n)
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
    "lr_schedule",
]
