"""core.pytree_history / pytree_histories (y = w*x + b, the params dict as the scan's carry) and
core.critical_lr(..., intercept=True): against float64 NumPy loops written out here, Optax in a
Python loop, brute-force searches and closed forms, with compile counts and every bad input."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import core
from core.optimizers import OPTIMIZERS, make_optimizer
from core.products import log_radius_intercept
from core.pytree import PytreeHistory, pytree_histories, pytree_history
from harness.support.reference import optimizer_update

CASES = 50
ENGINE = core.HistoryEngine(max_steps=12, max_batch=6)


def random_data(rng, n, b, dtype=np.float32):
    """x around a random mean, y a random line plus noise."""
    x = rng.normal(loc=rng.uniform(-3, 3), size=(n, b))
    y = rng.uniform(-3, 3) * x + rng.uniform(-2, 2) + rng.normal(scale=0.5, size=(n, b))
    return x.astype(dtype), y.astype(dtype)


def random_setting(rng, x, *, reach=0.5):
    """(params, lr, momentum, schedule or None) for data x: lr up to `reach` times the critical lr."""
    lr = core.critical_lr(x, intercept=True) * rng.uniform(0.02, reach)
    schedule = (lr * rng.uniform(0.1, 1.0, size=x.shape[0])).astype(x.dtype) if rng.uniform() < 0.5 else None
    params = {"w": float(rng.normal()), "b": float(rng.normal())}
    return params, float(lr), float(rng.uniform(0, 0.95)), schedule


def reference(params, lr, x, y, *, optimizer, momentum, loss, schedule):
    """float64 NumPy, the update rules written out as Optax defines them, on p = (w, b): params
    (N+1, 2), losses (N,), grads (N, 2)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    n, b = x.shape
    p = np.array([params["w"], params["b"]], np.float64)
    t, mu, nu = np.zeros(2), np.zeros(2), np.zeros(2)
    ps, losses, grads = [p], [], []
    for k in range(n):
        rate = lr if schedule is None else float(schedule[k])
        error = p[0] * x[k] + p[1] - y[k]
        loss_k, g = np.sum(error**2), 2 * np.array([np.sum(error * x[k]), np.sum(error)])
        if loss == "mean":
            loss_k, g = loss_k / b, g / b
        update, (t, mu, nu) = optimizer_update(optimizer, g, (t, mu, nu), rate, momentum, k)
        p = p + update
        ps.append(p)
        losses.append(loss_k)
        grads.append(g)
    return np.array(ps), np.array(losses), np.array(grads)


def stacked(tree):
    return np.stack([tree["w"], tree["b"]], axis=-1)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_each_optimizer_matches_its_update_rule_in_float64(optimizer):
    # Padded runs of random (n, b): one compilation for all of them.
    rng = np.random.default_rng(OPTIMIZERS.index(optimizer))
    with jax.enable_x64(True):
        for _ in range(CASES):
            x, y = random_data(rng, int(rng.integers(1, 13)), int(rng.integers(1, 7)), np.float64)
            params, lr, momentum, schedule = random_setting(rng, x)
            got = pytree_histories(
                params, lr, ENGINE.pad(x, y), optimizer=optimizer, momentum=momentum, lr_schedule=schedule
            )
            for loss in ("sum", "mean"):
                run = got[loss]
                assert isinstance(run, PytreeHistory) and run.params["w"].dtype == np.float64
                want, losses, grads = reference(
                    params, lr, x, y, optimizer=optimizer, momentum=momentum, loss=loss, schedule=schedule
                )
                scale = max(1.0, float(np.max(np.abs(want))))
                np.testing.assert_allclose(stacked(run.params), want, rtol=1e-9, atol=1e-10 * scale)
                np.testing.assert_allclose(run.losses, losses, rtol=1e-9, atol=1e-10 * max(1.0, losses.max()))
                np.testing.assert_allclose(
                    stacked(run.grads), grads, rtol=1e-9, atol=1e-10 * max(1.0, np.abs(grads).max())
                )
                assert run.diverged_at is None


