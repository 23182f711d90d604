"""The pure train-step pattern: a linear model whose parameters are a pytree, trained by an Optax optimizer.

The parameters are a dict {"w": (d,), "b": ()}. One training step is a pure function,
`train_step(params, opt_state, x, y, weights, opt) -> (params, opt_state, loss)`: the gradient of
`loss_fn` by `jax.value_and_grad`, the update from Optax's `opt.update`, applied by
`optax.apply_updates`. `train_linear` runs it with `lax.scan`, one step per microbatch.

Nothing a slider moves is static. The scan always runs `max_steps` steps and a step past `steps`
leaves params and optimizer state as they were; a microbatch is a row weighting of the whole data
(1 / batch_size on its rows, 0 elsewhere), so the batch size is a traced number, not a shape; the
learning rate and the seed are traced too. One compilation per (optimizer, x's shape, dtype,
max_steps) serves every lr, steps, batch_size and seed.
"""

from __future__ import annotations

import functools
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import _as_array, _describe_dtype_problem, check_fits, check_scalar, data_dtype, is_traced
from core.optimizers import check_optimizer, make_optimizer, optax

MIN_DEFAULT_STEPS = 256
"""The default `max_steps` is the smallest power of two >= max(steps, MIN_DEFAULT_STEPS)."""


class LinearFit(NamedTuple):
    """One run of `train_linear`, all NumPy arrays in the compute dtype (float32, or float64).

    params: the final parameters, {"w": (d,), "b": ()}.
    losses: (steps,) the loss of step k's microbatch at the parameters step k started from (what
        `jax.value_and_grad` returns inside the step, before its update).
    history: the parameters after each step, {"w": (steps, d), "b": (steps,)}; history[...][-1]
        equals params.
    """

    params: dict
    losses: np.ndarray
    history: dict


TRUE_PARAMS = {"w": (2.0, -1.0, 0.5), "b": 3.0}
"""The parameters behind `linear_data`: the pure train-step example's y = x @ [2, -1, 0.5] + 3."""


def linear_data(seed: int = 0, n: int = 256):
    """The pure train-step example's data: x of shape (n, 3) from a standard normal,
    y = x @ [2, -1, 0.5] + 3, as float32 NumPy arrays; the same seed gives the same data
    (jax.random.key(seed))."""
    seed = _check_int("seed", seed, 0, 2**32 - 1)
    n = _check_int("n", n, 1, 10**6)
    x = jax.random.normal(jax.random.key(seed), (n, len(TRUE_PARAMS["w"])), jnp.float32)
    w = jnp.asarray(TRUE_PARAMS["w"], jnp.float32)
    y = x @ w + jnp.float32(TRUE_PARAMS["b"])
    return np.asarray(x), np.asarray(y)


def init_params(key, d: int, dtype=jnp.float32) -> dict:
    """The pure train-step example's initial parameters: w ~ normal(key, (d,)) * 0.1, b = 0."""
    return {"w": jax.random.normal(key, (d,), dtype) * 0.1, "b": jnp.zeros((), dtype)}


def loss_fn(params, x, y, weights):
    """Mean squared error over a microbatch: weights is 1 / batch_size on its rows, 0 on the others."""
    pred = x @ params["w"] + params["b"]
    return jnp.sum(weights * (pred - y) ** 2)


def train_step(params, opt_state, x, y, weights, opt):
    """One pure training step: new params, new optimizer state and the loss before the update."""
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, weights)
    updates, opt_state = opt.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


def batch_weights(k, batch_size, n: int, dtype):
    """(n,) row weights of step k's microbatch: 1 / batch_size on rows [start, start + batch_size),
    start = (k mod n_batches) * batch_size with n_batches = n // batch_size, 0 elsewhere (the
    n mod batch_size rows past the last whole batch are never used)."""
    start = (k % (n // batch_size)) * batch_size
    rows = lax.iota(jnp.int32, n)
    in_batch = (rows >= start) & (rows < start + batch_size)
    return jnp.where(in_batch, 1 / batch_size.astype(dtype), jnp.zeros((), dtype))


@functools.partial(jax.jit, static_argnames=("optimizer", "max_steps"))
def _fit_kernel(x, y, lr, steps, batch_size, seed, *, optimizer, max_steps):
    """The scan of `max_steps` steps; steps k >= `steps` keep the carry. Returns the final params,
    the (max_steps,) losses and the {"w": (max_steps, d), "b": (max_steps,)} params after each step."""
    n, d = x.shape
    opt = make_optimizer(optimizer, lr)
    params = init_params(jax.random.key(seed), d, x.dtype)

    def step(carry, k):
        params, opt_state = carry
        weights = batch_weights(k, batch_size, n, x.dtype)
        new_params, new_opt_state, loss = train_step(params, opt_state, x, y, weights, opt)
        # Padding: past `steps` the old carry is kept, so every steps <= max_steps shares this compile.
        live = k < steps
        params, opt_state = jax.tree.map(
            lambda new, old: jnp.where(live, new, old), (new_params, new_opt_state), carry
        )
        return (params, opt_state), (loss, params)

    (params, _), (losses, history) = lax.scan(
        step, (params, opt.init(params)), lax.iota(jnp.int32, max_steps)
    )
    return params, losses, history


def _check_data(x, y):
    """x (n, d) and y (n,) as NumPy arrays in the compute dtype, checked."""
    x, y = _as_array("x", x), _as_array("y", y)
    for name, array in (("x", x), ("y", y)):
        if is_traced(array):
            raise TypeError(
                f"{name} must be concrete: train_linear returns NumPy arrays, so it cannot run under jax.jit"
            )
        problem = _describe_dtype_problem(name, array.dtype)
        if problem:
            raise TypeError(problem)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D with shape (n, d): n examples of d features; got shape {x.shape}")
    n, d = x.shape
    if n == 0 or d == 0:
        raise ValueError(f"x must hold at least one example and one feature (n, d >= 1); got shape {x.shape}")
    if tuple(y.shape) != (n,):
        raise ValueError(f"y must have shape (n,) = ({n},), one target per row of x; got shape {y.shape}")
    dtype = data_dtype(x, y)
    if jnp.finfo(dtype).bits < 32:  # Adam's eps = 1e-8 and the squared gradients underflow float16
        dtype = jnp.dtype(jnp.float32)
    arrays = []
    for name, array in (("x", x), ("y", y)):
        array = np.asarray(array)
        if not np.all(np.isfinite(array.astype(np.float64))):
            raise ValueError(f"{name} must be finite; it holds NaN or infinite values")
        with np.errstate(over="ignore"):  # reported just below, naming the argument
            array = array.astype(dtype)
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} holds values that overflow the compute dtype {dtype}")
        arrays.append(array)
    return arrays[0], arrays[1], dtype


def _check_int(name: str, value, low: int, high: int | None = None) -> int:
    if is_traced(value) or isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}"[:200])
    if value < low or (high is not None and value > high):
        bounds = f"in {low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bounds}, got {value}")
    return int(value)


