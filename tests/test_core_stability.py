"""core.stability_map against an independent float64 loop, the engine, the closed forms, and its
compile count."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import core
from core.stability import StabilityMap, stability_map

LOSSES = ("sum", "mean")
LRS = np.geomspace(1e-3, 3.0, 15)


def reference_run(w0, lr, x_batches, y_batches, loss):
    """Seed 000's run in float64, one Python iteration per batch, per-example sums (no prefix sums).

    Returns the final weight, the peak over steps 1..n of |w - w*| / limit (the run diverged when it
    passes 1, or a weight is non-finite: then inf), the largest |w| on the way (w0 included) and w*.
    """
    x = np.asarray(x_batches, dtype=np.float64)
    y = np.asarray(y_batches, dtype=np.float64)
    w_star = np.sum(x * y) / np.sum(x * x)
    limit = core.DIVERGENCE_RATIO * max(1.0, abs(w0 - w_star))
    scale = x.shape[1] if loss == "mean" else 1
    w, peak, largest = float(w0), 0.0, abs(float(w0))
    for xk, yk in zip(x, y, strict=True):
        grad = 2 * np.sum((w * xk - yk) * xk) / scale
        w = w - lr * grad
        peak, largest = max(peak, abs(w - w_star) / limit), max(largest, abs(w))
        if peak > 1e30:  # far past the limit; stop before float64 overflows
            return np.nan, np.inf, np.inf, w_star
    return w, peak, largest, w_star


def random_case(seed, engine):
    """Random data, n, batch sizes and w0 on the engine's padded shape."""
    rng = np.random.default_rng(seed)
    rows, columns = int(rng.integers(20, 49)), int(rng.integers(5, 17))
    x, y = core.make_batches(rows, columns, seed=seed, noise=0.5)
    n = int(rng.integers(5, rows + 1))
    batch_sizes = rng.choice(np.arange(1, columns + 1), size=5, replace=False)
    return engine.pad(x, y), x, y, n, batch_sizes, float(3 * rng.normal())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_float64_reference(seed):
    engine = core.HistoryEngine(max_steps=48, max_batch=16)
    batches, x, y, n, batch_sizes, w0 = random_case(seed, engine)
    result = stability_map(batches, LRS, batch_sizes, w0=w0, n=n)

    assert isinstance(result, StabilityMap)
    np.testing.assert_array_equal(result.lrs, LRS)
    np.testing.assert_array_equal(result.batch_sizes, batch_sizes)
    shape = (batch_sizes.size, LRS.size)
    compared = {"diverged": [], "log10": 0}
    for loss in LOSSES:
        error, diverged = result.log10_error[loss], result.diverged[loss]
        assert error.shape == diverged.shape == shape and error.dtype == np.float64
        assert diverged.dtype == np.bool_
        np.testing.assert_array_equal(np.isnan(error), diverged)  # w* is defined for gaussian x
        for k, b in enumerate(batch_sizes):
            assert result.critical_lr[loss][k] == core.critical_lr(x[:n, :b], loss=loss)
            for j, lr in enumerate(LRS):
                w, peak, largest, w_star = reference_run(w0, lr, x[:n, :b], y[:n, :b], loss)
                if abs(lr / result.critical_lr[loss][k] - 1) <= 0.2:
                    continue  # near the boundary
                assert diverged[k, j] == (peak > 1), (loss, b, lr, peak)
                compared["diverged"].append(peak > 1)
                # Away from the divergence limit, and well above float32's resolution of the largest
                # weight on the way (a run can grow, then cancel most of its error in one step).
                if peak < 0.5 and abs(w - w_star) > 1e-3 * max(1.0, largest):
                    assert not diverged[k, j]
                    assert abs(error[k, j] - np.log10(abs(w - w_star))) < 1e-3, (loss, b, lr)
                    compared["log10"] += 1
    # The comparisons cover both verdicts and most of the grid.
    assert any(compared["diverged"]) and not all(compared["diverged"])
    assert len(compared["diverged"]) > 0.6 * 2 * error.size
    assert compared["log10"] > 0.25 * 2 * error.size


