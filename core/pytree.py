"""The carry as a parameter pytree: the model y = w*x + b with params {"w": w, "b": b}.

The scan's carry is (params, opt_state); a step takes each batch's loss and gradient by
`jax.value_and_grad` over the dict and updates every leaf with `jax.tree.map`. The update itself
is Optax's, as in `core.optimizers` (optax.sgd's is -lr * g, so plain SGD is
`jax.tree.map(lambda p, g: p - lr * g, params, grads)`). The arithmetic is the engine's, made
padding-proof the same way (`core.training._rounded`), so a run on a `HistoryEngine` corner gives
the unpadded run's params bit for bit, and one compilation per optimizer serves every N, B, loss,
lr, params, momentum and schedule that fit the padded arrays.

Like the engine's kernel (`core.training._history_kernel`), one compiled call runs both losses,
and its work follows (N, B), not the padded arrays' shape: a move of the explorer's "w, b" model
at N=1000, B=512 went from about 18 ms (two calls over every padded row and column) to about 2.5
ms, against about 1.8 ms for the "w" model (`benchmarks/engine.py --pytree`).
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
from core.optimizers import MOMENTUM, _check_schedule, check_optimizer, make_optimizer
from core.training import (
    _CHUNK,
    DIVERGENCE_RATIO,
    PaddedBatches,
    _batch_size,
    _divergence_step,
    _mean_of,
    _pad_to_power_of_two,
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


def _divergence(params0, after, star, n):
    """diverged_at's step (-1 for none): the 1-D rule of `_divergence_step` on the Euclidean
    distance from (w*, b*), or from the start where (w*, b*) is undefined."""
    wide = star.dtype
    start = jnp.stack([params0[key] for key in PARAMS]).astype(wide)
    reference = jnp.where(jnp.all(jnp.isfinite(star)), star, start)
    # hypot: no overflow before the distance itself does; non-finite params give a non-finite one.
    distance = jnp.hypot(*(after[key].astype(wide) - reference[i] for i, key in enumerate(PARAMS)))
    return _divergence_step(jnp.hypot(*(start - reference)), distance, jnp.zeros((), wide), n)


def _chunked(step, carry, xs, n, outputs):
    """lax.scan of step(carry, (i, *row)) -> (carry, outputs) over the rows of `xs` (each (rows,
    ...)), but only as far as row n: chunks of _CHUNK rows, each a lax.scan, inside a while loop
    that stops after row n (the work follows n, not the arrays' shape). Each chunk's outputs are
    written into zero records of `outputs`' shapes and dtypes (a pytree of ShapeDtypeStructs, one
    row's), rows rounded up to _CHUNK; rows past n keep zeros. Returns (carry, records)."""
    rows = -(-xs[0].shape[0] // _CHUNK) * _CHUNK
    xs = [jnp.pad(a, [(0, rows - a.shape[0])] + [(0, 0)] * (a.ndim - 1)) for a in xs]
    records = jax.tree.map(lambda o: jnp.zeros((rows, *o.shape), o.dtype), outputs)

    def chunk(state):
        start, carry, records = state
        inputs = [start + lax.iota(jnp.int32, _CHUNK)]
        inputs += [lax.dynamic_slice_in_dim(a, start, _CHUNK) for a in xs]
        carry, out = lax.scan(step, carry, inputs)
        records = jax.tree.map(lambda r, o: lax.dynamic_update_slice_in_dim(r, o, start, 0), records, out)
        return start + _CHUNK, carry, records

    _, carry, records = lax.while_loop(lambda state: state[0] < n, chunk, (jnp.int32(0), carry, records))
    return carry, records


_NARROWEST = 16  # columns the narrowest branch of `_switch_widths` reads


def _switch_widths(x_batches, b, n, at_width, skip):
    """A row's step that reads only the first columns that cover b, of a few widths (16, 64, 256
    and the full width): at_width(width) is the step at one width, `skip` the step of a row past n.
    All widths are compiled together; one runs per row."""
    # Every fourth power of two from _NARROWEST, and the full width: each width is a branch of the
    # compiled step, and ten branches (1 to 512) held 54 MB per optimizer in a kernel; these four
    # hold about a third of it, and a batch reads at most 4x its columns (masked: no bit changes).
    full = _pad_to_power_of_two(x_batches[0]).shape[-1]
    widths = sorted({min(full, _NARROWEST << (2 * k)) for k in range(full.bit_length())})
    width_index = jnp.sum((jnp.asarray(widths, dtype=jnp.int32) < b).astype(jnp.int32))
    branches = [skip] + [at_width(width) for width in widths]

    def step(carry, inputs):
        i, *row = inputs
        return lax.switch(jnp.where(i < n, 1 + width_index, 0), branches, carry, *row)

    return step


def _zeros_like_outputs(step, carry, row):
    """step's per-row outputs as zeros: what a skipped row returns."""
    shapes = jax.eval_shape(step, carry, *row)[1]
    return jax.tree.map(lambda o: jnp.zeros(o.shape, o.dtype), shapes)


def _row_sums(x_batches, y_batches, n, b, sums):
    """sums(x, y, valid) -> (k,) for each row i < n, reading only the columns of
    `_switch_widths`' width that covers b (`valid` masks the rest): (rows, k), zero past n."""

    def at_width(width):
        def step(carry, x, y):
            x, y = x[:width], y[:width]
            return carry, sums(x, y, lax.iota(jnp.int32, x.shape[-1]) < b)

        return step

    shape = jax.eval_shape(sums, x_batches[0], y_batches[0], jnp.ones(x_batches.shape[1], bool))
    skip = lambda carry, x, y: (carry, jnp.zeros(shape.shape, shape.dtype))  # noqa: E731
    step = _switch_widths(x_batches, b, n, at_width, skip)
    return _chunked(step, None, [x_batches, y_batches], n, shape)[1]


def _least_squares(x_batches, y_batches, n, b):
    """(w*, b*) of the first n rows and b columns, shape (2,), in at least float32; NaN when every
    x is alike. Centred in two passes: with a large mean(x), sum(x*x) - sum(x)**2/M would lose
    most of var(x) to cancellation. Each pass reads only the first n rows and the columns of
    the width that covers b (`_switch_widths`): pairwise sums per row, then over the rows (zero
    rows and columns drop out of a pairwise sum exactly, so the padding changes no bit)."""
    wide = _wide(x_batches.dtype)

    def total(rows):
        return _pairwise_sum(rows.T)

    def first(x, y, valid):
        x, y = x.astype(wide), y.astype(wide)
        return jnp.stack([_pairwise_sum(_rounded(v, valid)) for v in (x, y, x * x)])

    count = (n * b).astype(wide)
    mean_x, mean_y, square = total(_row_sums(x_batches, y_batches, n, b, first))
    mean_x, mean_y = mean_x / count, mean_y / count

    def centred(x, y, valid):
        dx, dy = x.astype(wide) - mean_x, y.astype(wide) - mean_y
        return jnp.stack([_pairwise_sum(_rounded(v, valid)) for v in (dx * dx, dx * dy)])

    var, cov = total(_row_sums(x_batches, y_batches, n, b, centred))
    w_star = jnp.where(var > _ALIKE * square, cov / var, jnp.nan)
    return jnp.stack([w_star, mean_y - w_star * mean_x])


# A run that stays this close to its start (Euclidean distance in (w, b)) cannot be past the
# divergence limit, DIVERGENCE_RATIO * max(1, d0) from (w*, b*), d0 = |start - (w*, b*)|: it is at
# most d0 + _NEAR from there, below the limit whatever d0 (a tenth of DIVERGENCE_RATIO to spare).
_NEAR = 0.9 * DIVERGENCE_RATIO


@functools.partial(jax.jit, static_argnames="optimizer")
def _histories_kernel(params0, lr, lrs, scheduled, momentum, x_batches, y_batches, n, b, *, optimizer):
    """Both losses' runs of y = w*x + b on the first n rows and b columns, one compiled call.

    The two carries (sum loss first, then mean) advance in one loop, so each batch row is read
    once, and the work follows (n, b), not the arrays' shape, as `_history_kernel`'s: chunks of
    rows in a while loop that stops after row n (`_chunked`), each step reading the power-of-two
    columns that cover b (`_switch_widths`). Each loss's arithmetic is `pytree_history`'s alone
    (per-example values through selects, pairwise sums, Optax's update through a select: see
    `_rounded`), so padding changes no bit; the two losses are two calls, not a vmap over the pair,
    which let the compiler round a few gradients differently. (w*, b*), which only places the
    divergence limit, is computed (`_least_squares`) only when a run went _NEAR from its start.

    Everything is traced but `optimizer`: one compilation per optimizer and array shape. Returns
    records (rows, 5, 2): per step, the params after it (w, b), the loss and the gradients (w, b),
    of each loss; states (rows, 2, ...); diverged (2,). Rows past n are zero (rows: the arrays'
    rows rounded up to _CHUNK). Few outputs, few transfers: `_histories` cuts them on the host."""
    means = jnp.array([False, True])
    state0 = make_optimizer(optimizer, lr, momentum).init(params0)
    pair = jax.tree.map(lambda leaf: jnp.stack([leaf, leaf]), (params0, state0))

    def step_at(width):
        def step(carry, x, y, lr_k):
            x, y = x[:width], y[:width]
            rate = jnp.where(scheduled, lr_k, lr)

            def one(params, state, mean):
                loss, grad = _batch_loss_and_grads(params, x, y, b)
                loss = jnp.where(mean, _mean_of(loss, b), loss)
                grad = jax.tree.map(lambda g: jnp.where(mean, _mean_of(g, b), g), grad)
                updates, new_state = make_optimizer(optimizer, rate, momentum).update(grad, state, params)
                # optax.apply_updates, each addition unfusable: see _rounded.
                new_params = jax.tree.map(lambda p, u: p + _rounded(u, b > 0), params, updates)
                return (new_params, new_state), loss, grad

            runs = [one(*jax.tree.map(lambda leaf, j=j: leaf[j], carry), means[j]) for j in range(2)]
            new, loss, grad = jax.tree.map(lambda *leaves: jnp.stack(leaves), *runs)
            # One (5, 2) record a step, not five: each record written is a copy in the loop.
            record = jnp.stack([new[0]["w"], new[0]["b"], loss, grad["w"], grad["b"]])
            return new, (record, new[1])

        return step

    zeros = _zeros_like_outputs(step_at(1), pair, (x_batches[0], y_batches[0], lrs[0]))
    skip = lambda carry, x, y, lr_k: (carry, zeros)  # noqa: E731
    _, (records, states) = _chunked(
        _switch_widths(x_batches, b, n, step_at, skip),
        pair,
        [x_batches, y_batches, lrs],
        n,
        jax.eval_shape(lambda: zeros),
    )
    after = {"w": records[:, 0], "b": records[:, 1]}
    wide = _wide(x_batches.dtype)
    start = [params0[key].astype(wide) for key in PARAMS]
    away = jnp.hypot(*(after[key].astype(wide) - start[i] for i, key in enumerate(PARAMS)))
    live = (lax.iota(jnp.int32, away.shape[0]) < n)[:, None]
    far = jnp.any(live & ~(away < _NEAR))  # NaN counts as far
    star = lax.cond(
        far,
        lambda: _least_squares(x_batches, y_batches, n, b),
        lambda: jnp.full(2, jnp.nan, wide),  # the limit is then taken from the start: not reached
    )
    diverged = jnp.stack(
        [_divergence(params0, jax.tree.map(lambda p, j=j: p[:, j], after), star, n) for j in range(2)]
    )
    return records, states, diverged


def _history(outputs, params0, n: int, j: int) -> PytreeHistory:
    """Loss j's run (0 sum, 1 mean) of the kernel's outputs (NumPy) as a PytreeHistory, cut to
    the first n steps; params0 ({key: 0-d array}) is its row 0."""
    records, states, diverged = outputs
    k = int(diverged[j])
    params = {key: np.concatenate([params0[key][None], records[:n, i, j]]) for i, key in enumerate(PARAMS)}
    return PytreeHistory(
        params,
        records[:n, 2, j].copy(),
        {key: records[:n, 3 + i, j].copy() for i, key in enumerate(PARAMS)},
        None if k < 0 else k,
        jax.tree.map(lambda leaf: leaf[:n, j].copy(), states),
    )


def _histories(outputs, params0, n: int) -> dict:
    """{"sum", "mean"} PytreeHistory from the kernel's outputs (records (rows, 5, 2) of w, b,
    loss, grad w, grad b; states; diverged (2,)): three arrays brought over, cut on the host."""
    outputs = jax.tree.map(np.asarray, outputs)
    return {loss: _history(outputs, params0, n, j) for j, loss in enumerate(("sum", "mean"))}


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
    """(lrs (rows,), scheduled): the checked schedule zero-padded to the arrays' rows, as NumPy
    (the compiled call takes them as they are; a jax array each would cost 0.1 ms a move)."""
    lrs = np.zeros(rows)
    if lr_schedule is not None:
        lrs[:n] = _check_schedule(lr_schedule, n)
    return np.asarray(lrs, dtype), np.bool_(lr_schedule is not None)


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
    n = np.int32(x.shape[0])
    lrs, scheduled = _schedule(lr_schedule, int(n), int(n), dtype)
    kernel = _histories_kernel(
        params, lr, lrs, scheduled, np.asarray(momentum, dtype), x, y, n, _batch_size(x), optimizer=optimizer
    )
    # The padded engine's kernel at this shape: both losses run, one kept (as training_history).
    return _histories(kernel, params, int(n))[loss]


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
      serves every n, b, params, lr, momentum and schedule that fit the padded arrays. Both losses
      and (w*, b*) come from one compiled call whose work follows (n, b), not the arrays' shape.
    """
    check_optimizer(optimizer)
    check_padded(batches)
    params, lr, momentum, dtype = _start(
        "pytree_histories", params, lr, momentum, lr_schedule, batches.x, batches.y
    )
    x, y = (a if a.dtype == dtype else a.astype(dtype) for a in (batches.x, batches.y))
    n, b = np.int32(batches.n), np.int32(batches.b)
    lrs, scheduled = _schedule(lr_schedule, batches.n, x.shape[0], dtype)
    kernel = _histories_kernel(
        params, lr, lrs, scheduled, np.asarray(momentum, dtype), x, y, n, b, optimizer=optimizer
    )
    return _histories(kernel, params, batches.n)


__all__ = ["PytreeHistory", "pytree_histories", "pytree_history"]
