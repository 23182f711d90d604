"""Issue 5: the linear model with pytree parameters and Optax optimizers (seed 004)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from core.linear import LinearFit, init_params, train_linear
from core.optimizers import OPTIMIZERS

TRUE_W = np.array([2.0, -1.0, 0.5])
MORE_W = np.array([2.0, -1.0, 0.5, 1.5])
TRUE_B = 3.0


def noisy_data(n=48, d=3, seed=0, noise=0.5):
    """float32 x (n, d) and y (n,) = x @ MORE_W[:d] + TRUE_B + noise: the noise keeps minibatch
    gradients away from zero, where float32 rounding would steer Adam's normalised steps."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = (x @ MORE_W[:d] + TRUE_B + noise * rng.normal(size=n)).astype(np.float32)
    return x, y


def reference_fit(x, y, *, optimizer, lr, steps, batch_size, w0):
    """float64 NumPy: the same run with the update formulas written out, Optax's conventions.

    sgd: p -= lr * g. momentum: t = g + 0.9 * t; p -= lr * t. nesterov: the same t;
    p -= lr * (g + 0.9 * t). adam: m = 0.9 m + 0.1 g,
    v = 0.999 v + 0.001 g**2, p -= lr * (m / (1 - 0.9**k)) / (sqrt(v / (1 - 0.999**k)) + 1e-8).
    Step k uses rows [j * bs, (j + 1) * bs), j = k mod (n // bs).
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    n = x.shape[0]
    bs = n if batch_size is None else batch_size
    p = np.concatenate([np.asarray(w0, np.float64), [0.0]])  # w then b
    t, m, v = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    losses, history = [], []
    for k in range(steps):
        j = k % (n // bs)
        xb, yb = x[j * bs : (j + 1) * bs], y[j * bs : (j + 1) * bs]
        err = xb @ p[:-1] + p[-1] - yb
        losses.append(np.mean(err**2))
        g = np.concatenate([2 * xb.T @ err / bs, [2 * np.mean(err)]])
        if optimizer == "sgd":
            p = p - lr * g
        elif optimizer == "momentum":
            t = g + 0.9 * t
            p = p - lr * t
        elif optimizer == "nesterov":
            t = g + 0.9 * t
            p = p - lr * (g + 0.9 * t)
        else:
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g**2
            m_hat, v_hat = m / (1 - 0.9 ** (k + 1)), v / (1 - 0.999 ** (k + 1))
            p = p - lr * m_hat / (np.sqrt(v_hat) + 1e-8)
        history.append(p)
    history = np.array(history)
    return np.array(losses), history[:, :-1], history[:, -1]


def test_seed_004_example():
    key = jax.random.key(0)
    x = jax.random.normal(key, (256, 3))
    y = x @ jnp.array([2.0, -1.0, 0.5]) + 3.0
    fit = train_linear(x, y, optimizer="sgd", lr=0.1, steps=200)
    assert isinstance(fit, LinearFit)
    np.testing.assert_allclose(fit.params["w"], TRUE_W, atol=1e-2)
    np.testing.assert_allclose(fit.params["b"], TRUE_B, atol=1e-2)
    assert fit.losses[-1] < 1e-4
    assert fit.losses[0] > 1.0  # it started far away: the test can fail


def test_shapes_and_dtypes():
    x, y = noisy_data(n=20, d=4)
    fit = train_linear(x, y, steps=7, batch_size=6)
    assert fit.params["w"].shape == (4,) and fit.params["b"].shape == ()
    assert fit.losses.shape == (7,)
    assert fit.history["w"].shape == (7, 4) and fit.history["b"].shape == (7,)
    arrays = [fit.losses, *fit.params.values(), *fit.history.values()]
    assert all(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in arrays)
    np.testing.assert_array_equal(fit.history["w"][-1], fit.params["w"])
    np.testing.assert_array_equal(fit.history["b"][-1], fit.params["b"])


def test_one_step_by_hand():
    # x = [[1], [2]], y = [1, 3], w0 = init from seed 0, b0 = 0; full batch, lr 0.1.
    x = np.array([[1.0], [2.0]], np.float32)
    y = np.array([1.0, 3.0], np.float32)
    w0 = float(init_params(jax.random.key(0), 1)["w"][0])
    err = np.array([w0 - 1.0, 2 * w0 - 3.0])
    loss = (err[0] ** 2 + err[1] ** 2) / 2
    grad_w, grad_b = err[0] * 1.0 + err[1] * 2.0, err[0] + err[1]  # 2 * mean(err * x), 2 * mean(err)
    fit = train_linear(x, y, lr=0.1, steps=1)
    np.testing.assert_allclose(fit.losses, [loss], rtol=1e-6)
    np.testing.assert_allclose(fit.params["w"], [w0 - 0.1 * grad_w], rtol=1e-6)
    np.testing.assert_allclose(fit.params["b"], -0.1 * grad_b, rtol=1e-6)


def test_adam_first_step_moves_every_parameter_by_lr():
    # Adam's first step is lr * g / (|g| + eps) = lr * sign(g) for each parameter.
    x, y = noisy_data(n=8, d=2)
    fit = train_linear(x, y, optimizer="adam", lr=0.05, steps=1)
    w0 = np.asarray(init_params(jax.random.key(0), 2)["w"])
    np.testing.assert_allclose(np.abs(fit.params["w"] - w0), 0.05, rtol=1e-5)
    np.testing.assert_allclose(np.abs(fit.params["b"]), 0.05, rtol=1e-5)


def test_momentum_is_0_9():
    # Two full-batch steps of momentum from the same start: the second applies g1 + 0.9 g0.
    x, y = noisy_data(n=16, d=2, seed=5)
    w0 = init_params(jax.random.key(3), 2)["w"]
    ref = reference_fit(x, y, optimizer="momentum", lr=0.01, steps=2, batch_size=None, w0=w0)
    fit = train_linear(x, y, optimizer="momentum", lr=0.01, steps=2, seed=3)
    np.testing.assert_allclose(fit.history["w"], ref[1], rtol=1e-5)
    sgd = train_linear(x, y, optimizer="sgd", lr=0.01, steps=2, seed=3)
    assert not np.allclose(sgd.history["w"][1], fit.history["w"][1], rtol=1e-4)


CASES = [
    # optimizer, lr, steps, batch_size, seed
    ("sgd", 0.1, 40, None, 0),
    ("sgd", 0.05, 60, 8, 1),
    ("sgd", 0.3, 25, 5, 2),  # 48 = 9 * 5 + 3: three rows dropped
    ("sgd", 0.01, 100, 1, 3),
    ("momentum", 0.02, 50, None, 4),
    ("momentum", 0.05, 60, 16, 5),
    ("momentum", 0.01, 30, 7, 6),
    ("adam", 0.1, 40, None, 7),
    ("adam", 0.05, 60, 12, 8),
    ("adam", 0.08, 50, 5, 9),
    ("adam", 0.2, 25, 48, 10),
]


@pytest.mark.parametrize("optimizer, lr, steps, batch_size, seed", CASES)
def test_matches_float64_numpy_reference(optimizer, lr, steps, batch_size, seed):
    x, y = noisy_data(seed=seed)
    w0 = init_params(jax.random.key(seed), x.shape[1])["w"]
    losses, w, b = reference_fit(x, y, optimizer=optimizer, lr=lr, steps=steps, batch_size=batch_size, w0=w0)
    fit = train_linear(x, y, optimizer=optimizer, lr=lr, steps=steps, batch_size=batch_size, seed=seed)
    # float32 against float64: sgd and momentum agree to ~1e-6 relative. Adam's bias correction
    # 1 - 0.999**k is off by 1.3e-5 relative in float32 (0.999 is not a float32), which moves its
    # steps by ~7e-6 relative; the tolerance leaves a margin of at least 3 over the worst case seen.
    np.testing.assert_allclose(fit.losses, losses, rtol=2e-4, atol=1e-5)
    np.testing.assert_allclose(fit.history["w"], w, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(fit.history["b"], b, rtol=2e-4, atol=2e-5)
    # The runs go somewhere: the loss fell.
    assert np.mean(losses[-5:]) < 0.5 * losses[0]


def test_float64_under_x64():
    x, y = noisy_data(seed=11)
    with jax.enable_x64(True):
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        w0 = init_params(jax.random.key(11), 3, jnp.float64)["w"]
        for optimizer in OPTIMIZERS:
            fit = train_linear(x64, y64, optimizer=optimizer, lr=0.05, steps=30, batch_size=12, seed=11)
            assert fit.losses.dtype == np.float64 and fit.params["w"].dtype == np.float64
            ref = reference_fit(x64, y64, optimizer=optimizer, lr=0.05, steps=30, batch_size=12, w0=w0)
            np.testing.assert_allclose(fit.losses, ref[0], rtol=1e-10)
            np.testing.assert_allclose(fit.history["w"], ref[1], rtol=1e-10, atol=1e-12)
        # float32 data stays float32 under x64.
        assert train_linear(x, y, steps=3).losses.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16])
def test_narrow_floats_compute_in_float32(dtype):
    x, y = noisy_data(n=16)
    fit = train_linear(x.astype(dtype), y.astype(dtype), optimizer="adam", lr=0.01, steps=5)
    assert fit.losses.dtype == np.float32 and np.all(np.isfinite(fit.losses))


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_no_recompile_when_a_slider_moves(optimizer, count_compiles):
    x, y = noisy_data(n=40)
    train_linear(x, y, optimizer=optimizer, steps=1, max_steps=128)  # warm-up
    settings = [(0.1, 1, None, 0), (0.001, 128, 1, 1), (2.5, 64, 40, 7), (0.03, 17, 13, 2**32 - 1)]
    rng = np.random.default_rng(0)
    settings += [
        (float(10 ** rng.uniform(-3, 0)), int(rng.integers(1, 129)), int(rng.integers(1, 41)), int(seed))
        for seed in rng.integers(0, 1000, size=8)
    ]
    finals = set()
    with count_compiles() as compiles:
        for lr, steps, batch_size, seed in settings:
            fit = train_linear(
                x, y, optimizer=optimizer, lr=lr, steps=steps, batch_size=batch_size, seed=seed, max_steps=128
            )
            assert fit.losses.shape == (steps,)
            finals.add(float(fit.params["b"]))
    assert compiles == []
    assert len(finals) == len(settings)  # every setting really reached the compiled scan


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("steps, batch_size", [(1, None), (13, 5), (64, 16)])
def test_padding_changes_no_number(optimizer, steps, batch_size):
    x, y = noisy_data(seed=steps)
    results = [
        train_linear(x, y, optimizer=optimizer, lr=0.05, steps=steps, batch_size=batch_size, max_steps=m)
        for m in (steps, 64, 300)
    ]
    for fit in results[1:]:
        np.testing.assert_array_equal(fit.losses, results[0].losses)
        for name in ("w", "b"):
            np.testing.assert_array_equal(fit.params[name], results[0].params[name])
            np.testing.assert_array_equal(fit.history[name], results[0].history[name])


def test_a_longer_run_extends_a_shorter_one():
    x, y = noisy_data(seed=4)
    short = train_linear(x, y, optimizer="adam", lr=0.05, steps=10, batch_size=8, max_steps=64)
    long = train_linear(x, y, optimizer="adam", lr=0.05, steps=40, batch_size=8, max_steps=64)
    np.testing.assert_array_equal(long.losses[:10], short.losses)
    np.testing.assert_array_equal(long.history["w"][:10], short.history["w"])


def test_default_max_steps_is_a_power_of_two_at_least_256():
    x, y = noisy_data(n=8)
    assert train_linear(x, y, steps=300).losses.shape == (300,)  # default max_steps 512
    with pytest.raises(ValueError, match="max_steps"):
        train_linear(x, y, steps=300, max_steps=256)


def test_seed_sets_the_initial_params():
    x, y = noisy_data(n=8)
    a, b = (train_linear(x, y, lr=0.01, steps=1, seed=s) for s in (0, 1))
    assert not np.array_equal(a.params["w"], b.params["w"])
    np.testing.assert_array_equal(train_linear(x, y, lr=0.01, steps=1, seed=1).params["w"], b.params["w"])


@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_divergent_run_returns_non_finite_losses(optimizer):
    x, y = noisy_data()
    fit = train_linear(x, y, optimizer=optimizer, lr=10.0, steps=100)
    assert fit.losses.shape == (100,)
    assert np.isfinite(fit.losses[0]) and not np.isfinite(fit.losses[-1])
    assert not np.all(np.isfinite(fit.params["w"]))


X, Y = noisy_data(n=6, d=2)

BAD_CALLS = {
    "x 1-D": (dict(x=X[:, 0]), ValueError, "x must be 2-D"),
    "x 3-D": (dict(x=X[None]), ValueError, "x must be 2-D"),
    "x no rows": (dict(x=X[:0], y=Y[:0]), ValueError, "x must hold at least one example"),
    "x no features": (dict(x=X[:, :0]), ValueError, "x must hold at least one example and one feature"),
    "x integer": (dict(x=X.astype(np.int32)), TypeError, "x must hold real floating"),
    "x complex": (dict(x=X.astype(np.complex64)), TypeError, "x .*complex"),
    "x boolean": (dict(x=X > 0), TypeError, "x must hold real floating"),
    "x strings": (dict(x=[["a", "b"]]), TypeError, "x must hold real floating"),
    "x masked": (dict(x=np.ma.masked_less(X, 0)), TypeError, "x is a masked array"),
    "x NaN": (dict(x=np.where(X > 1, np.nan, X)), ValueError, "x must be finite"),
    "x overflows float32": (dict(x=X.astype(np.float64) * 1e300), ValueError, "x holds values that overflow"),
    "y 2-D": (dict(y=Y[:, None]), ValueError, r"y must have shape \(n,\) = \(6,\)"),
    "y too short": (dict(y=Y[:5]), ValueError, r"y must have shape \(n,\)"),
    "y integer": (dict(y=Y.astype(np.int64)), TypeError, "y must hold real floating"),
    "y inf": (dict(y=np.full(6, np.inf, np.float32)), ValueError, "y must be finite"),
    "optimizer unknown": (dict(optimizer="rmsprop"), ValueError, "optimizer must be one of"),
    "optimizer not a string": (dict(optimizer=None), ValueError, "optimizer must be one of"),
    "optimizer capitalised": (dict(optimizer="Adam"), ValueError, "optimizer must be one of"),
    "lr zero": (dict(lr=0.0), ValueError, "lr must be > 0"),
    "lr negative": (dict(lr=-0.1), ValueError, "lr must be > 0"),
    "lr NaN": (dict(lr=float("nan")), ValueError, "lr must be finite"),
    "lr inf": (dict(lr=np.float32(np.inf)), ValueError, "lr must be finite"),
    "lr boolean": (dict(lr=True), TypeError, "lr must be a real number"),
    "lr string": (dict(lr="0.1"), TypeError, "lr must be a real number"),
    "lr complex": (dict(lr=0.1j), TypeError, "lr must be a real number"),
    "lr vector": (dict(lr=np.array([0.1, 0.2])), ValueError, "lr must be a scalar"),
    "lr overflows float32": (dict(lr=1e39), ValueError, "lr = 1e.39 overflows"),
    "steps zero": (dict(steps=0), ValueError, "steps must be an integer >= 1"),
    "steps float": (dict(steps=10.0), TypeError, "steps must be an integer"),
    "steps boolean": (dict(steps=True), TypeError, "steps must be an integer"),
    "batch_size zero": (dict(batch_size=0), ValueError, r"batch_size must be an integer in 1\.\.6"),
    "batch_size over n": (dict(batch_size=7), ValueError, r"batch_size must be an integer in 1\.\.6"),
    "batch_size float": (dict(batch_size=2.0), TypeError, "batch_size must be an integer"),
    "seed negative": (dict(seed=-1), ValueError, "seed must be an integer in 0"),
    "seed too large": (dict(seed=2**32), ValueError, "seed must be an integer in 0"),
    "seed float": (dict(seed=0.5), TypeError, "seed must be an integer"),
    "seed key": (dict(seed=jax.random.key(0)), TypeError, "seed must be an integer"),
    "max_steps zero": (dict(max_steps=0), ValueError, "max_steps must be an integer"),
    "max_steps float": (dict(max_steps=64.0), TypeError, "max_steps must be an integer"),
    "steps over max_steps": (
        dict(steps=65, max_steps=64),
        ValueError,
        r"steps \(65\) must not exceed max_steps",
    ),
}


@pytest.mark.parametrize("name", BAD_CALLS)
def test_bad_arguments_raise_naming_them(name):
    changes, error, match = BAD_CALLS[name]
    kwargs = dict(x=X, y=Y, steps=3) | changes
    with pytest.raises(error, match=match):
        train_linear(kwargs.pop("x"), kwargs.pop("y"), **kwargs)


def test_traced_arguments_are_refused():
    with pytest.raises(TypeError, match="x must be concrete"):
        jax.jit(lambda x: train_linear(x, Y, steps=2).losses)(X)
    with pytest.raises(TypeError, match="lr must be concrete"):
        jax.jit(lambda lr: train_linear(X, Y, lr=lr, steps=2).losses)(0.1)


def test_linear_data_is_seed_004s_problem_and_the_public_names_are_exported():
    import core

    x, y = core.linear_data(seed=0)
    assert x.shape == (256, 3) and y.shape == (256,) and x.dtype == y.dtype == np.float32
    np.testing.assert_allclose(y, x.astype(np.float64) @ TRUE_W + TRUE_B, rtol=1e-5, atol=1e-5)
    assert np.array_equal(core.linear_data(seed=0)[0], x) and not np.array_equal(
        core.linear_data(seed=1)[0], x
    )
    assert 0.8 < x.std() < 1.2  # a standard normal
    fit = core.train_linear(x, y, optimizer="sgd", lr=0.1, steps=200)
    np.testing.assert_allclose(fit.params["w"], core.TRUE_PARAMS["w"], atol=1e-2)
    assert fit.params["b"] == pytest.approx(core.TRUE_PARAMS["b"], abs=1e-2) and fit.losses[-1] < 1e-4
    assert core.OPTIMIZERS == OPTIMIZERS and core.LinearFit is LinearFit
    with pytest.raises(ValueError, match="seed must be an integer in"):
        core.linear_data(seed=-1)
    with pytest.raises(TypeError, match="n must be an integer"):
        core.linear_data(n=2.5)
