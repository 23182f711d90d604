"""The one engine behind every run of the explorer: the scan over batches whose carry is
(params, opt_state), for any model of `core.model` (the lesson's {"w": w}, or {"w": w, "b": b}).

One compiled call runs both losses (the sum first, then the mean) over zero-padded batches, and its
work follows (N, B), not the padded arrays' shape: chunks of rows in a while loop that stops after
row N, each step reading only the columns of a width that covers B. Everything but the optimizer's
name and the params' leaves is traced, so one compilation per (model, optimizer, dtype) serves every
N, B, lr, params, momentum and schedule that fit the arrays. Padding changes no bit (`core.model`).

The public entry points are thin over `start`: `core.training_history` and `HistoryEngine` (the
lesson's w with plain SGD), `core.optimizer_history(ies)` (w with an optimizer and a schedule) and
`core.pytree_history(ies)` and `core.pytree_start` (either model's params, as the explorer runs
them). Each checks its arguments and reads the result its own way. A run of both losses at
N=1000, B=512 takes about 2.3 ms under "w" and 3.1 ms under "w, b" (`benchmarks.engine --pytree`).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core.model import batch_loss_and_grads, leaves, mean_of, pad_to_power_of_two, pairwise_sum, rounded, wide
from core.optimizers import make_optimizer

DIVERGENCE_RATIO = 1e6
"""A run has diverged at the first step whose params are non-finite, or whose distance from the
least-squares optimum (Euclidean over the leaves) exceeds DIVERGENCE_RATIO * max(1, that distance
at the start): the error grew a million-fold. When the optimum is undefined (every x zero, or every
x alike under an intercept) the distance is taken from the start."""

ALIKE = 1e-5
"""var(x) below this fraction of mean(x**2) counts as zero: every x alike within float32 rounding."""

CHUNK = 32
"""Steps per inner `lax.scan` of the engine's while loop."""


class PytreeHistory(NamedTuple):
    """Per-step record of one run of N steps, NumPy arrays in the carry dtype.

    params: {leaf: (N+1,)}, e.g. {"w", "b"}; row 0 is the start, row k+1 the params after step k.
    losses: (N,) the batch loss of step k at the params that step used.
    grads: {leaf: (N,)}, the gradients the optimizer was handed at step k.
    diverged_at: the first step whose params are non-finite or past the DIVERGENCE_RATIO limit;
        None if no step.
    states: the optimizer's state after each step, Optax's pytree, every leaf with leading axis N
        (for "momentum" and "nesterov" the trace is a dict like params; for "adam" mu and nu are).
    """

    params: dict
    losses: np.ndarray
    grads: dict
    diverged_at: int | None
    states: Any


def norm(components):
    """The Euclidean length of a vector given as its components (0-d or matching arrays): |c| of
    one, hypot of two (no overflow before the length itself does; a non-finite component gives a
    non-finite length)."""
    return functools.reduce(jnp.hypot, components[1:], jnp.abs(components[0]))


def divergence_step(start, after, reference, n):
    """First k < n whose after[k] (a 1-D array) is non-finite or farther from `reference` than
    DIVERGENCE_RATIO * max(1, |start - reference|), else -1; a non-finite `reference` is replaced
    by `start`. Computed in `reference`'s dtype."""
    dtype = reference.dtype
    start, after = start.astype(dtype), after.astype(dtype)
    reference = jnp.where(jnp.isfinite(reference), reference, start)
    limit = DIVERGENCE_RATIO * jnp.maximum(1.0, jnp.abs(start - reference))
    bad = ~jnp.isfinite(after) | (jnp.abs(after - reference) > limit)
    bad = bad & (lax.iota(jnp.int32, after.shape[0]) < n)
    return jnp.where(jnp.any(bad), jnp.argmax(bad), -1).astype(jnp.int32)


def _divergence(params0, after, star, n):
    """diverged_at's step (-1 for none): `divergence_step` on the distance from the optimum `star`
    ((D,), or from the start where it is undefined)."""
    names = leaves(params0)
    dtype = star.dtype
    start = jnp.stack([params0[key] for key in names]).astype(dtype)
    reference = jnp.where(jnp.all(jnp.isfinite(star)), star, start)
    distance = norm([after[key].astype(dtype) - reference[i] for i, key in enumerate(names)])
    return divergence_step(norm(list(start - reference)), distance, jnp.zeros((), dtype), n)


