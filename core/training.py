"""The lesson's model, y = w*x, trained: the scan of the exercise, its per-step history, the same
run with an Optax optimizer and a schedule, and the contrasts the lesson teaches (gradients
accumulated at a fixed weight; a plain Python loop).

Every run here is `core.engine`'s one program with the params {"w": w}: `training_history` and
`HistoryEngine` (plain SGD, behind the explorer's sliders) and `optimizer_history(ies)` read its
records as the lesson's w. The exercise's functions (`scan_training_step`,
`python_loop_training_step`, `accumulated_gradient_step`) are small programs of their own over the
same step arithmetic (`core.model`); they agree with the history bit for bit in every stable run
tested, but a compiler may still fuse a multiply and an add differently in a different program, and
a diverging run amplifies that last bit (measured: 2 of 24 diverging cases at B = 17, relative 1e-5).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core import engine
from core._checks import (
    SUPPORTED_FLOATS,
    carry_dtype,
    check_batches,
    check_fits,
    check_loss,
    check_momentum,
    check_scalar,
    check_schedule,
    data_dtype,
    reject_traced,
)
from core.engine import DIVERGENCE_RATIO  # noqa: F401  (where it has always been importable)
from core.model import batch_loss_and_grads, pairwise_sum, rounded
from core.optimizers import MOMENTUM, check_optimizer


class History(NamedTuple):
    """Per-step record of one run of N steps.

    weights: (N+1,) carry dtype; weights[0] is the initial w, weights[k+1] the weight after step k.
    losses: (N,) the batch loss of step k at the weight that step used, weights[k].
    grads: (N,) the gradient of that loss at weights[k].
    diverged_at: the first step k whose result weights[k+1] is non-finite or beyond the magnitude
        limit of DIVERGENCE_RATIO, else None.
    """

    weights: np.ndarray
    losses: np.ndarray
    grads: np.ndarray
    diverged_at: int | None


class OptimizerHistory(NamedTuple):
    """Per-step record of one run of N steps with an optimizer.

    weights, losses, grads, diverged_at: as in `History` (weights (N+1,), losses and grads (N,), in
    the carry dtype; grads are the raw gradients the optimizer was handed).
    states: the optimizer's state after each step, Optax's own pytree with every leaf a NumPy
        array whose leading axis is N (optax.sgd's holds no arrays; heavy ball's trace; Adam's
        count, mu and nu).
    """

    weights: np.ndarray
    losses: np.ndarray
    grads: np.ndarray
    diverged_at: int | None
    states: Any


class PaddedBatches(NamedTuple):
    """Batches laid into the engine's fixed (max_steps, max_batch) arrays, zero beyond (n, b)."""

    x: jax.Array
    y: jax.Array
    n: int
    b: int


def check_padded(batches) -> None:
    """A `PaddedBatches` whose n and b are whole numbers that fit its arrays."""
    if not isinstance(batches, PaddedBatches):
        raise TypeError(
            f"batches must be the PaddedBatches that HistoryEngine.pad returns, got {type(batches).__name__}"
        )
    rows, columns = batches.x.shape
    counts = (batches.n, batches.b)
    whole = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in counts)
    if not whole or not (1 <= batches.n <= rows and 1 <= batches.b <= columns):
        raise ValueError(f"batches has n={batches.n}, b={batches.b} outside its ({rows}, {columns}) arrays")


def _batch_loss_and_grad(w, x, y, b):
    """The sum loss of the first b examples of one batch and its gradient 2 * sum((w*x - y) * x):
    `core.model.batch_loss_and_grads` of the params {"w": w}."""
    loss, grads = batch_loss_and_grads({"w": w}, x, y, b)
    return loss, grads["w"]


def _update(w, lr, grad, keep):
    """One gradient-descent step, new_w = w - lr * grad (keep: a run-time True; see `rounded`)."""
    return w - rounded(lr * grad, keep)


def _step(w, lr, x, y, b):
    """The exercise's training step: `core.lesson.train_step` on the first b examples of a batch,
    padding-proof (see `core.model.rounded`). Returns the new w."""
    _, grad = _batch_loss_and_grad(w, x, y, b)
    return _update(w, lr, grad, b > 0)


def _prepare(w, lr, x_batches, y_batches):
    """Checked inputs, all cast to the carry dtype."""
    x, y = check_batches(x_batches, y_batches)
    check_scalar("w", w)
    check_scalar("lr", lr)
    dtype = carry_dtype(w, data_dtype(x, y))
    check_fits("w", w, dtype)
    check_fits("lr", lr, dtype)
    return (
        jnp.asarray(w, dtype=dtype),
        jnp.asarray(lr, dtype=dtype),
        jnp.asarray(x, dtype=dtype),
        jnp.asarray(y, dtype=dtype),
    )