def _optax_loop(params, x, y, *, optimizer, momentum, loss, lrs):
    """Optax in a Python loop over the batches, one jitted step each: params (N+1, 2), float32."""
    step = _OPTAX_STEPS[optimizer]
    state = make_optimizer(optimizer, jnp.float32(lrs[0]), jnp.float32(momentum)).init(params)
    out = [params]
    for k in range(x.shape[0]):
        params, state = step(
            params, state, x[k], y[k], jnp.float32(lrs[k]), jnp.float32(momentum), loss == "mean"
        )
        out.append(params)
    return np.array([[p["w"], p["b"]] for p in out], np.float32)


def _make_optax_step(optimizer):
    @jax.jit
    def step(params, state, x, y, rate, momentum, mean):
        def batch_loss(params):
            value = jnp.sum((params["w"] * x + params["b"] - y) ** 2)
            return jnp.where(mean, value / jnp.float32(x.shape[0]), value)

        grads = jax.grad(batch_loss)(params)
        updates, state = make_optimizer(optimizer, rate, momentum).update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step


_OPTAX_STEPS = {optimizer: _make_optax_step(optimizer) for optimizer in OPTIMIZERS}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_each_optimizer_matches_optax_in_a_python_loop(optimizer):
    rng = np.random.default_rng(10 + OPTIMIZERS.index(optimizer))
    worst = 0.0
    for _ in range(CASES):
        x, y = random_data(rng, 6, 4)  # one shape: one compilation
        params, lr, momentum, schedule = random_setting(rng, x)
        loss = ("sum", "mean")[int(rng.integers(2))]
        got = pytree_history(
            params, lr, x, y, loss=loss, optimizer=optimizer, momentum=momentum, lr_schedule=schedule
        )
        lrs = np.full(6, lr, np.float32) if schedule is None else schedule
        start = {key: jnp.float32(value) for key, value in params.items()}
        want = _optax_loop(start, x, y, optimizer=optimizer, momentum=momentum, loss=loss, lrs=lrs)
        extent = max(1.0, float(np.max(np.abs(want))))
        worst = max(worst, float(np.max(np.abs(stacked(got.params) - want))) / extent)
    # float32 rounding only: Optax's loop adds a batch's terms in another order.
    assert worst < 1e-4, worst


def test_on_padded_batches_each_run_is_its_unpadded_run_bit_for_bit():
    # A corner of one padded data set (real data past n and b) against the (n, b) data alone:
    # pad() and pytree_history, which lays the batches out at their own shape.
    rng = np.random.default_rng(20)
    full_x, full_y = random_data(rng, 12, 6)
    full = ENGINE.pad(full_x, full_y)
    diverged = 0
    for case in range(CASES):
        n, b = int(rng.integers(1, 13)), int(rng.integers(1, 7))
        x, y = full_x[:n, :b], full_y[:n, :b]
        params, lr, momentum, schedule = random_setting(rng, x, reach=40.0)
        optimizer = OPTIMIZERS[case % len(OPTIMIZERS)]
        kwargs = {"optimizer": optimizer, "momentum": momentum, "lr_schedule": schedule}
        got = pytree_histories(params, lr, ENGINE.corner(full, n, b), **kwargs)
        alone = pytree_histories(params, lr, ENGINE.pad(x, y), **kwargs)
        for loss in ("sum", "mean"):
            for key in ("w", "b"):
                np.testing.assert_array_equal(got[loss].params[key], alone[loss].params[key])
            assert got[loss].diverged_at == alone[loss].diverged_at
            diverged += got[loss].diverged_at is not None
        if (n, b) == (7, 3) or case < 4:
            for loss in ("sum", "mean"):
                want = pytree_history(
                    params, lr, full_x[:7, :3], full_y[:7, :3], loss=loss, **kwargs | {"lr_schedule": None}
                )
                corner = pytree_histories(
                    params, lr, ENGINE.corner(full, 7, 3), **kwargs | {"lr_schedule": None}
                )
                for key in ("w", "b"):
                    np.testing.assert_array_equal(corner[loss].params[key], want.params[key])
    assert diverged > 5


