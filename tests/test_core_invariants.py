"""What must hold between runs: sum vs mean, batch order, critical learning rate."""

import numpy as np
import pytest

import core


@pytest.mark.parametrize("seed", range(5))
def test_mean_with_lr_times_b_is_sum_with_lr(seed):
    x, y = core.make_batches(20, 8, seed=seed, noise=0.3)
    lr = 0.5 * core.critical_lr(x)
    summed = core.training_history(0.1, lr, x, y, loss="sum")
    averaged = core.training_history(0.1, lr * 8, x, y, loss="mean")
    np.testing.assert_allclose(averaged.weights, summed.weights, rtol=1e-5, atol=1e-6)
    # Same weights, and the mean's loss and gradient are the sum's divided by B.
    np.testing.assert_allclose(averaged.grads * 8, summed.grads, rtol=1e-4, atol=1e-5)


def test_mean_loss_at_the_same_lr_moves_b_times_less():
    x, y = core.make_batches(1, 8, seed=0, kind="ones")
    summed = core.training_history(0.0, 0.01, x, y, loss="sum")
    averaged = core.training_history(0.0, 0.01, x, y, loss="mean")
    np.testing.assert_allclose(summed.weights[1], 8 * averaged.weights[1], rtol=1e-6)


def test_batch_order_matters_for_generic_data():
    x, y = core.make_batches(30, 4, seed=7, noise=0.5)
    lr = 0.4 * core.critical_lr(x)
    forward = float(core.scan_training_step(0.0, lr, x, y))
    backward = float(core.scan_training_step(0.0, lr, x[::-1], y[::-1]))
    assert abs(forward - backward) > 1e-3


def test_final_weight_is_the_last_history_entry():
    x, y = core.make_batches(50, 5, seed=8, noise=0.2)
    history = core.training_history(0.3, 0.02, x, y)
    assert history.weights[-1] == np.asarray(core.scan_training_step(0.3, 0.02, x, y))


@pytest.mark.parametrize("loss", ["sum", "mean"])
@pytest.mark.parametrize("kind", ["ones", "tiled-gaussian"])
def test_just_below_and_above_critical_lr(loss, kind):
    if kind == "ones":
        x, y = core.make_batches(40, 4, seed=0, kind="ones")
    else:
        x1, y1 = core.make_batches(1, 6, seed=9)
        x, y = np.tile(x1, (40, 1)), np.tile(y1, (40, 1))
    w_star = core.optimum(x, y)
    critical = core.critical_lr(x, loss=loss)
    below = np.abs(core.training_history(0.0, 0.99 * critical, x, y, loss=loss).weights - w_star)
    above = np.abs(core.training_history(0.0, 1.01 * critical, x, y, loss=loss).weights - w_star)
    assert np.all(np.diff(below) < 0), "below critical_lr the error must shrink every step"
    assert np.all(np.diff(above) > 0), "above critical_lr the error must grow every step"