def padded_start(function: str, w, lr, batches, *concrete):
    """The checks every entry point on padded batches opens with, then its inputs cast to the
    carry dtype (w's own floating dtype, else the batches'): w and lr as NumPy 0-d arrays, x and y
    the (max_steps, max_batch) arrays, n and b int32. `function` names the caller in the error
    for a traced argument; `concrete` are its other arguments that must not be traced.

    Raises TypeError or ValueError naming the argument: w or lr not a real scalar, or overflowing
    the carry dtype; any argument traced; batches not a PaddedBatches.
    """
    check_scalar("w", w)
    check_scalar("lr", lr)
    reject_traced(function, w, lr, *concrete)
    check_padded(batches)
    dtype = carry_dtype(w, batches.x.dtype)
    check_fits("w", w, dtype)
    check_fits("lr", lr, dtype)
    x, y = (a if a.dtype == dtype else a.astype(dtype) for a in (batches.x, batches.y))
    w, lr = np.asarray(w, dtype=dtype), np.asarray(lr, dtype=dtype)
    return w, lr, x, y, np.int32(batches.n), np.int32(batches.b)


def unseen_batch_size(x):
    """B as a value the compiler cannot see, even inside a caller's jit: see `rounded`."""
    return lax.optimization_barrier(jnp.int32(x.shape[1]))


@jax.jit
def _scan_final(w, lr, x_batches, y_batches, b):
    def step(w, batch):
        x, y = batch
        return _step(w, lr, x, y, b), None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def scan_training_step(w, lr, x_batches, y_batches):
    """The exercise: one gradient-descent step per batch, carried by `lax.scan`.

    The exercise's contract: "Starting from w, take one gradient-descent step per batch using the loss
    sum((w*x - y)**2): gradient = 2 * sum((w*x - y) * x); new_w = w - lr * gradient. [...] Return
    only the scalar final weight after all N updates. Use each paired row (x_batches[i],
    y_batches[i]) exactly once, in order."

    Args:
      w: initial weight, a real scalar. Its floating dtype is the carry's dtype (float32, float64
        under `jax_enable_x64`, bfloat16, float16); a Python number takes the data's dtype.
      lr: learning rate, a real scalar; may be traced, so one jit trace serves every lr value.
      x_batches, y_batches: real floating arrays of one shape (N, B), N >= 1, B >= 1; cast to the
        carry dtype.

    Returns:
      The final weight, a 0-d jax array of the carry dtype. The updates are sequential: step k's
      gradient is taken at the weight step k-1 produced, not at the initial weight.

    Raises:
      TypeError or ValueError naming the argument for a non-2-D, empty, mismatched, integer,
      boolean or complex batch array, and for a non-scalar, boolean or complex `w` or `lr`: these
      checks read shapes and dtypes, so they also run under `jax.jit`. A NaN or infinite `w` or
      `lr` is refused only when the value is concrete (not traced).
    """
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    return _scan_final(w, lr, x, y, unseen_batch_size(x))


def _as_history(run: engine.PytreeHistory) -> History:
    """The engine's run of {"w": w} read as the lesson's w."""
    return History(run.params["w"], run.losses, run.grads["w"], run.diverged_at)


def _as_optimizer_history(run: engine.PytreeHistory) -> OptimizerHistory:
    """The engine's run of {"w": w} read as the lesson's w, Optax's state too: each of its
    params-like dicts {"w": leaf} is that leaf, as Optax keeps it for a scalar w."""
    states = jax.tree.map(
        lambda node: node["w"] if isinstance(node, dict) else node,
        run.states,
        is_leaf=lambda node: isinstance(node, dict),
    )
    return OptimizerHistory(run.params["w"], run.losses, run.grads["w"], run.diverged_at, states)


def _unpadded_runs(w, lr, x_batches, y_batches, *, optimizer="sgd", momentum=MOMENTUM, lr_schedule=None):
    """The engine's runs of both losses on unpadded, checked (N, B) batches, padded to the engine's
    shape bucket (`core.engine.bucketed`). Returns {"sum", "mean"} PytreeHistory."""
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    n, b = x.shape
    x, y = engine.bucketed(x, y)
    lrs = None
    if lr_schedule is not None:
        lrs = np.zeros(x.shape[0], w.dtype)
        lrs[:n] = check_schedule(lr_schedule, n)
    return engine.start(
        {"w": np.asarray(w)},
        np.asarray(lr),
        x,
        y,
        np.int32(n),
        np.int32(b),
        optimizer=optimizer,
        momentum=np.asarray(momentum, w.dtype),
        lrs=lrs,
    )()


