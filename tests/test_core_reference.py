"""core against the float64 NumPy reference on seeded random cases, sum and mean."""

import numpy as np
import pytest

import core
from harness.support.reference import reference_history

SHAPES = [(1, 1), (1, 7), (2, 1), (3, 3), (5, 16), (17, 2), (33, 100), (64, 9)]
CASES = [(i, *SHAPES[i % len(SHAPES)], loss) for i in range(28) for loss in ("sum", "mean")]


def _case(index, n, b, loss):
    rng = np.random.default_rng(index)
    kind = "ones" if index % 7 == 3 else "gaussian"
    x, y = core.make_batches(
        n, b, seed=index, kind=kind, true_w=float(rng.uniform(-3, 3)), noise=float(rng.uniform(0, 1))
    )
    # A stable learning rate (a fraction of the critical one) keeps float32 rounding from being amplified.
    lr = float(rng.uniform(0.05, 0.9)) * core.critical_lr(x, loss=loss)
    w0 = float(rng.normal())
    return w0, lr, x, y


@pytest.mark.parametrize(("index", "n", "b", "loss"), CASES)
def test_history_matches_float64_reference(index, n, b, loss):
    w0, lr, x, y = _case(index, n, b, loss)
    weights, losses, grads = reference_history(w0, lr, x, y, loss)
    history = core.training_history(w0, lr, x, y, loss=loss)
    assert history.weights.shape == (n + 1,) and history.losses.shape == (n,) and history.grads.shape == (n,)
    assert history.weights[0] == np.float32(w0)
    # float32 data and carry against float64: a few ulps per step, relative to the values' scale.
    scale = max(1.0, np.max(np.abs(weights)))
    np.testing.assert_allclose(history.weights, weights, rtol=0, atol=2e-5 * scale * np.sqrt(n))
    np.testing.assert_allclose(history.losses, losses, rtol=2e-4, atol=1e-4 * max(1.0, np.max(losses)))
    np.testing.assert_allclose(history.grads, grads, rtol=2e-4, atol=1e-4 * max(1.0, np.max(np.abs(grads))))
    assert history.diverged_at is None
    if loss == "sum":
        final = core.scan_training_step(w0, lr, x, y)
        assert float(final) == float(history.weights[-1])


def test_reference_cases_cover_the_corners():
    shapes = {(n, b) for _, n, b, _ in CASES}
    assert len(CASES) >= 50
    assert any(n == 1 for n, _ in shapes) and any(b == 1 for _, b in shapes)
