"""core.lesson, the loop the explorer shows first beside its charts: it runs, and it gives the charts'
numbers. The engine pads and adds in another order, so the claim is float32 rounding, measured on
200 random stable settings at 1.2e-6 of the trajectory's extent for the weights and 8e-6 relative
for the losses away from zero (the bounds below leave a margin of about 8)."""

import jax
import numpy as np
import pytest

import core
from core import lesson
from harness.support.reference import batches_for, reference_history
from widgets import DEFAULTS
from widgets.model import MAP_LRS, Model

lesson_history = jax.jit(lesson.lesson_history)


@pytest.fixture(scope="module")
def model():
    return Model()


def random_stable_settings(rng, model):
    """Random data and N, B, w0, with lr between 5% and 98% of the sum loss's critical lr."""
    settings = DEFAULTS._replace(
        N=int(rng.integers(1, 400)),
        B=int(rng.integers(1, 200)),
        w0=float(rng.uniform(-10, 10)),
        true_w=float(rng.uniform(-5, 5)),
        noise=float(rng.uniform(0, 2)),
        seed=int(rng.integers(0, 10_000)),
        kind=str(rng.choice(["gaussian", "ones"])),
    )
    critical = model.compute(settings).critical_lr["sum"]
    return settings._replace(lr=float(f"{critical * rng.uniform(0.05, 0.98):.6g}"))


def test_the_worked_example():
    ones = np.ones((2, 2), np.float32)
    weights, losses = lesson_history(np.float32(0.0), np.float32(0.1), ones, ones)
    np.testing.assert_allclose(weights, [0.0, 0.4, 0.64], rtol=1e-6)
    np.testing.assert_allclose(losses, [2.0, 0.72], rtol=1e-6)  # sum((w*1 - 1)**2) at w = 0, then 0.4


@pytest.mark.parametrize("case", range(40))
def test_the_lesson_gives_the_charts_numbers(model, case):
    rng = np.random.default_rng(1000 + case)
    settings = random_stable_settings(rng, model)
    result = model.compute(settings)
    drawn = result.histories["sum"]
    assert drawn.diverged_at is None
    x, y = batches_for(settings)
    weights, losses = lesson_history(np.float32(settings.w0), np.float32(settings.lr), x, y)
    extent = max(1.0, float(np.max(np.abs(drawn.params["w"] - result.w_star))))
    np.testing.assert_allclose(weights, drawn.params["w"], rtol=0, atol=1e-5 * extent)
    # A loss near zero is a difference of nearly equal numbers: rounded against the run's largest.
    np.testing.assert_allclose(losses, drawn.losses, rtol=5e-5, atol=1e-6 * float(np.max(drawn.losses)))
    # And both are the float64 loop the lesson states, to float32 rounding.
    want, want_losses, _ = reference_history(settings.w0, np.float32(settings.lr), x, y)
    np.testing.assert_allclose(weights, want, rtol=0, atol=1e-5 * extent)


def test_the_lesson_keeps_the_batches_dtype_and_shapes():
    x = np.random.default_rng(0).normal(size=(7, 3))
    weights, losses = lesson_history(0.0, 0.01, x.astype(np.float32), 2 * x.astype(np.float32))
    assert weights.shape == (8,) and losses.shape == (7,)
    assert weights.dtype == losses.dtype == np.float32


@pytest.mark.parametrize("b", [1, 8, 64])
def test_a_row_of_the_stability_map_is_the_lesson_at_every_lr(b):
    # The map reads each batch through two sums (core.stability), the lesson the batch itself: the
    # two agree where the error is large enough for float32 to show it.
    x, y = core.make_batches(120, b, seed=3, noise=0.5)
    engine = core.HistoryEngine(120, 64)
    drawn = core.stability_map(engine.pad(x, y), MAP_LRS, [b], w0=0.0, n=120)
    finals = np.asarray(jax.jit(lesson.final_weights)(np.float32(0.0), MAP_LRS.astype(np.float32), x, y))
    error = np.log10(np.abs(finals.astype(np.float64) - core.optimum(x, y)))
    shown = drawn.log10_error["sum"][0]
    visible = np.isfinite(shown) & (shown > -3) & (shown < 3)
    assert visible.sum() >= 10, shown
    np.testing.assert_allclose(error[visible], shown[visible], atol=1e-3)
    diverged = finals[drawn.diverged["sum"][0]]
    assert diverged.size and np.all(~np.isfinite(diverged) | (np.abs(diverged) > 1e3))


pytree_lesson_history = jax.jit(lesson.pytree_lesson_history)


@pytest.mark.parametrize("case", range(30))
def test_the_pytree_loop_gives_the_w_b_charts_numbers(model, case):
    # The Code part of the w, b model's charts: its loop with jax.tree.map gives what they draw.
    rng = np.random.default_rng(3000 + case)
    settings = random_stable_settings(rng, model)._replace(
        model="w,b",
        b0=float(rng.uniform(-5, 5)),
        true_b=float(rng.uniform(-3, 3)),
        x_mean=float(rng.uniform(-3, 3)),
    )
    critical = model.compute(settings).critical_lr["sum"]
    settings = settings._replace(lr=float(f"{critical * rng.uniform(0.05, 0.98):.6g}"))
    result = model.compute(settings)
    drawn = result.histories["sum"]
    assert drawn.diverged_at is None
    x, y = batches_for(settings)
    params = {"w": np.float32(settings.w0), "b": np.float32(settings.b0)}
    history, losses = pytree_lesson_history(params, np.float32(settings.lr), x, y)
    distance = np.hypot(drawn.params["w"] - result.w_star, drawn.params["b"] - result.b_star)
    extent = max(1.0, float(np.max(distance)))
    np.testing.assert_allclose(history["w"], drawn.params["w"], rtol=0, atol=1e-5 * extent)
    np.testing.assert_allclose(history["b"], drawn.params["b"], rtol=0, atol=1e-5 * extent)
    np.testing.assert_allclose(losses, drawn.losses, rtol=5e-5, atol=1e-6 * float(np.max(drawn.losses)))
