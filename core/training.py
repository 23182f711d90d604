"""The lesson's training loop written with `jax.lax.scan`, its per-step history, and the contrasts
the lesson teaches (gradients accumulated at a fixed weight; a plain Python loop).

Every path takes one step function (`_step`): the lesson's step (`core.lesson.train_step`) made
padding-proof. Its loss and gradient are per-example values from
`jax.vmap(jax.value_and_grad(...))`, added by a pairwise tree whose order does not depend on zero
padding. The padded engine behind the explorer and `training_history` are one compiled kernel at two
shapes, and return the same numbers bit for bit (tested on hundreds of random settings, diverging
runs included). `scan_training_step` and `python_loop_training_step` run the same step arithmetic in
other programs: they agree with the history bit for bit in every stable run tested, but a compiler
may still fuse a multiply and an add differently in a different program, and a diverging run
amplifies that last bit (measured: 2 of 24 diverging cases at B = 17, relative 1e-5).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import (
    SUPPORTED_FLOATS,
    carry_dtype,
    check_batches,
    check_fits,
    check_loss,
    check_scalar,
    data_dtype,
    reject_traced,
)

DIVERGENCE_RATIO = 1e6
"""A run has diverged at the first step whose weight is non-finite, or whose distance from the
least-squares optimum w* exceeds DIVERGENCE_RATIO * max(1, |w0 - w*|): the error grew a
million-fold. When w* is undefined (every x is zero) the distance is taken from w0."""


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


class PaddedBatches(NamedTuple):
    """Batches laid into the engine's fixed (max_steps, max_batch) arrays, zero beyond (n, b), with
    the least-squares w* of the (n, b) data, which places the divergence limit (None: computed per
    run)."""

    x: jax.Array
    y: jax.Array
    n: int
    b: int
    w_star: jax.Array | None = None


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


def _rounded(value, keep):
    """`value` where `keep` holds, else 0: a select that also rounds `value` on its own.

    A compiler may fuse a product and the addition or subtraction that consumes it into one
    multiply-add, which rounds once instead of twice, and XLA decides that per fused loop (even per
    loop remainder), so the same arithmetic can give different last bits in differently shaped
    programs. Nothing fuses across a select whose condition is only known at run time, so every
    product in a step passes through one before it is added: that is what makes padding drop out of
    the engine's results. (LLVM can still hoist a loop-invariant condition out of a loop and drop
    the select in one copy of it, which is why other programs can differ in the last bit.)
    """
    return jnp.where(keep, value, jnp.zeros((), value.dtype))


def _example_loss(w, x, y, keep):
    """The lesson's loss for one example, (w*x - y)**2; 0 where keep is False."""
    error = _rounded(w * x, keep) - y
    return _rounded(error * error, keep)


# Per-example loss and gradient: w is shared (in_axes None), each example is mapped.
_example_value_and_grad = jax.vmap(jax.value_and_grad(_example_loss), in_axes=(None, 0, 0, 0))


def _pad_to_power_of_two(values):
    """Zero-pad the last axis to a power of two (a no-op when it is one)."""
    length = values.shape[-1]
    width = 1 << max(length - 1, 0).bit_length()
    if width == length:
        return values
    return jnp.pad(values, [(0, 0)] * (values.ndim - 1) + [(0, width - length)])


def _pairwise_sum(values):
    """Sum over the last axis as a tree: zero-pad it to a power of two, then add the two halves,
    level by level.

    Zeros appended to the axis drop out exactly (v + 0 is v), so the same data padded with zeros to
    any longer power of two gives the same bits, which a library reduction does not promise.
    """
    values = _pad_to_power_of_two(values)
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = values[..., :half] + values[..., half:]
    return values[..., 0]