def test_agrees_with_the_engine():
    engine = core.HistoryEngine(max_steps=48, max_batch=16)
    batches, x, y, n, batch_sizes, w0 = random_case(7, engine)
    lrs = np.geomspace(2e-3, 2.0, 8)
    result = stability_map(batches, lrs, batch_sizes, w0=w0, n=n)
    # rtol 1e-4, and an absolute floor for a w_N near 0: a few float32 roundings of w0's size.
    atol = 1e-5 * max(1.0, abs(w0))
    verdicts = []
    for loss in LOSSES:
        for k, b in enumerate(batch_sizes):
            for j, lr in enumerate(lrs):
                ratio = lr / result.critical_lr[loss][k]
                if abs(ratio - 1) <= 0.2:
                    continue
                history = engine.run(w0, lr, batches._replace(n=n, b=int(b)), loss=loss)
                assert result.diverged[loss][k, j] == (history.diverged_at is not None), (loss, b, lr)
                verdicts.append(history.diverged_at is not None)
                if ratio < 0.8:
                    w_star = core.optimum(x[:n, :b], y[:n, :b])
                    # The map's final weight, rebuilt from its error on the engine's side of w*.
                    side = np.sign(history.weights[-1] - w_star)
                    final = w_star + side * 10 ** result.log10_error[loss][k, j]
                    np.testing.assert_allclose(final, history.weights[-1], rtol=1e-4, atol=atol)
    assert any(verdicts) and not all(verdicts)
    # And the exact-shape history, one cell at a time, for one B.
    b = int(batch_sizes[0])
    w_star = core.optimum(x[:n, :b], y[:n, :b])
    for multiple in (0.3, 0.7, 1.5, 5.0):
        lr = multiple * result.critical_lr["sum"][0]
        one = stability_map(batches, [lr], [b], w0=w0, n=n)
        history = core.training_history(w0, lr, x[:n, :b], y[:n, :b])
        assert one.diverged["sum"][0, 0] == (history.diverged_at is not None)
        if multiple < 1:
            side = np.sign(history.weights[-1] - w_star)
            final = w_star + side * 10 ** one.log10_error["sum"][0, 0]
            np.testing.assert_allclose(final, history.weights[-1], rtol=1e-4, atol=atol)


@pytest.mark.parametrize("loss", LOSSES)
def test_identical_batches_diverge_exactly_above_the_critical_lr(loss):
    n, columns = 100, 8
    rng = np.random.default_rng(5)
    row = rng.normal(size=columns).astype(np.float32)
    x = np.tile(row, (n, 1))
    y = np.tile((2 * row + 0.3 * rng.normal(size=columns)).astype(np.float32), (n, 1))
    batches = core.HistoryEngine(max_steps=n, max_batch=columns).pad(x, y)
    batch_sizes = np.arange(1, columns + 1)
    lrs = np.geomspace(1e-3, 20.0, 40)
    w0 = 5.0
    result = stability_map(batches, lrs, batch_sizes, w0=w0)

    row64 = row.astype(np.float64)
    sums = np.cumsum(row64 * row64)  # S for each B
    scale = batch_sizes if loss == "mean" else np.ones(columns)
    expected = scale / sums  # 1/S for the sum loss, B/S for the mean
    np.testing.assert_allclose(result.critical_lr[loss], expected, rtol=1e-12)
    ratio = lrs[None, :] / expected[:, None]
    away = np.abs(ratio - 1) > 0.2
    np.testing.assert_array_equal(result.diverged[loss][away], (ratio > 1)[away])
    assert result.diverged[loss][away].any() and not result.diverged[loss][away].all()

    # Every step multiplies the error by the same factor 1 - c*lr*S, c = 2 (sum) or 2/B (mean).
    w_star = np.cumsum(row64 * y[0].astype(np.float64)) / sums
    factor = 1 - 2 * lrs[None, :] * sums[:, None] / scale[:, None]
    with np.errstate(divide="ignore"):
        analytic = np.log10(np.abs(w0 - w_star))[:, None] + n * np.log10(np.abs(factor))
    check = away & (ratio < 1) & (analytic > np.log10(1e-3 * np.maximum(1.0, np.abs(w_star)))[:, None])
    assert check.sum() > 20
    np.testing.assert_allclose(result.log10_error[loss][check], analytic[check], atol=1e-3)