# Divergence ----------------------------------------------------------------------------------


def test_diverged_at_is_the_first_step_a_million_times_farther_from_the_optimum():
    x, y = core.make_batches(60, 4, seed=3, x_mean=2.0, true_b=1.0, true_w=-1.0)
    w_star, b_star = core.optimum(x, y, intercept=True)
    np.testing.assert_allclose((w_star, b_star), (-1.0, 1.0), rtol=1e-5)
    start = {"w": 0.5, "b": -2.0}
    run = pytree_history(start, 1.2 * core.critical_lr(x, intercept=True), x, y)
    distance = np.hypot(run.params["w"] - w_star, run.params["b"] - b_star)
    limit = core.DIVERGENCE_RATIO * max(1.0, float(distance[0]))
    beyond = ~np.isfinite(distance[1:]) | (distance[1:] > limit)
    assert beyond.any() and run.diverged_at == int(np.argmax(beyond))
    stable = pytree_history(start, 0.5 * core.critical_lr(x, intercept=True), x, y)
    assert stable.diverged_at is None


def test_optimum_with_an_intercept_is_least_squares():
    rng = np.random.default_rng(21)
    for _ in range(CASES):
        x, y = random_data(rng, int(rng.integers(1, 9)), int(rng.integers(2, 9)))
        design = np.stack([x.ravel(), np.ones(x.size)], axis=1).astype(np.float64)
        want = np.linalg.lstsq(design, y.ravel().astype(np.float64), rcond=None)[0]
        np.testing.assert_allclose(core.optimum(x, y, intercept=True), want, rtol=1e-7, atol=1e-9)
        assert core.optimum(core.moments(x, y), intercept=True) == core.optimum(x, y, intercept=True)
    ones = np.ones((3, 2), np.float32)
    assert np.isnan(core.optimum(ones, ones, intercept=True)).all()  # every x alike: a line fits


# The critical lr with an intercept ------------------------------------------------------------


def hessians(x):
    """H_k = [[S_k, X_k], [X_k, B]] of each batch, float64 (N, 2, 2)."""
    x = np.asarray(x, np.float64)
    s, sx = np.sum(x * x, axis=1), np.sum(x, axis=1)
    return np.stack([np.stack([s, sx], -1), np.stack([sx, np.full_like(s, x.shape[1])], -1)], -2)


@pytest.mark.parametrize("momentum", [0.0, 0.5, 0.9])
def test_critical_lr_for_identical_batches_is_the_closed_form(momentum):
    one = np.array([[0.5, 1.5, 3.0, 2.0]], np.float32)
    x = np.tile(one, (5, 1))
    largest = float(np.linalg.eigvalsh(hessians(one)[0])[-1])
    for loss, c in (("sum", 2.0), ("mean", 2.0 / 4)):
        want = 2 * (1 + momentum) / (c * largest)
        assert core.critical_lr(x, loss=loss, momentum=momentum, intercept=True) == pytest.approx(
            want, rel=1e-14
        )
    alike = np.full((4, 3), 2.0, np.float32)  # every x alike: H singular, the same closed form
    assert core.critical_lr(alike, intercept=True) == pytest.approx(1 / 15.0, rel=1e-14)


def radius_by_eigvals(u, x, momentum):
    """The spectral radius of the N steps' product multiplied out, by numpy's eigvals."""
    product = np.eye(4 if momentum else 2)
    for h in 2 * hessians(x):
        step = np.eye(2) - u * h
        if momentum:
            step = np.block([[step, -u * momentum * np.eye(2)], [h, momentum * np.eye(2)]])
        product = step @ product
    return float(np.max(np.abs(np.linalg.eigvals(product))))


