"""The training loop the lesson teaches, as a learner writes it: a loss, a step, and `lax.scan`.

This is the code the explorer shows first beside its charts, and it runs: `core.timing` times it,
`core.strategies` closes its learning rate over, and the tests check that it gives the charts'
numbers. The engine behind the charts (`core.training`) takes the same steps on zero-padded arrays,
so that one compiled program serves every N and B; that changes the order of the additions, so the
two agree within float32 rounding, not bit for bit. No input checks here: the checked entry points
are `core.scan_training_step` and `core.training_history`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def batch_loss(w, x, y):
    """The lesson's loss on one batch: sum((w*x - y)**2). w: float32 scalar; x, y: float32 (B,)."""
    return jnp.sum((w * x - y) ** 2)


def train_step(w, lr, x, y):
    """One gradient-descent step on one batch: returns (new w, the batch's loss at the old w)."""
    loss, grad = jax.value_and_grad(batch_loss)(w, x, y)
    return w - lr * grad, loss


def lesson_history(w, lr, x_batches, y_batches):
    """One step per batch with `lax.scan`, keeping every step: returns (weights (N+1,), losses (N,)),
    weights[0] = w and weights[k+1] the weight after step k, in the batches' dtype."""

    def step(w, batch):
        x, y = batch
        new_w, loss = train_step(w, lr, x, y)  # lr: closed over, the same at every step
        return new_w, (new_w, loss)  # the carry, and this step's outputs for the history

    w = jnp.asarray(w, x_batches.dtype)
    final_w, (weights, losses) = lax.scan(step, w, (x_batches, y_batches))
    return jnp.concatenate([w[None], weights]), losses


def final_weights(w, lrs, x_batches, y_batches):
    """A row of the stability map: the final weight at every learning rate in `lrs` (L,), from one
    `jax.vmap` of the lesson's scan; returns (L,)."""
    return jax.vmap(lambda lr: lesson_history(w, lr, x_batches, y_batches)[0][-1])(lrs)


def pytree_batch_loss(params, x, y):
    """The loss of y = w*x + b on one batch, its params a pytree: params {"w": w, "b": b}, float32
    scalars; x, y: float32 (B,). Returns sum((w*x + b - y)**2)."""
    return jnp.sum((params["w"] * x + params["b"] - y) ** 2)


def pytree_train_step(params, lr, x, y):
    """One gradient-descent step on one batch, every leaf of the params at once: `jax.grad` of a
    function of a dict gives a dict of gradients, and `jax.tree.map` pairs each param with its own.
    Returns (new params, the batch's loss at the old ones)."""
    loss, grads = jax.value_and_grad(pytree_batch_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss


def pytree_lesson_history(params, lr, x_batches, y_batches):
    """`lesson_history` with the params pytree as the carry: returns (history, losses (N,)), history
    {"w": (N+1,), "b": (N+1,)} with row 0 the start, in the batches' dtype."""

    def step(params, batch):
        x, y = batch
        new_params, loss = pytree_train_step(params, lr, x, y)
        return new_params, (new_params, loss)  # the carry is the whole dict

    params = jax.tree.map(lambda p: jnp.asarray(p, x_batches.dtype), params)
    final, (history, losses) = lax.scan(step, params, (x_batches, y_batches))
    return jax.tree.map(lambda p0, p: jnp.concatenate([p0[None], p]), params, history), losses