def test_no_recompile_for_new_n_w0_lrs_batch_sizes_or_data(count_compiles):
    engine = core.HistoryEngine(max_steps=37, max_batch=11)  # a padded shape no other test uses
    first = engine.pad(*core.make_batches(30, 11, seed=3, noise=0.2))
    second = engine.pad(*core.make_batches(20, 9, seed=4, noise=0.4, true_w=-1.0))
    with count_compiles() as events:
        a = stability_map(first, np.geomspace(1e-3, 1.0, 9), [1, 4, 11, 7], w0=0.0, n=30)
    assert len(events) >= 1
    with count_compiles() as events:
        b = stability_map(second, np.geomspace(2e-3, 3.0, 9), [9, 2, 3, 5], w0=1.5, n=13)
        c = stability_map(second, np.linspace(0.01, 0.5, 9), [1, 1, 9, 8], w0=-2.0)
    assert events == []
    # The second call really used its new arguments.
    x, y = core.make_batches(20, 9, seed=4, noise=0.4, true_w=-1.0)
    assert b.critical_lr["sum"][0] == core.critical_lr(x[:13, :9])
    assert c.critical_lr["mean"][2] == core.critical_lr(x[:, :9], loss="mean")
    assert not np.array_equal(a.log10_error["sum"], b.log10_error["sum"])
    # n defaults to batches.n.
    default = stability_map(second, np.linspace(0.01, 0.5, 9), [1, 1, 9, 8], w0=-2.0, n=20)
    for loss in LOSSES:
        np.testing.assert_array_equal(default.log10_error[loss], c.log10_error[loss])


def test_half_precision_carry_agrees_with_the_engine():
    # A float16 carry overflows at 65504, long before the million-fold limit: the engine and the map
    # both count that as diverging, so compare with the engine at float16, not with float32.
    x, y = core.make_batches(30, 8, seed=6, noise=0.3)
    engine = core.HistoryEngine(max_steps=30, max_batch=8)
    batches = engine.pad(x, y, dtype=jnp.float16)
    lrs, batch_sizes = np.geomspace(1e-3, 3.0, 12), [1, 3, 8]
    half = stability_map(batches, lrs, batch_sizes, w0=1.0)
    verdicts = []
    for loss in LOSSES:
        for k, b in enumerate(batch_sizes):
            for j, lr in enumerate(lrs):
                if abs(lr / half.critical_lr[loss][k] - 1) > 0.2:
                    history = engine.run(jnp.float16(1.0), lr, batches._replace(b=b), loss=loss)
                    assert half.diverged[loss][k, j] == (history.diverged_at is not None), (loss, b, lr)
                    verdicts.append(history.diverged_at is not None)
    assert any(verdicts) and not all(verdicts)


def test_float64_under_x64():
    with jax.enable_x64(True):
        x, y = core.make_batches(30, 8, seed=2, noise=0.3, dtype=np.float64)
        batches = core.HistoryEngine(max_steps=32, max_batch=8).pad(x, y)
        assert batches.x.dtype == np.float64
        lrs = np.geomspace(1e-3, 0.05, 5)
        result = stability_map(batches, lrs, [1, 8], w0=1.0)
        for loss in LOSSES:
            for k, b in enumerate((1, 8)):
                for j, lr in enumerate(lrs):
                    w, peak, _, w_star = reference_run(1.0, lr, x[:, :b], y[:, :b], loss)
                    assert result.diverged[loss][k, j] == (peak > 1)
                    if peak <= 1:
                        np.testing.assert_allclose(
                            result.log10_error[loss][k, j], np.log10(abs(w - w_star)), atol=1e-9
                        )


BATCHES = core.HistoryEngine(max_steps=8, max_batch=4).pad(*core.make_batches(6, 3, seed=0))
GOOD = {"batches": BATCHES, "lrs": [0.01, 0.1], "batch_sizes": [1, 3], "w0": 0.0, "n": None}

