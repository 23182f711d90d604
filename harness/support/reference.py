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


ADAM = (0.9, 0.999, 1e-8)  # optax.adam's b1, b2 and eps


def optimizer_update(optimizer, g, state, rate, momentum, k):
    """One update of `optimizer` ("sgd", "momentum", "nesterov" or "adam") as Optax defines it, in
    float64: (the update to add to the parameters, the new state) for the gradient g (a float or an
    array) at step k (0-based); state is (trace, mu, nu), zeros at the start."""
    trace, mu, nu = state
    if optimizer == "sgd":
        return -rate * g, state
    if optimizer in ("momentum", "nesterov"):
        trace = g + momentum * trace
        step = g + momentum * trace if optimizer == "nesterov" else trace
        return -rate * step, (trace, mu, nu)
    b1, b2, eps = ADAM
    mu = b1 * mu + (1 - b1) * g
    nu = b2 * nu + (1 - b2) * g * g
    mu_hat, nu_hat = mu / (1 - b1 ** (k + 1)), nu / (1 - b2 ** (k + 1))
    return -rate * mu_hat / (np.sqrt(nu_hat) + eps), (trace, mu, nu)


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
        # The w, b model's data; the lesson's w draws the lesson's, whatever the settings say.
        x_mean=settings.x_mean if settings.model == "w,b" else 0.0,
        true_b=settings.true_b if settings.model == "w,b" else 0.0,
    )