def chunked(step, carry, xs, n, outputs):
    """lax.scan of step(carry, (i, *row)) -> (carry, outputs) over the rows of `xs` (each (rows,
    ...)), but only as far as row n: chunks of CHUNK rows, each a lax.scan, inside a while loop
    that stops after row n (the work follows n, not the arrays' shape). Each chunk's outputs are
    written into zero records of `outputs`' shapes and dtypes (a pytree of ShapeDtypeStructs, one
    row's), rows rounded up to CHUNK; rows past n keep zeros. Returns (carry, records)."""
    rows = -(-xs[0].shape[0] // CHUNK) * CHUNK
    xs = [jnp.pad(a, [(0, rows - a.shape[0])] + [(0, 0)] * (a.ndim - 1)) for a in xs]
    records = jax.tree.map(lambda o: jnp.zeros((rows, *o.shape), o.dtype), outputs)

    def chunk(state):
        start, carry, records = state
        inputs = [start + lax.iota(jnp.int32, CHUNK)]
        inputs += [lax.dynamic_slice_in_dim(a, start, CHUNK) for a in xs]
        carry, out = lax.scan(step, carry, inputs)
        records = jax.tree.map(lambda r, o: lax.dynamic_update_slice_in_dim(r, o, start, 0), records, out)
        return start + CHUNK, carry, records

    _, carry, records = lax.while_loop(lambda state: state[0] < n, chunk, (jnp.int32(0), carry, records))
    return carry, records


def bucketed(x, y):
    """Unpadded (N, B) batches zero-padded to the engine's shape bucket: rows a power of two of at
    least CHUNK, columns a power of two. Padding changes no bit of a run (`core.model`), and one
    compilation then serves every (N, B) of a bucket, where each shape was its own (a minute of
    compiles per test module that varied N and B). Returns NumPy or jax arrays as given."""
    rows = max(CHUNK, 1 << (x.shape[0] - 1).bit_length())
    columns = 1 << (x.shape[1] - 1).bit_length()
    if (rows, columns) == x.shape:
        return x, y
    pad = jnp.pad if isinstance(x, jax.Array) else np.pad
    widths = [(0, rows - x.shape[0]), (0, columns - x.shape[1])]
    return pad(x, widths), pad(y, widths)


_NARROWEST = 16  # columns the narrowest branch of `switch_widths` reads


def _widths(full: int) -> list:
    """The widths `switch_widths` compiles for arrays of `full` (a power of two) columns: every
    power of two from _NARROWEST to full (full alone when narrower)."""
    return sorted({min(full, _NARROWEST << k) for k in range(full.bit_length())})


def switch_widths(x_batches, b, n, at_width, skip):
    """A row's step that reads only the first columns that cover b, of the widths `_widths` gives
    (16, 32, ..., the full width): at_width(width) is the step at one width, `skip` the step of a
    row past n. All widths are compiled together; one runs per row."""
    # Each width is a branch of the compiled step. Ten branches (1 to 512) held 54 MB per
    # optimizer in a kernel; every fourth power of two (16, 64, 256, full) held a third of it, but
    # read 1024 columns for B = 512: 2.8 ms a run of both losses at N = 1000 where the lesson's
    # kernel of before took 2.3. Every power of two from 16 (seven for 1024 columns) reads at most
    # 2x B's columns (16 for a smaller B): 2.35 ms, for about 35 MB more per process than four and
    # 0.3 s more to compile (2026-12-06, quiet). Masked columns change no bit.
    widths = _widths(pad_to_power_of_two(x_batches[0]).shape[-1])
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


def row_sums(x_batches, y_batches, n, b, sums):
    """sums(x, y, valid) -> (k,) for each row i < n, reading only the columns of
    `switch_widths`' width that covers b (`valid` masks the rest): (rows, k), zero past n."""

    def at_width(width):
        def step(carry, x, y):
            x, y = x[:width], y[:width]
            return carry, sums(x, y, lax.iota(jnp.int32, x.shape[-1]) < b)

        return step

    shape = jax.eval_shape(sums, x_batches[0], y_batches[0], jnp.ones(x_batches.shape[1], bool))
    skip = lambda carry, x, y: (carry, jnp.zeros(shape.shape, shape.dtype))  # noqa: E731
    step = switch_widths(x_batches, b, n, at_width, skip)
    return chunked(step, None, [x_batches, y_batches], n, shape)[1]


def least_squares(names, x_batches, y_batches, n, b):
    """The least-squares params of the model with leaves `names` on the first n rows and b
    columns, shape (D,) in the leaves' order, in at least float32 (pairwise sums per row, then over
    the rows: zero rows and columns drop out exactly, so the padding changes no bit).

    ("w",): sum(x*y) / sum(x*x), non-finite when every x is zero. ("w", "b"): centred in two
    passes (with a large mean(x), sum(x*x) - sum(x)**2/M would lose most of var(x) to
    cancellation); NaN when every x is alike."""
    dtype = wide(x_batches.dtype)

    def total(rows):
        return pairwise_sum(rows.T)

    def sums_of(*products):
        def sums(x, y, valid):
            x, y = x.astype(dtype), y.astype(dtype)
            return jnp.stack([pairwise_sum(rounded(v, valid)) for v in products[0](x, y)])

        return sums

    if "b" not in names:
        sxy, sxx = total(row_sums(x_batches, y_batches, n, b, sums_of(lambda x, y: (x * y, x * x))))
        return (sxy / sxx)[None]
    count = (n * b).astype(dtype)
    mean_x, mean_y, square = total(row_sums(x_batches, y_batches, n, b, sums_of(lambda x, y: (x, y, x * x))))
    mean_x, mean_y = mean_x / count, mean_y / count

    def centred(x, y):
        dx, dy = x - mean_x, y - mean_y
        return dx * dx, dx * dy

    var, cov = total(row_sums(x_batches, y_batches, n, b, sums_of(centred)))
    w_star = jnp.where(var > ALIKE * square, cov / var, jnp.nan)
    return jnp.stack([w_star, mean_y - w_star * mean_x])


class _Plain(NamedTuple):
    """Plain SGD as an (init, update) pair like Optax's, the lesson's own update: updates -lr * g,
    no state. optax.sgd(lr) gives the same bits ((-lr) * g is -(lr * g)), but importing Optax costs
    a kernel about 5 MB that the explorer's default runs never need (`core.optimizers.optax`)."""

    rate: Any

    def init(self, params):
        return ()

    def update(self, grads, state, params=None):
        return jax.tree.map(lambda g: -self.rate * g, grads), state


def _optimizer(optimizer: str, rate, momentum):
    """The update rule of that name at learning rate `rate` (traced): `_Plain` for "sgd", else
    `core.optimizers.make_optimizer`'s Optax optimizer."""
    return _Plain(rate) if optimizer == "sgd" else make_optimizer(optimizer, rate, momentum)


# A run that stays this close to its start cannot be past the divergence limit, DIVERGENCE_RATIO *
# max(1, d0) from the optimum, d0 = |start - optimum|: it is at most d0 + _NEAR from there, below
# the limit whatever d0 (a tenth of DIVERGENCE_RATIO to spare).
_NEAR = 0.9 * DIVERGENCE_RATIO


@functools.partial(jax.jit, static_argnames="optimizer")
def _histories_kernel(params0, lr, lrs, scheduled, momentum, x_batches, y_batches, n, b, *, optimizer):
    """Both losses' runs on the first n rows and b columns, one compiled call.

    The two carries (sum loss first, then mean) advance in one loop, so each batch row is read
    once, and the work follows (n, b), not the arrays' shape: chunks of rows in a while loop that
    stops after row n (`chunked`), each step reading the power-of-two columns that cover b
    (`switch_widths`). Each loss's arithmetic is its own (per-example values through selects,
    pairwise sums, Optax's update through a select: see `core.model.rounded`), so padding changes
    no bit; the two losses are two calls, not a vmap over the pair, which let the compiler round a
    few gradients differently. The optimum, which only places the divergence limit, is computed
    (`least_squares`) only when a run went _NEAR from its start.

    Everything is traced but `optimizer` (and the leaves of params0): one compilation per optimizer,
    model and array shape. Returns records (rows, 2D+1, 2): per step, the D params after it, the
    loss and the D gradients, of each loss; states (rows, 2, ...); diverged (2,). Rows past n are
    zero (rows: the arrays' rows rounded up to CHUNK). Few outputs, few transfers: `collect` cuts
    them on the host."""
    names = leaves(params0)
    means = jnp.array([False, True])
    state0 = _optimizer(optimizer, lr, momentum).init(params0)
    pair = jax.tree.map(lambda leaf: jnp.stack([leaf, leaf]), (params0, state0))

    def step_at(width):
        def step(carry, x, y, lr_k):
            x, y = x[:width], y[:width]
            rate = jnp.where(scheduled, lr_k, lr)  # a constant lr is closed over; a schedule's is scanned

            def one(params, state, mean):
                loss, grad = batch_loss_and_grads(params, x, y, b)
                loss = jnp.where(mean, mean_of(loss, b), loss)
                grad = jax.tree.map(lambda g: jnp.where(mean, mean_of(g, b), g), grad)
                updates, new_state = _optimizer(optimizer, rate, momentum).update(grad, state, params)
                # optax.apply_updates, each addition unfusable: see rounded.
                new_params = jax.tree.map(lambda p, u: p + rounded(u, b > 0), params, updates)
                return (new_params, new_state), loss, grad

            runs = [one(*jax.tree.map(lambda leaf, j=j: leaf[j], carry), means[j]) for j in range(2)]
            new, loss, grad = jax.tree.map(lambda *leaves: jnp.stack(leaves), *runs)
            # One (2D+1, 2) record a step, not 2D+1: each record written is a copy in the loop.
            record = jnp.stack([*(new[0][key] for key in names), loss, *(grad[key] for key in names)])
            return new, (record, new[1])

        return step

    zeros = _zeros_like_outputs(step_at(1), pair, (x_batches[0], y_batches[0], lrs[0]))
    skip = lambda carry, x, y, lr_k: (carry, zeros)  # noqa: E731
    _, (records, states) = chunked(
        switch_widths(x_batches, b, n, step_at, skip),
        pair,
        [x_batches, y_batches, lrs],
        n,
        jax.eval_shape(lambda: zeros),
    )
    after = {key: records[:, i] for i, key in enumerate(names)}
    dtype = wide(x_batches.dtype)
    start = [params0[key].astype(dtype) for key in names]
    away = norm([after[key].astype(dtype) - start[i] for i, key in enumerate(names)])
    live = (lax.iota(jnp.int32, away.shape[0]) < n)[:, None]
    far = jnp.any(live & ~(away < _NEAR))  # NaN counts as far
    star = lax.cond(
        far,
        lambda: least_squares(names, x_batches, y_batches, n, b),
        lambda: jnp.full(len(names), jnp.nan, dtype),  # the limit is then taken from the start: not reached
    )
    diverged = jnp.stack(
        [_divergence(params0, jax.tree.map(lambda p, j=j: p[:, j], after), star, n) for j in range(2)]
    )
    return records, states, diverged


def _history(outputs, params0, n: int, j: int) -> PytreeHistory:
    """Loss j's run (0 sum, 1 mean) of the kernel's outputs (NumPy) as a PytreeHistory, cut to
    the first n steps; params0 ({leaf: 0-d array}) is its row 0."""
    records, states, diverged = outputs
    names = leaves(params0)
    k = int(diverged[j])
    d = len(names)
    return PytreeHistory(
        {key: np.concatenate([params0[key][None], records[:n, i, j]]) for i, key in enumerate(names)},
        records[:n, d, j].copy(),
        {key: records[:n, d + 1 + i, j].copy() for i, key in enumerate(names)},
        None if k < 0 else k,
        jax.tree.map(lambda leaf: leaf[:n, j].copy(), states),
    )


def collect(outputs, params0, n: int) -> dict:
    """{"sum", "mean"} PytreeHistory from the kernel's outputs (records, states, diverged): three
    arrays brought over (the host waits for the run here), cut to the first n steps."""
    outputs = jax.tree.map(np.asarray, outputs)
    return {loss: _history(outputs, params0, n, j) for j, loss in enumerate(("sum", "mean"))}


def start(params, lr, x, y, n, b, *, optimizer="sgd", momentum, lrs=None):
    """Dispatch both losses' runs and return a function that waits for them and returns
    {"sum": PytreeHistory, "mean": PytreeHistory}.

    Arguments are the callers', checked and cast: params {leaf: 0-d NumPy array} and lr (0-d) in
    the carry dtype; x, y (rows, columns) arrays of that dtype; n and b int32 (b may be a value the
    compiler cannot see, as `core.training` passes it); momentum a 0-d array of the carry dtype;
    lrs None (a constant lr) or (rows,) per-step learning rates, NumPy of the carry dtype (a jax
    array each would cost 0.1 ms a move). JAX dispatches the compiled call asynchronously: host
    work done before calling the result runs while the scan does.
    """
    scheduled = np.bool_(lrs is not None)
    if lrs is None:
        lrs = np.zeros(x.shape[0], lr.dtype)
    outputs = _histories_kernel(params, lr, lrs, scheduled, momentum, x, y, n, b, optimizer=optimizer)
    return functools.partial(collect, outputs, params, int(n))