def _batch_loss_and_grad(w, x, y, b):
    """Sum loss of the first b examples of one batch, and its gradient 2 * sum((w*x - y) * x).

    b is a traced int32: examples past it count as exact zeros whatever they hold, and it keeps the
    selects of `_rounded` from being folded away at compile time.
    """
    valid = lax.iota(jnp.int32, x.shape[-1]) < b
    losses, grads = _example_value_and_grad(w, x, y, valid)
    # Past b the gradient is 0 * x, which is NaN where x is: select it away too.
    return _pairwise_sum(losses), _pairwise_sum(_rounded(grads, valid))


def _update(w, lr, grad, keep):
    """One gradient-descent step, new_w = w - lr * grad (keep: a run-time True; see `_rounded`)."""
    return w - _rounded(lr * grad, keep)


def _mean_of(total, b):
    """total / b, divided in at least float32 so that B is exact (bfloat16 holds 257 as 256)."""
    wide = _wide(total.dtype)
    return (total.astype(wide) / b.astype(wide)).astype(total.dtype)


def _step(w, lr, x, y, b, mean=False):
    """The engine's training step, the only one every path here takes: `core.lesson.train_step` on
    the first b examples of a batch, padding-proof (see `_rounded`). Returns (new w, the batch's
    loss at w, its gradient), divided by b for the mean loss (`mean`, a Python bool)."""
    loss, grad = _batch_loss_and_grad(w, x, y, b)
    if mean:
        loss, grad = _mean_of(loss, b), _mean_of(grad, b)
    return _update(w, lr, grad, b > 0), loss, grad


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


class PaddedStart(NamedTuple):
    """What a run on padded batches starts from, checked and in the carry dtype: w and lr NumPy
    0-d arrays, x and y (max_steps, max_batch) arrays, n and b int32, w_star the (n, b) data's
    least-squares weight (0-d)."""

    w: np.ndarray
    lr: np.ndarray
    x: jax.Array
    y: jax.Array
    n: np.int32
    b: np.int32
    w_star: jax.Array


def padded_start(function: str, w, lr, batches, *concrete) -> PaddedStart:
    """The checks every entry point on padded batches opens with, then its inputs cast to the
    carry dtype (w's own floating dtype, else the batches'). `function` names the caller in the
    error for a traced argument; `concrete` are its other arguments that must not be traced.

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
    n, b = np.int32(batches.n), np.int32(batches.b)
    w_star = batches.w_star
    if w_star is None or x is not batches.x:  # not made by pad(), or another carry dtype
        w_star = _w_star(x, y, n, b)
    return PaddedStart(np.asarray(w, dtype=dtype), np.asarray(lr, dtype=dtype), x, y, n, b, w_star)


def _batch_size(x):
    """B as a value the compiler cannot see, even inside a caller's jit: see `_rounded`."""
    return lax.optimization_barrier(jnp.int32(x.shape[1]))


@jax.jit
def _scan_final(w, lr, x_batches, y_batches, b):
    def step(w, batch):
        x, y = batch
        return _step(w, lr, x, y, b)[0], None

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
    return _scan_final(w, lr, x, y, _batch_size(x))


def _wide(dtype):
    # Sums of x*x over N*B examples overflow float16, so they are taken in at least float32.
    return dtype if jnp.finfo(dtype).bits >= 32 else jnp.dtype(jnp.float32)


def _batch_moments(x, y, b):
    """sum(x*y) and sum(x*x) over the first b examples, in at least float32."""
    wide = _wide(x.dtype)
    valid = lax.iota(jnp.int32, x.shape[-1]) < b
    x, y = x.astype(wide), y.astype(wide)
    return _pairwise_sum(_rounded(x * y, valid)), _pairwise_sum(_rounded(x * x, valid))


@jax.jit
def _w_star(x_batches, y_batches, n, b):
    """The least-squares w* = sum(x*y) / sum(x*x) over the first n rows and b columns, in at least
    float32: per-row pairwise sums, then a pairwise sum over the rows (zero padding drops out)."""
    rows = lax.iota(jnp.int32, x_batches.shape[0]) < n
    sums_xy, sums_xx = jax.vmap(_batch_moments, in_axes=(0, 0, None))(x_batches, y_batches, b)
    sums_xy, sums_xx = (_rounded(sums, rows) for sums in (sums_xy, sums_xx))
    return _pairwise_sum(sums_xy) / _pairwise_sum(sums_xx)