def test_the_products_radius_against_numpys_eigenvalues():
    rng = np.random.default_rng(22)
    for momentum in (0.0, 0.7):
        for n in (1, 2, 5, 30):
            x = rng.normal(loc=2.0, size=(n, 3))
            m = core.moments(x)
            rates = rng.uniform(0.01, 1.5, size=6) * core.critical_lr(x, intercept=True, momentum=momentum)
            got = log_radius_intercept(rates, m.sxx, m.sx, 3.0, momentum)
            want = [np.log(radius_by_eigvals(u, x, momentum)) for u in rates]
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_critical_lr_with_an_intercept_against_a_brute_force_search():
    rng = np.random.default_rng(23)
    for case in range(CASES):
        x = rng.normal(loc=rng.uniform(-3, 3), size=(int(rng.integers(2, 9)), int(rng.integers(1, 5))))
        x = x.astype(np.float32)
        momentum = 0.0 if case % 2 else float(rng.uniform(0.05, 0.95))
        found = core.critical_lr(x, momentum=momentum, intercept=True)
        m = core.moments(x)
        grid = np.linspace(found * 1e-4, 2 * found, 5_001)
        grows = log_radius_intercept(grid, m.sxx, m.sx, float(x.shape[1]), momentum) >= 0
        assert grows.any()
        expected, spacing = float(grid[np.argmax(grows)]), float(grid[1] - grid[0])
        assert abs(found - expected) <= spacing, (found, expected, spacing)
        both = core.critical_lrs(x, momentum=momentum, intercept=True)
        assert both["sum"] == found
        assert both["mean"] == core.critical_lr(x, loss="mean", momentum=momentum, intercept=True)
        assert both["mean"] == pytest.approx(x.shape[1] * found, rel=1e-12)


def test_without_an_intercept_critical_lr_is_unchanged():
    rng = np.random.default_rng(24)
    for _ in range(CASES):
        x = rng.normal(size=(int(rng.integers(1, 20)), int(rng.integers(1, 6)))).astype(np.float32)
        for loss in ("sum", "mean"):
            assert core.critical_lr(x, loss=loss, intercept=False) == core.critical_lr(x, loss=loss)
        assert core.critical_lrs(x) == core.critical_lrs(x, momentum=0.0, intercept=False)
        assert core.critical_lrs(x, momentum=0.5)["sum"] == core.critical_lr(x, momentum=0.5)


@pytest.mark.parametrize("kind", ["identical", "varying"])
@pytest.mark.parametrize("optimizer, momentum", [("sgd", 0.0), ("momentum", 0.9)])
def test_runs_just_below_the_critical_lr_decay_and_just_above_grow(kind, optimizer, momentum):
    rng = np.random.default_rng(25)
    passes = 300
    if kind == "identical":
        one = np.array([[2.5, 3.0, 3.5]], np.float32)
    else:
        one = rng.normal(loc=3.0, size=(5, 3)).astype(np.float32)
    x = np.tile(one, (passes, 1))
    y = 2.0 * x - 1.0  # noise-free: every batch's optimum is (2, -1)
    critical = core.critical_lr(one, momentum=momentum, intercept=True)
    runs = [
        pytree_history({"w": 0.0, "b": 0.0}, factor * critical, x, y, optimizer=optimizer, momentum=momentum)
        for factor in (0.99, 1.01)
    ]
    # The largest error in the first and last pass over the batches.
    (first_below, last_below), (first_above, last_above) = (
        np.max(
            np.hypot(r.params["w"][1:] - 2.0, r.params["b"][1:] + 1.0).reshape(passes, -1)[[0, -1]], axis=1
        )
        for r in runs
    )
    assert last_below < 0.5 * first_below, (first_below, last_below)
    assert runs[1].diverged_at is not None or last_above > 2 * first_above, (first_above, last_above)


# Data -----------------------------------------------------------------------------------------