BAD = {
    "batches a tuple": ({"batches": (BATCHES.x, BATCHES.y)}, TypeError, "batches must be the PaddedBatches"),
    "batches n too big": ({"batches": BATCHES._replace(n=9)}, ValueError, "batches has n=9"),
    "lrs 2-D": ({"lrs": [[0.1, 0.2]]}, ValueError, "lrs must be a non-empty 1-D"),
    "lrs scalar": ({"lrs": 0.1}, ValueError, "lrs must be a non-empty 1-D"),
    "lrs empty": ({"lrs": []}, ValueError, "lrs must be a non-empty 1-D"),
    "lrs NaN": ({"lrs": [0.1, np.nan]}, ValueError, "lrs must be finite"),
    "lrs inf": ({"lrs": [np.inf]}, ValueError, "lrs must be finite"),
    "lrs zero": ({"lrs": [0.0, 0.1]}, ValueError, "lrs must be positive"),
    "lrs negative": ({"lrs": [-0.1]}, ValueError, "lrs must be positive"),
    "lrs complex": ({"lrs": [0.1j]}, TypeError, "lrs must hold real numbers"),
    "lrs boolean": ({"lrs": [True]}, TypeError, "lrs must hold real numbers"),
    "lrs strings": ({"lrs": ["0.1"]}, TypeError, "lrs must hold real numbers"),
    "lrs ragged": ({"lrs": [[0.1], [0.1, 0.2]]}, TypeError, "lrs must be a 1-D array"),
    "lrs overflow float32": ({"lrs": [1e39]}, ValueError, "lrs = 1e.39 overflows"),
    "batch_sizes floats": ({"batch_sizes": [1.0, 2.0]}, TypeError, "batch_sizes must hold integers"),
    "batch_sizes boolean": ({"batch_sizes": [True]}, TypeError, "batch_sizes must hold integers"),
    "batch_sizes zero": ({"batch_sizes": [0, 1]}, ValueError, "batch_sizes must lie in 1..3"),
    "batch_sizes past b": ({"batch_sizes": [1, 4]}, ValueError, "batch_sizes must lie in 1..3.*got 4"),
    "batch_sizes 2-D": ({"batch_sizes": [[1, 2]]}, ValueError, "batch_sizes must be a non-empty 1-D"),
    "batch_sizes empty": ({"batch_sizes": np.array([], int)}, ValueError, "batch_sizes must be a non-empty"),
    "w0 NaN": ({"w0": float("nan")}, ValueError, "w0 must be finite"),
    "w0 vector": ({"w0": np.zeros(2)}, ValueError, "w0 must be a scalar"),
    "w0 string": ({"w0": "0"}, TypeError, "w0 must be a real number"),
    "w0 boolean": ({"w0": True}, TypeError, "w0 must be a real number"),
    "w0 overflow": ({"w0": 1e39}, ValueError, "w0 = 1e.39 overflows the carry dtype float32"),
    "n zero": ({"n": 0}, ValueError, "n must lie in 1..6"),
    "n past batches.n": ({"n": 7}, ValueError, "n must lie in 1..6"),
    "n float": ({"n": 2.0}, TypeError, "n must be an integer"),
    "n boolean": ({"n": True}, TypeError, "n must be an integer"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_arguments_are_named(case):
    changes, error, message = BAD[case]
    with pytest.raises(error, match=message):
        call_with(**changes)


def call_with(**changes):
    """stability_map on GOOD's arguments with some replaced."""
    arguments = {**GOOD, **changes}
    batches, lrs, batch_sizes = arguments.pop("batches"), arguments.pop("lrs"), arguments.pop("batch_sizes")
    return stability_map(batches, lrs, batch_sizes, **arguments)


def test_good_arguments_run():
    # The baseline the bad cases change one argument of.
    assert call_with().log10_error["sum"].shape == (2, 2)


@pytest.mark.parametrize("traced", ["lrs", "batch_sizes", "w0"])
def test_traced_arguments_are_refused(traced):
    with pytest.raises(TypeError, match=f"{traced} must be concrete"):
        jax.jit(lambda value: call_with(**{traced: value}))(jnp.asarray(GOOD[traced]))


# The model with an intercept: pytree_stability_map -------------------------------------------

from core.pytree import pytree_history  # noqa: E402
from core.stability import MAP_RTOL, pytree_stability_map  # noqa: E402


def intercept_case(seed, engine):
    """Random data around a random mean and line, n, batch sizes and a start (w0, b0)."""
    rng = np.random.default_rng(seed)
    rows, columns = int(rng.integers(20, 49)), int(rng.integers(5, 17))
    x, y = core.make_batches(
        rows,
        columns,
        seed=seed,
        noise=0.5,
        x_mean=float(rng.uniform(-3, 3)),
        true_b=float(rng.uniform(-2, 2)),
    )
    n = int(rng.integers(5, rows + 1))
    batch_sizes = rng.choice(np.arange(1, columns + 1), size=4, replace=False)
    params0 = {"w": float(2 * rng.normal()), "b": float(2 * rng.normal())}
    return engine.pad(x, y), x, y, n, batch_sizes, params0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pytree_map_cells_are_pytree_history_runs(seed):
    engine = core.HistoryEngine(max_steps=48, max_batch=16)
    batches, x, y, n, batch_sizes, params0 = intercept_case(seed, engine)
    lrs = np.geomspace(1e-4, 1.0, 13)
    result = pytree_stability_map(batches, lrs, batch_sizes, params0=params0, n=n)
    assert isinstance(result, StabilityMap)
    np.testing.assert_array_equal(result.batch_sizes, batch_sizes)
    verdicts, compared = [], 0
    for loss in LOSSES:
        error, diverged = result.log10_error[loss], result.diverged[loss]
        assert error.shape == diverged.shape == (batch_sizes.size, lrs.size)
        np.testing.assert_array_equal(np.isnan(error), diverged)
        for k, b in enumerate(batch_sizes):
            data = (x[:n, :b], y[:n, :b])
            want = core.critical_lrs(data[0], intercept=True)[loss]
            assert result.critical_lr[loss][k] == pytest.approx(want, rel=MAP_RTOL)
            star = np.array(core.optimum(*data, intercept=True))
            for j, lr in enumerate(lrs):
                ratio = lr / result.critical_lr[loss][k]
                if abs(ratio - 1) <= 0.2:
                    continue  # near the boundary
                run = pytree_history(params0, lr, *data, loss=loss)
                assert diverged[k, j] == (run.diverged_at is not None), (loss, b, lr)
                verdicts.append(run.diverged_at is not None)
                final = np.array([run.params["w"][-1], run.params["b"][-1]], np.float64)
                distance = np.hypot(*(final - star))
                # Away from the limit, and above float32's resolution of the terms of the sums.
                extent = max(1.0, float(np.max(np.abs(stacked_params(run)))))
                if ratio < 0.8 and distance > 1e-3 * extent:
                    assert abs(error[k, j] - np.log10(distance)) < 1e-3, (loss, b, lr)
                    compared += 1
    assert any(verdicts) and not all(verdicts)
    assert compared > 0.25 * len(verdicts)


def stacked_params(run):
    return np.stack([run.params["w"], run.params["b"]], axis=-1)


@pytest.mark.parametrize("loss", LOSSES)
def test_pytree_map_of_identical_batches_diverges_exactly_above_the_closed_form(loss):
    n, columns = 100, 6
    rng = np.random.default_rng(8)
    row = (1.5 + rng.normal(size=columns)).astype(np.float32)
    x = np.tile(row, (n, 1))
    y = np.tile((2 * row - 1 + 0.3 * rng.normal(size=columns)).astype(np.float32), (n, 1))
    batches = core.HistoryEngine(max_steps=n, max_batch=columns).pad(x, y)
    batch_sizes = np.arange(2, columns + 1)
    lrs = np.geomspace(1e-3, 3.0, 40)
    result = pytree_stability_map(batches, lrs, batch_sizes, params0={"w": 3.0, "b": 2.0})
    row64 = row.astype(np.float64)
    expected = []
    for b in batch_sizes:
        h = np.array([[np.sum(row64[:b] ** 2), np.sum(row64[:b])], [np.sum(row64[:b]), b]])
        c = 2.0 / b if loss == "mean" else 2.0
        expected.append(2 / (c * np.linalg.eigvalsh(h)[-1]))  # lr < 2/(c*lambda_max)
    expected = np.array(expected)
    np.testing.assert_allclose(result.critical_lr[loss], expected, rtol=1e-12)
    ratio = lrs[None, :] / expected[:, None]
    away = np.abs(ratio - 1) > 0.1
    np.testing.assert_array_equal(result.diverged[loss][away], (ratio > 1)[away])
    assert result.diverged[loss][away].any() and not result.diverged[loss][away].all()


def test_pytree_map_compiles_once_for_new_n_params_lrs_batch_sizes_or_data(count_compiles):
    engine = core.HistoryEngine(max_steps=29, max_batch=7)  # a padded shape no other test uses
    first = engine.pad(*core.make_batches(25, 7, seed=3, noise=0.2, x_mean=2.0, true_b=1.0))
    second = engine.pad(*core.make_batches(20, 6, seed=4, noise=0.4, true_w=-1.0, x_mean=-1.0))
    with count_compiles() as events:
        a = pytree_stability_map(first, np.geomspace(1e-3, 1.0, 9), [1, 4, 7], params0={"w": 0.0, "b": 0.0})
    assert len(events) >= 1
    with count_compiles() as events:
        b = pytree_stability_map(
            second, np.geomspace(2e-3, 3.0, 9), [6, 2, 3], params0={"w": 1.5, "b": -0.5}, n=13
        )
        c = pytree_stability_map(
            second, np.linspace(0.01, 0.5, 9), [1, 1, 6], params0={"w": np.float32(-2), "b": 3}
        )
    assert events == []
    x, y = core.make_batches(20, 6, seed=4, noise=0.4, true_w=-1.0, x_mean=-1.0)
    assert b.critical_lr["sum"][0] == pytest.approx(
        core.critical_lr(x[:13, :6], intercept=True), rel=MAP_RTOL
    )
    assert not np.array_equal(a.log10_error["sum"][:, :3], b.log10_error["sum"][:, :3])
    default = pytree_stability_map(
        second, np.linspace(0.01, 0.5, 9), [1, 1, 6], params0={"w": -2.0, "b": 3.0}, n=20
    )
    for loss in LOSSES:
        np.testing.assert_array_equal(default.log10_error[loss], c.log10_error[loss])


PYTREE_GOOD = {"batches": BATCHES, "lrs": [0.01, 0.1], "batch_sizes": [1, 3], "n": None}
PYTREE_BAD = {
    "batches a tuple": ({"batches": (BATCHES.x, BATCHES.y)}, TypeError, "batches must be the PaddedBatches"),
    "lrs zero": ({"lrs": [0.0, 0.1]}, ValueError, "lrs must be positive"),
    "batch_sizes past b": ({"batch_sizes": [1, 4]}, ValueError, "batch_sizes must lie in 1..3.*got 4"),
    "n past batches.n": ({"n": 7}, ValueError, "n must lie in 1..6"),
    "params0 a tuple": ({"params0": (0.0, 0.0)}, TypeError, r'params0 must be a dict \{"w": w0, "b": b0\}'),
    "params0 missing b": ({"params0": {"w": 0.0}}, ValueError, r"params0 must have exactly the keys"),
    "params0 NaN": ({"params0": {"w": 0.0, "b": np.nan}}, ValueError, r'params0\["b"\] must be finite'),
    "params0 vector": (
        {"params0": {"w": np.zeros(2), "b": 0}},
        ValueError,
        r'params0\["w"\] must be a scalar',
    ),
    "params0 overflow": (
        {"params0": {"w": 0.0, "b": 1e39}},
        ValueError,
        r'params0\["b"\] = 1e\+39 overflows',
    ),
}


@pytest.mark.parametrize("case", list(PYTREE_BAD))
def test_pytree_map_bad_arguments_are_named(case):
    changes, error, message = PYTREE_BAD[case]
    arguments = {**PYTREE_GOOD, "params0": {"w": 0.0, "b": 0.0}, **changes}
    with pytest.raises(error, match=message):
        pytree_stability_map(
            arguments.pop("batches"), arguments.pop("lrs"), arguments.pop("batch_sizes"), **arguments
        )


def test_pytree_map_refuses_traced_params():
    with pytest.raises(TypeError, match=r'params0\["w"\] must be concrete'):
        jax.jit(lambda w: pytree_stability_map(BATCHES, [0.1], [1], params0={"w": w, "b": 0.0}).lrs)(0.0)


# The model with an intercept under heavy-ball momentum: pytree_momentum_map -------------------

from core.stability import MomentumMap, pytree_momentum_map  # noqa: E402

MOMENTA = np.array([0.0, 0.5, 0.9])


@pytest.mark.parametrize("seed", [0, 1])
def test_pytree_momentum_map_cells_are_heavy_ball_pytree_history_runs(seed):
    engine = core.HistoryEngine(max_steps=48, max_batch=16)
    batches, x, y, n, batch_sizes, params0 = intercept_case(seed, engine)
    b = int(batch_sizes[0])
    lrs = core.critical_lr(x[:n, :b], intercept=True) * np.geomspace(1e-3, 10.0, 13)
    result = pytree_momentum_map(batches, lrs, MOMENTA, batch_size=b, params0=params0, n=n)
    assert isinstance(result, MomentumMap) and result.batch_size == b
    data = (x[:n, :b], y[:n, :b])
    star = np.array(core.optimum(*data, intercept=True))
    verdicts, compared = [], 0
    for loss in LOSSES:
        assert result.log10_error[loss].shape == (MOMENTA.size, lrs.size)
        for i, m in enumerate(MOMENTA):
            want = core.critical_lr(data[0], loss=loss, momentum=m, intercept=True)
            assert result.critical_lr[loss][i] == pytest.approx(want, rel=MAP_RTOL)
            for j, lr in enumerate(lrs):
                if abs(lr / result.critical_lr[loss][i] - 1) <= 0.3:
                    continue
                run = pytree_history(params0, lr, *data, loss=loss, optimizer="momentum", momentum=m)
                assert result.diverged[loss][i, j] == (run.diverged_at is not None), (loss, m, lr)
                verdicts.append(run.diverged_at is not None)
                final = np.array([run.params["w"][-1], run.params["b"][-1]], np.float64)
                distance = np.hypot(*(final - star))
                extent = max(1.0, float(np.max(np.abs(stacked_params(run)))))
                if run.diverged_at is None and distance > 1e-3 * extent:
                    assert abs(result.log10_error[loss][i, j] - np.log10(distance)) < 1e-3, (loss, m, lr)
                    compared += 1
    assert any(verdicts) and not all(verdicts) and compared > 0.25 * len(verdicts)
    # Momentum 0 is the lr x B map's row for that B.
    plain = pytree_stability_map(batches, lrs, [b], params0=params0, n=n)
    for loss in LOSSES:
        np.testing.assert_array_equal(result.diverged[loss][0], plain.diverged[loss][0])
        np.testing.assert_allclose(result.log10_error[loss][0], plain.log10_error[loss][0], atol=1e-6)


def test_pytree_momentum_map_compiles_once_for_new_settings(count_compiles):
    engine = core.HistoryEngine(max_steps=23, max_batch=5)  # a padded shape no other test uses
    first = engine.pad(*core.make_batches(20, 5, seed=1, noise=0.2, x_mean=1.0, true_b=0.5))
    second = engine.pad(*core.make_batches(15, 4, seed=2, noise=0.4, x_mean=-2.0))
    with count_compiles() as events:
        pytree_momentum_map(
            first, np.geomspace(1e-3, 1.0, 6), MOMENTA, batch_size=5, params0={"w": 0, "b": 0}
        )
    assert len(events) >= 1
    with count_compiles() as events:
        pytree_momentum_map(
            second,
            np.geomspace(2e-3, 0.5, 6),
            [0.1, 0.2, 0.95],
            batch_size=2,
            params0={"w": 1.0, "b": -3.0},
            n=9,
        )
    assert events == []


@pytest.mark.parametrize(
    "changes, error, words",
    [
        ({"momenta": [0.5, 1.0]}, ValueError, r"momenta must lie in \[0, 1\)"),
        ({"batch_size": 4}, ValueError, "batch_size must lie in 1..3"),
        ({"batch_size": 2.0}, TypeError, "batch_size must be an integer"),
        ({"params0": {"w": 0.0}}, ValueError, "params0 must have exactly the keys"),
        ({"lrs": [-0.1]}, ValueError, "lrs must be positive"),
    ],
)
def test_pytree_momentum_map_bad_arguments_are_named(changes, error, words):
    arguments = {"lrs": [0.01, 0.1], "momenta": [0.0, 0.5], "batch_size": 2, "params0": {"w": 0.0, "b": 0.0}}
    arguments |= changes
    with pytest.raises(error, match=words):
        pytree_momentum_map(BATCHES, arguments.pop("lrs"), arguments.pop("momenta"), **arguments)
