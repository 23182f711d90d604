"""Seed 000's worked example, to the digit, through every public path."""

import jax
import numpy as np
import pytest

import core


@pytest.fixture
def seed_batches():
    return core.make_batches(2, 2, seed=0, kind="ones")


def test_seed_data_is_ones(seed_batches):
    x, y = seed_batches
    np.testing.assert_array_equal(x, np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(y, np.ones((2, 2), np.float32))


def test_seed_steps_0_4_then_0_64(seed_batches):
    history = core.training_history(0.0, 0.1, *seed_batches)
    np.testing.assert_allclose(history.weights, [0.0, 0.4, 0.64], rtol=1e-6)
    np.testing.assert_allclose(history.grads, [-4.0, -2.4], rtol=1e-6)
    # Batch loss at the weight the step used: sum((0*1 - 1)**2) = 2, then sum((0.4 - 1)**2) = 0.72.
    np.testing.assert_allclose(history.losses, [2.0, 0.72], rtol=1e-6)
    assert history.diverged_at is None


def test_seed_final_weight(seed_batches):
    final_w = core.scan_training_step(0.0, 0.1, *seed_batches)
    assert final_w.shape == ()
    np.testing.assert_allclose(float(final_w), 0.64, rtol=1e-6)


def test_accumulated_gradients_give_0_8_not_0_64(seed_batches):
    accumulated = float(core.accumulated_gradient_step(0.0, 0.1, *seed_batches))
    sequential = float(core.scan_training_step(0.0, 0.1, *seed_batches))
    np.testing.assert_allclose(accumulated, 0.8, rtol=1e-6)
    assert abs(accumulated - sequential) > 0.15


def test_seed_in_float64_is_exact_to_rounding():
    with jax.enable_x64(True):
        x, y = core.make_batches(2, 2, seed=0, kind="ones", dtype=np.float64)
        history = core.training_history(0.0, 0.1, x, y)
        assert history.weights.dtype == np.float64
        np.testing.assert_allclose(history.weights, [0.0, 0.4, 0.64], rtol=1e-15)


def test_python_loop_matches_scan(seed_batches):
    loop = core.python_loop_training_step(0.0, 0.1, *seed_batches)
    assert float(loop) == float(core.scan_training_step(0.0, 0.1, *seed_batches))


def test_scan_is_used():
    x, y = core.make_batches(3, 2, seed=0)
    jaxpr = jax.make_jaxpr(core.scan_training_step)(0.0, 0.1, x, y)
    assert "scan" in str(jaxpr)