def test_make_batches_defaults_are_the_1d_data_bit_for_bit():
    for kind in ("gaussian", "ones"):
        draws = core.draw_batches(9, 5, seed=4, kind=kind)
        true_w = 2.0 if kind == "gaussian" else 1.0
        x, y = core.make_batches(9, 5, seed=4, kind=kind, noise=0.3)
        np.testing.assert_array_equal(x, draws.x.astype(np.float32))
        np.testing.assert_array_equal(y, (true_w * draws.x + 0.3 * draws.eps).astype(np.float32))
        again = core.make_batches(9, 5, seed=4, kind=kind, noise=0.3, x_mean=0, true_b=0.0)
        for a, b in zip((x, y), again, strict=True):
            np.testing.assert_array_equal(a, b)


def test_x_mean_and_true_b_shift_the_data():
    draws = core.draw_batches(4, 3, seed=5)
    x, y = core.batches_from_draws(draws, 4, 3, true_w=2.0, x_mean=3.0, true_b=-1.0, dtype=np.float64)
    np.testing.assert_array_equal(x, draws.x + 3.0)
    np.testing.assert_array_equal(y, 2.0 * (draws.x + 3.0) - 1.0)
    x, y = core.make_batches(4, 3, seed=5, x_mean=3.0, true_b=-1.0, dtype=np.float64)
    np.testing.assert_array_equal(y, 2.0 * (draws.x + 3.0) - 1.0)


# Compiles and bad input -----------------------------------------------------------------------


def test_no_setting_recompiles(count_compiles):
    rng = np.random.default_rng(26)
    full = ENGINE.pad(*random_data(rng, 12, 6))
    x, y = random_data(rng, 5, 4)
    for optimizer in OPTIMIZERS:
        pytree_histories({"w": 0.0, "b": 0.0}, 0.01, full, optimizer=optimizer)
        pytree_history({"w": 0.0, "b": 0.0}, 0.01, x, y, optimizer=optimizer)
    finals = set()
    with count_compiles() as compiles:
        for optimizer in OPTIMIZERS:
            for n, b in ((1, 1), (7, 3), (12, 6)):
                corner = ENGINE.corner(full, n, b)
                for schedule in (False, True):
                    lr = float(rng.uniform(0.001, 0.02))
                    settings = {
                        "optimizer": optimizer,
                        "momentum": float(rng.uniform(0, 0.99)),
                        "lr_schedule": np.full(n, lr, np.float32) if schedule else None,
                    }
                    params = {"w": float(rng.normal()), "b": float(rng.normal())}
                    run = pytree_histories(params, lr, corner, **settings)
                    finals.add(float(run["mean"].params["b"][-1]))
            for loss in ("sum", "mean"):
                params = {"w": float(rng.normal()), "b": np.float32(rng.normal())}
                run = pytree_history(params, 0.01, x, y, loss=loss, optimizer=optimizer, momentum=0.5)
                finals.add(float(run.params["w"][-1]))
    assert compiles == []
    assert len(finals) == len(OPTIMIZERS) * (3 * 2 + 2)  # every setting reached the compiled scan


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_the_params_of_w_alone_are_the_lessons_model(optimizer):
    # One engine, a model is its leaves: {"w": w0} runs y = w*x, as optimizer_history and the padded
    # engine run it, bit for bit.
    x, y = core.make_batches(23, 6, seed=4, noise=0.3)
    engine = core.HistoryEngine(32, 8)
    corner = engine.corner(engine.pad(x, y), 19, 5)
    schedule = core.lr_schedule("cosine", 0.05, 23)
    for loss in ("sum", "mean"):
        got = pytree_history({"w": 0.5}, 0.05, x, y, loss=loss, optimizer=optimizer, lr_schedule=schedule)
        want = core.optimizer_history(0.5, 0.05, x, y, loss=loss, optimizer=optimizer, lr_schedule=schedule)
        assert list(got.params) == list(got.grads) == ["w"]
        np.testing.assert_array_equal(got.params["w"], want.weights)
        np.testing.assert_array_equal(got.losses, want.losses)
        np.testing.assert_array_equal(got.grads["w"], want.grads)
        assert got.diverged_at == want.diverged_at
    padded = pytree_histories({"w": 0.5}, 0.05, corner, optimizer=optimizer)
    want = core.optimizer_histories(0.5, 0.05, corner, optimizer=optimizer)
    for loss in ("sum", "mean"):
        np.testing.assert_array_equal(padded[loss].params["w"], want[loss].weights)
    if optimizer == "sgd":
        plain = engine.histories(0.5, 0.05, corner)
        for loss in ("sum", "mean"):
            np.testing.assert_array_equal(padded[loss].params["w"], plain[loss].weights)