def train_linear(x, y, *, optimizer="sgd", lr=0.1, steps=200, batch_size=None, seed=0, max_steps=None):
    """Fit y ~ x @ w + b by minibatch training with an Optax optimizer, stepped by `lax.scan`.

    The pure train-step example: with x of shape (256, 3) from a normal and y = x @ [2, -1, 0.5] + 3, 200
    steps of sgd at lr 0.1 give w ~ [2, -1, 0.5], b ~ 3 and a loss below 1e-4.

    Step k runs `train_step` on microbatch k mod n_batches, where n_batches = n // batch_size and
    microbatch j is rows [j * batch_size, (j + 1) * batch_size) of x and y, in order: the last
    n mod batch_size rows are dropped, so every microbatch has the same size. The loss is the mean
    squared error over the microbatch. The initial params are `init_params(jax.random.key(seed), d)`.

    Args:
      x: (n, d) real floating array, n >= 1 examples of d >= 1 features; finite.
      y: (n,) real floating array of targets; finite.
      optimizer: one of OPTIMIZERS (`make_optimizer`, momentum 0.9): "sgd", "momentum" (heavy
        ball), "nesterov" or "adam" (optax.adam(lr), b1=0.9, b2=0.999, eps=1e-8).
      lr: the learning rate, a finite real number > 0.
      steps: the number of training steps, an integer >= 1.
      batch_size: the rows per microbatch, an integer in 1..n; None (the default) is n, full batch.
      seed: the seed of the initial w, an integer in 0..2**32 - 1.
      max_steps: the length of the compiled scan, an integer >= steps. Default: the smallest power
        of two >= max(steps, 256). Steps past `steps` change nothing, so a caller that fixes
        max_steps gets one compilation for every steps <= max_steps.

    Returns:
      A `LinearFit` of NumPy arrays (params, losses, history), padding trimmed away. The compute
      dtype is float64 when x or y is float64 and `jax_enable_x64` is on, else float32 (float16 and
      bfloat16 are widened). A diverging run is data, not an error: its losses and params become
      inf or NaN and are returned as they are.

    Only the optimizer name, x's shape, the compute dtype and max_steps are static: one compilation
    serves every lr, steps, batch_size and seed.

    Raises:
      TypeError or ValueError naming the argument: x not a 2-D real floating array with n, d >= 1;
      y not of shape (n,); x or y not finite; optimizer not in OPTIMIZERS; lr not a finite real
      number > 0 (a boolean is refused); steps not an integer >= 1; batch_size not None or an
      integer in 1..n; seed not an integer in 0..2**32 - 1; max_steps not an integer >= steps.
      This returns NumPy arrays, so its arguments must be concrete (not traced under `jax.jit`).
    """
    x, y, dtype = _check_data(x, y)
    n = x.shape[0]
    check_optimizer(optimizer)
    check_scalar("lr", lr)
    if is_traced(lr):
        raise TypeError(
            "lr must be concrete: train_linear returns NumPy arrays, so it cannot run under jax.jit"
        )
    if not float(np.asarray(lr, dtype=np.float64)) > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    check_fits("lr", lr, dtype)
    steps = _check_int("steps", steps, 1)
    batch_size = n if batch_size is None else _check_int("batch_size", batch_size, 1, n)
    seed = _check_int("seed", seed, 0, 2**32 - 1)
    if max_steps is None:
        max_steps = 1 << (max(steps, MIN_DEFAULT_STEPS) - 1).bit_length()
    max_steps = _check_int("max_steps", max_steps, 1, 2**31 - 1)
    if steps > max_steps:
        raise ValueError(f"steps ({steps}) must not exceed max_steps ({max_steps}), the scan's length")

    params, losses, history = _fit_kernel(
        x,
        y,
        np.asarray(lr, dtype=dtype),
        np.int32(steps),
        np.int32(batch_size),
        np.uint32(seed),
        optimizer=optimizer,
        max_steps=max_steps,
    )
    params, losses, history = jax.device_get((params, losses, history))
    return LinearFit(
        params={name: np.array(value) for name, value in params.items()},
        losses=np.asarray(losses)[:steps].copy(),
        history={name: np.asarray(value)[:steps].copy() for name, value in history.items()},
    )