def training_history(w, lr, x_batches, y_batches, *, loss="sum") -> History:
    """Run the lesson's scan and keep every step: weights, batch losses, gradients, divergence.

    Args:
      w, lr, x_batches, y_batches: as for `scan_training_step` (same checks, same carry dtype).
      loss: "sum" (the lesson's) or "mean", which divides each batch's loss and gradient by B.

    Returns:
      A `History` of NumPy arrays in the carry dtype. With loss="sum", `weights[-1]` is
      `scan_training_step(w, lr, x_batches, y_batches)` (bit for bit in stable runs; see the module
      docstring for diverging ones). Divergence is data, not an error: nothing raises or warns,
      `diverged_at` says where.

    This is a host function (it returns NumPy arrays and a Python int); inside `jax.jit` use
    `scan_training_step`. One compilation serves every (N, B) of a shape bucket (rows and columns
    padded to powers of two, `core.engine.bucketed`); `HistoryEngine` serves all shapes up to a
    capacity from one.
    """
    check_loss(loss)
    reject_traced("training_history", w, lr, x_batches, y_batches)
    return _as_history(_unpadded_runs(w, lr, x_batches, y_batches)[loss])


def optimizer_history(
    w, lr, x_batches, y_batches, *, optimizer="sgd", momentum=MOMENTUM, loss="sum", lr_schedule=None
) -> OptimizerHistory:
    """Run the lesson's scan with an Optax optimizer and keep every step, its state included.

    Args:
      w, lr, x_batches, y_batches: as for `training_history` (same checks, same carry dtype).
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
    runs = _unpadded_runs(
        w, lr, x_batches, y_batches, optimizer=optimizer, momentum=momentum, lr_schedule=lr_schedule
    )
    return _as_optimizer_history(runs[loss])


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
      fusion of its own: one ulp of Adam's mu seen). One compilation per optimizer serves every n, b,
      w, lr, momentum and schedule that fit the padded arrays. With "sgd" and no schedule the
      weights, losses, grads and diverged_at are `HistoryEngine.histories`' bit for bit.
    """
    check_optimizer(optimizer)
    w, lr, x, y, n, b = padded_start("optimizer_histories", w, lr, batches, momentum, lr_schedule)
    momentum = check_momentum(momentum)
    lrs = None
    if lr_schedule is not None:
        lrs = np.zeros(x.shape[0], x.dtype)
        lrs[: batches.n] = check_schedule(lr_schedule, batches.n)
    runs = engine.start(
        {"w": w}, lr, x, y, n, b, optimizer=optimizer, momentum=np.asarray(momentum, x.dtype), lrs=lrs
    )()
    return {loss: _as_optimizer_history(run) for loss, run in runs.items()}