X = np.ones((3, 2), np.float32)
GOOD = {"w": 0.0, "b": 0.0}


@pytest.mark.parametrize(
    "params, error, words",
    [
        ((0.0, 0.0), TypeError, 'params must be a dict {"w": w0} or {"w": w0, "b": b0}, got tuple'),
        (0.5, TypeError, "params must be a dict"),
        ({"b": 0.0}, ValueError, "missing ['w']"),
        ({"w": 0.0, "b": 0.0, "c": 1.0}, ValueError, "unexpected ['c']"),
        ({"weight": 0.0, "b": 0.0}, ValueError, 'exactly the keys "w" or "w" and "b"'),
        ({"w": float("nan"), "b": 0.0}, ValueError, 'params["w"] must be finite'),
        ({"w": 0.0, "b": float("inf")}, ValueError, 'params["b"] must be finite'),
        ({"w": True, "b": 0.0}, TypeError, 'params["w"] must be a real number'),
        ({"w": 0.0, "b": 1j}, TypeError, 'params["b"] must be a real number'),
        ({"w": np.zeros(2, np.float32), "b": 0.0}, ValueError, 'params["w"] must be a scalar'),
        ({"w": 0.0, "b": "1"}, TypeError, 'params["b"] must be a real number'),
        ({"w": 0.0, "b": np.float64(1e300)}, ValueError, 'params["b"] = 1e+300 overflows'),
    ],
)
def test_bad_params_name_params_and_the_key(params, error, words):
    with pytest.raises(error, match=re.escape(words)):
        pytree_history(params, 0.1, X, X)
    with pytest.raises(error, match=re.escape(words)):
        pytree_histories(params, 0.1, ENGINE.pad(X, X))


@pytest.mark.parametrize(
    "args, kwargs, error, words",
    [
        ((0.1, np.ones(3, np.float32), X), {}, ValueError, "x_batches must be 2-D"),
        ((0.1, np.ones((3, 2), np.int32), X), {}, TypeError, "x_batches must hold real floating-point"),
        ((0.1, X, np.ones((2, 2), np.float32)), {}, ValueError, "the same shape"),
        ((float("nan"), X, X), {}, ValueError, "lr must be finite"),
        ((True, X, X), {}, TypeError, "lr must be a real number"),
        ((0.1, X, X), {"optimizer": "rmsprop"}, ValueError, "optimizer must be one of"),
        ((0.1, X, X), {"momentum": 1.0}, ValueError, "momentum must be in [0, 1)"),
        ((0.1, X, X), {"momentum": "0.5"}, TypeError, "momentum must be a real number"),
        ((0.1, X, X), {"loss": "median"}, ValueError, "loss must be 'sum' or 'mean'"),
        (
            (0.1, X, X),
            {"lr_schedule": np.ones(2, np.float32)},
            ValueError,
            "one learning rate per step, N = 3",
        ),
        ((0.1, X, X), {"lr_schedule": np.ones(3, np.int32)}, TypeError, "lr_schedule must hold real"),
        ((0.1, X, X), {"lr_schedule": np.array([0.1, np.nan, 0.1])}, ValueError, "at step 1"),
    ],
)
def test_bad_arguments_name_themselves(args, kwargs, error, words):
    with pytest.raises(error, match=re.escape(words)):
        pytree_history(GOOD, *args, **kwargs)