def _divergence_step(w0, weights_after, w_star, n):
    """First k < n with weights_after[k] past the DIVERGENCE_RATIO limit, else -1."""
    wide = w_star.dtype
    w0, weights_after = w0.astype(wide), weights_after.astype(wide)
    reference = jnp.where(jnp.isfinite(w_star), w_star, w0)
    limit = DIVERGENCE_RATIO * jnp.maximum(1.0, jnp.abs(w0 - reference))
    bad = ~jnp.isfinite(weights_after) | (jnp.abs(weights_after - reference) > limit)
    bad = bad & (lax.iota(jnp.int32, weights_after.shape[0]) < n)
    return jnp.where(jnp.any(bad), jnp.argmax(bad), -1).astype(jnp.int32)


_CHUNK = 32  # steps per inner lax.scan in _history_kernel


@jax.jit
def _history_kernel(w0, lr, x_batches, y_batches, n, b, w_star):
    """The scan with per-step outputs for both losses at once, on the first n rows and b columns.

    Column 0 of every output is the sum loss, column 1 the mean loss: the two carries share each
    step's reads of the batch and the loop's overhead, which is most of a step's cost. n and b are
    traced, so one compilation serves every (n, b) that fits the arrays' shape. Rows past n leave
    the carry unchanged and columns past b count as zeros, whatever they hold. The work follows
    (n, b), not the arrays' shape: the steps run as a `lax.scan` over chunks of _CHUNK rows inside a
    while loop that stops after row n, and a step reads only the first power-of-two columns that
    cover b (one branch per width, all compiled together). w_star (`_w_star` of the same data)
    places the divergence limit.
    """
    dtype = w0.dtype
    zeros = jnp.zeros(2, dtype)
    widths = [1 << k for k in range(_pad_to_power_of_two(x_batches[0]).shape[-1].bit_length())]
    # Branch 0 skips a step past n; branch 1 + j runs it at widths[j], the narrowest width >= b.
    width_index = jnp.sum((jnp.asarray(widths, dtype=jnp.int32) < b).astype(jnp.int32))

    def skip(w, x, y):
        return w, zeros, zeros

    def step_at(width):
        def step(w, x, y):
            x, y = x[:width], y[:width]
            steps = [_step(w[0], lr, x, y, b), _step(w[1], lr, x, y, b, mean=True)]
            return tuple(jnp.stack(outputs) for outputs in zip(*steps, strict=True))  # new w, loss, grad

        return step

    branches = [skip] + [step_at(width) for width in widths]

    def step(w, inputs):
        i, x, y = inputs
        new_w, *outputs = lax.switch(jnp.where(i < n, 1 + width_index, 0), branches, w, x, y)
        return new_w, (new_w, *outputs)

    rows = -(-x_batches.shape[0] // _CHUNK) * _CHUNK
    x_batches, y_batches = (jnp.pad(a, ((0, rows - a.shape[0]), (0, 0))) for a in (x_batches, y_batches))

    def chunk(state):
        start, w, records = state
        xs, ys = (lax.dynamic_slice_in_dim(a, start, _CHUNK) for a in (x_batches, y_batches))
        w, outputs = lax.scan(step, w, (start + lax.iota(jnp.int32, _CHUNK), xs, ys))
        records = tuple(
            lax.dynamic_update_slice_in_dim(r, o, start, 0) for r, o in zip(records, outputs, strict=True)
        )
        return start + _CHUNK, w, records

    records = tuple(jnp.zeros((rows, 2), dtype) for _ in range(3))
    w = jnp.stack([w0, w0])
    _, _, (weights_after, losses, grads) = lax.while_loop(
        lambda state: state[0] < n, chunk, (jnp.int32(0), w, records)
    )
    weights = jnp.concatenate([w[None], weights_after])
    diverged = jnp.stack([_divergence_step(w0, weights_after[:, j], w_star, n) for j in range(2)])
    return weights, losses, grads, diverged


def _histories_from(outputs, n: int) -> dict:
    """{"sum": History, "mean": History} from the kernel's outputs."""
    weights, losses, grads, diverged = (np.asarray(a) for a in outputs)
    histories = {}
    for j, loss in enumerate(("sum", "mean")):
        k = int(diverged[j])
        histories[loss] = History(
            weights[: n + 1, j].copy(), losses[:n, j].copy(), grads[:n, j].copy(), None if k < 0 else k
        )
    return histories


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
    `scan_training_step`. Every (N, B) shape is its own compilation; `HistoryEngine` serves all
    shapes up to a capacity from one.
    """
    check_loss(loss)
    reject_traced("training_history", w, lr, x_batches, y_batches)
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    n, b = np.int32(x.shape[0]), np.int32(x.shape[1])
    return _histories_from(_history_kernel(w, lr, x, y, n, b, _w_star(x, y, n, b)), int(n))[loss]


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
        return PaddedBatches(padded[0], padded[1], n, b, _w_star(*padded, np.int32(n), np.int32(b)))

    def corner(self, batches: PaddedBatches, n, b) -> PaddedBatches:
        """The first n rows and b columns of `batches` as batches of their own, without copying:
        the engine ignores rows past n and columns past b, so this is `pad(x[:n, :b], y[:n, :b])`
        for every result, at the cost of one w* (a slider on N or B pads nothing)."""
        check_padded(batches)
        for name, value, limit in (("n", n, batches.n), ("b", b, batches.b)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
            if not 1 <= value <= limit:
                raise ValueError(f"{name} must lie in 1..{limit} (batches.{name}), got {value}")
        n, b = np.int32(n), np.int32(b)
        w_star = _w_star(batches.x, batches.y, n, b)
        # Ready before it returns: a scan dispatched on a pending w* overlaps less with the caller's
        # host work (measured on the explorer's B moves).
        w_star.block_until_ready()
        return PaddedBatches(batches.x, batches.y, int(n), int(b), w_star)

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
        outputs = _history_kernel(*padded_start("HistoryEngine.run", w, lr, batches))
        return functools.partial(_histories_from, outputs, batches.n)

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
    return _update(w, lr, _pairwise_sum(grads), b > 0)


def accumulated_gradient_step(w, lr, x_batches, y_batches):
    """The mistake the exercise warns about: every batch's gradient taken at the initial w, summed, and
    applied once. The worked example gives 0.8 here against 0.64 for `scan_training_step`.

    Same arguments, checks and carry dtype as `scan_training_step`; returns a 0-d jax array.
    """
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    return _accumulated_step(w, lr, x, y, _batch_size(x))


@jax.jit
def _one_step(w, lr, x, y, b):
    return _step(w, lr, x, y, b)[0]


def python_loop_training_step(w, lr, x_batches, y_batches):
    """The pure train-step pattern: a Python loop over the batches calling a jitted step. Same result as
    `scan_training_step`; the loop runs on the host, one dispatch per batch.

    Same arguments, checks and carry dtype as `scan_training_step`; returns a 0-d jax array.
    """
    reject_traced("python_loop_training_step", w, lr, x_batches, y_batches)
    w, lr, x, y = _prepare(w, lr, x_batches, y_batches)
    # Rows as NumPy views: indexing a jax array with each Python int would compile a slice per index.
    x_rows, y_rows, b = np.asarray(x), np.asarray(y), _batch_size(x)
    for x_row, y_row in zip(x_rows, y_rows, strict=True):
        w = _one_step(w, lr, x_row, y_row, b)
    return w