class HistoryEngine:
    """`training_history` for every N <= max_steps and B <= max_batch from one compilation per dtype.

    Batches are zero-padded to (max_steps, max_batch); N, B, the loss, w and lr reach the compiled
    scan as traced values, so changing any of them never recompiles. Padding changes no number of
    the result: rows past N leave the carry alone and padded columns add exact zeros.

    Typical use behind a slider: `batches = engine.pad(x, y)` once per data set, then
    `engine.histories(w, lr, batches)` (both losses, from one run of the kernel) or
    `engine.run(w, lr, batches, loss=...)` per move.
    """

    def __init__(self, max_steps: int = 2048, max_batch: int = 1024):
        for name, value in (("max_steps", max_steps), ("max_batch", max_batch)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.max_steps = int(max_steps)
        self.max_batch = int(max_batch)

    def pad(self, x_batches, y_batches, dtype=None) -> PaddedBatches:
        """Lay (N, B) batches into the engine's arrays, in `dtype` (default: the data's dtype)."""
        reject_traced("HistoryEngine.pad", x_batches, y_batches)
        x, y = check_batches(x_batches, y_batches)
        n, b = x.shape
        if n > self.max_steps or b > self.max_batch:
            raise ValueError(
                f"x_batches has shape ({n}, {b}) but this engine holds at most "
                f"({self.max_steps}, {self.max_batch}) (N, B); make a HistoryEngine with a larger "
                "max_steps or max_batch"
            )
        dtype = jnp.dtype(dtype) if dtype is not None else data_dtype(x, y)
        if dtype not in SUPPORTED_FLOATS:
            raise TypeError(f"dtype must be float16, bfloat16, float32 or float64, got {dtype}")
        padded = []
        for array in (x, y):
            full = np.zeros((self.max_steps, self.max_batch), dtype=dtype)
            full[:n, :b] = np.asarray(array)
            padded.append(jax.device_put(full))
        return PaddedBatches(padded[0], padded[1], n, b)

    def corner(self, batches: PaddedBatches, n, b) -> PaddedBatches:
        """The first n rows and b columns of `batches` as batches of their own, without copying:
        the engine ignores rows past n and columns past b, so this is `pad(x[:n, :b], y[:n, :b])`
        for every result (a slider on N or B pads nothing)."""
        check_padded(batches)
        for name, value, limit in (("n", n, batches.n), ("b", b, batches.b)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
            if not 1 <= value <= limit:
                raise ValueError(f"{name} must lie in 1..{limit} (batches.{name}), got {value}")
        return PaddedBatches(batches.x, batches.y, int(n), int(b))

    def run(self, w, lr, batches: PaddedBatches, *, loss="sum") -> History:
        """The history of the first `batches.n` steps; see `training_history`."""
        check_loss(loss)
        return self.histories(w, lr, batches)[loss]

    def histories(self, w, lr, batches: PaddedBatches) -> dict:
        """{"sum": History, "mean": History} of the first `batches.n` steps, from one run of the
        compiled scan (both carries advance in the same loop); each is what `run` returns."""
        return self.start(w, lr, batches)()

    def start(self, w, lr, batches: PaddedBatches):
        """Start `histories(w, lr, batches)` and return a function that waits for it and returns it.

        JAX dispatches the compiled scan asynchronously and this returns at once (about 0.1 ms);
        host work done before calling the result runs while the scan does, instead of after it
        (the host waits only where it reads a value). Arguments are checked here.
        """
        w, lr, x, y, n, b = padded_start("HistoryEngine.run", w, lr, batches)
        collect = engine.start({"w": w}, lr, x, y, n, b, momentum=np.zeros((), x.dtype))
        return lambda: {loss: _as_history(run) for loss, run in collect().items()}

    def history(self, w, lr, x_batches, y_batches, *, loss="sum") -> History:
        """`training_history` through the engine: pad, then run."""
        return self.run(w, lr, self.pad(x_batches, y_batches), loss=loss)

    def warm_up(self, dtype=jnp.float32) -> None:
        """Compile the engine's scan for `dtype` now, before the first slider move."""
        ones = np.ones((1, 1), dtype=dtype)
        self.run(0.0, 0.1, self.pad(ones, ones, dtype=dtype))


@jax.jit
def _accumulated_step(w, lr, x_batches, y_batches, b):
    # The exercise's mistake, on purpose not `_step`: every gradient at the same w, one update.
    _, grads = jax.vmap(_batch_loss_and_grad, in_axes=(None, 0, 0, None))(w, x_batches, y_batches, b)
    return _update(w, lr, pairwise_sum(grads), b > 0)


def accumulated_gradient_step(w, lr, x_batches, y_batches):
    """The mistake the exercise warns about: every batch's gradient taken at the initial w, summed, and
    applied once. The worked example gives 0.8 here against 0.64 for `scan_training_step`.

    Same arguments, checks and carry dtype as `scan_training_step`; returns a 0-d jax array.
    """
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    return _accumulated_step(w, lr, x, y, unseen_batch_size(x))


@jax.jit
def _one_step(w, lr, x, y, b):
    return _step(w, lr, x, y, b)


def python_loop_training_step(w, lr, x_batches, y_batches):
    """The pure train-step pattern: a Python loop over the batches calling a jitted step. Same result as
    `scan_training_step`; the loop runs on the host, one dispatch per batch.

    Same arguments, checks and carry dtype as `scan_training_step`; returns a 0-d jax array.
    """
    reject_traced("python_loop_training_step", w, lr, x_batches, y_batches)
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    # Rows as NumPy views: indexing a jax array with each Python int would compile a slice per index.
    x_rows, y_rows, b = np.asarray(x), np.asarray(y), unseen_batch_size(x)
    for x_row, y_row in zip(x_rows, y_rows, strict=True):
        w = _one_step(w, lr, x_row, y_row, b)
    return w