@pytest.mark.parametrize(
    "lr, batches, kwargs, error, words",
    [
        (0.1, "batches", {}, TypeError, "batches must be"),
        (float("nan"), None, {}, ValueError, "lr must be finite"),
        (0.1, None, {"optimizer": "rmsprop"}, ValueError, "optimizer must be one of"),
        (0.1, None, {"momentum": -0.1}, ValueError, "momentum must be in [0, 1)"),
        (0.1, None, {"lr_schedule": np.ones(4, np.float32)}, ValueError, "one learning rate per step, N = 3"),
    ],
)
def test_on_padded_batches_bad_arguments_name_themselves(lr, batches, kwargs, error, words):
    batches = ENGINE.pad(X, X) if batches is None else batches
    with pytest.raises(error, match=re.escape(words)):
        pytree_histories(GOOD, lr, batches, **kwargs)


def test_traced_arguments_are_refused():
    with pytest.raises(TypeError, match="pytree_history returns NumPy arrays"):
        jax.jit(lambda lr: pytree_history(GOOD, lr, X, X).losses)(0.1)
    with pytest.raises(TypeError, match="pytree_histories returns NumPy arrays"):
        jax.jit(lambda w: pytree_histories({"w": w, "b": 0.0}, 0.1, ENGINE.pad(X, X))["sum"].losses)(0.1)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"x_mean": float("nan")}, ValueError, "x_mean must be finite"),
        ({"x_mean": "3"}, TypeError, "x_mean must be a real number"),
        ({"true_b": float("inf")}, ValueError, "true_b must be finite"),
        ({"true_b": None}, TypeError, "true_b must be a real number"),
    ],
)
def test_bad_data_arguments_name_themselves(kwargs, error, words):
    with pytest.raises(error, match=re.escape(words)):
        core.make_batches(2, 2, seed=0, **kwargs)


def test_critical_lr_with_an_intercept_needs_the_sums_of_x():
    m = core.moments(X)
    with pytest.raises(ValueError, match="needs Moments with sx"):
        core.critical_lr(m._replace(sx=None), intercept=True)
    with pytest.raises(ValueError, match="momentum must be in"):
        core.critical_lr(X, momentum=1.0, intercept=True)


def test_runs_that_go_far_from_their_start_still_meet_the_divergence_rule():
    # (w*, b*) is computed only for a run that went far from its start: a stable run from 1e7 away
    # goes far and must not count as diverged; a diverging one from nearby must, at the rule's step.
    x, y = core.make_batches(40, 6, seed=7, x_mean=1.5, true_b=-0.5, true_w=2.0)
    engine = core.HistoryEngine(max_steps=48, max_batch=8)
    critical = core.critical_lr(x, intercept=True)
    w_star, b_star = core.optimum(x, y, intercept=True)
    for start, factor, diverges in (({"w": 1e7, "b": -1e7}, 0.5, False), ({"w": 0.0, "b": 0.0}, 1.5, True)):
        runs = pytree_histories(start, factor * critical, engine.pad(x, y))
        run = runs["sum"]
        distance = np.hypot(run.params["w"].astype(np.float64) - w_star, run.params["b"] - b_star)
        assert np.max(np.hypot(run.params["w"] - start["w"], run.params["b"] - start["b"])) > 1e6
        limit = core.DIVERGENCE_RATIO * max(1.0, float(distance[0]))
        beyond = ~np.isfinite(distance[1:]) | (distance[1:] > limit)
        assert (run.diverged_at is not None) == diverges == beyond.any()
        if diverges:
            assert run.diverged_at == int(np.argmax(beyond))
        alone = pytree_history(start, factor * critical, x, y)
        assert alone.diverged_at == run.diverged_at
        np.testing.assert_array_equal(alone.params["w"], run.params["w"])
