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
