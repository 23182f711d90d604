"""An independent float64 NumPy reference for seed 000's loop, written from the seed's formulas."""

import numpy as np


def reference_history(w, lr, x_batches, y_batches, loss="sum"):
    """weights (N+1,), losses (N,), grads (N,) in float64, one Python iteration per batch."""
    x = np.asarray(x_batches, dtype=np.float64)
    y = np.asarray(y_batches, dtype=np.float64)
    w = float(w)
    scale = x.shape[1] if loss == "mean" else 1
    weights, losses, grads = [w], [], []
    for xk, yk in zip(x, y, strict=True):
        error = w * xk - yk
        batch_loss = np.sum(error**2) / scale
        grad = 2 * np.sum(error * xk) / scale
        w = w - float(lr) * grad
        weights.append(w)
        losses.append(batch_loss)
        grads.append(grad)
    return np.array(weights), np.array(losses), np.array(grads)


def batches_for(settings):
    """The explorer's data for a widgets Settings, straight from core.make_batches."""
    import core

    return core.make_batches(
        settings.N,
        settings.B,
        seed=settings.seed,
        kind=settings.kind,
        true_w=settings.true_w,
        noise=settings.noise,
    )
