"""core.momentum_map: the lr x momentum map at one B against float64 heavy-ball loops, against
core.optimizer_history, the closed form (1 + m)/S for identical batches, no recompiles, bad input."""

import jax
import numpy as np
import pytest

import core
from core.stability import MAP_RTOL, MomentumMap, momentum_map

LOSSES = ("sum", "mean")
LRS = np.geomspace(1e-3, 3.0, 13)
MOMENTA = np.array([0.0, 0.3, 0.6, 0.9, 0.97])


def heavy_ball(w0, lr, momentum, x, y, loss):
    """optax.sgd(lr, momentum)'s run in float64 NumPy: (final w, peak |w - w*| / limit, w*)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    w_star = np.sum(x * y) / np.sum(x * x)
    limit = core.DIVERGENCE_RATIO * max(1.0, abs(w0 - w_star))
    scale = x.shape[1] if loss == "mean" else 1
    w, trace, peak = float(w0), 0.0, 0.0
    for xk, yk in zip(x, y, strict=True):
        trace = 2 * np.sum((w * xk - yk) * xk) / scale + momentum * trace
        w = w - lr * trace
        peak = max(peak, abs(w - w_star) / limit)
        if peak > 1e30:
            return np.nan, np.inf, w_star
    return w, peak, w_star


@pytest.mark.parametrize("seed", range(6))
def test_matches_float64_heavy_ball(seed):
    rng = np.random.default_rng(seed)
    rows, columns = int(rng.integers(20, 41)), int(rng.integers(4, 13))
    x, y = core.make_batches(rows, columns, seed=seed, noise=0.5)
    n, b, w0 = int(rng.integers(5, rows + 1)), int(rng.integers(1, columns + 1)), float(2 * rng.normal())
    batches = core.HistoryEngine(max_steps=40, max_batch=12).pad(x, y)
    result = momentum_map(batches, LRS, MOMENTA, batch_size=b, w0=w0, n=n)
    assert isinstance(result, MomentumMap) and result.batch_size == b
    checked = []
    for loss in LOSSES:
        assert result.log10_error[loss].shape == result.diverged[loss].shape == (MOMENTA.size, LRS.size)
        for i, m in enumerate(MOMENTA):
            critical = core.critical_lr(x[:n, :b], loss=loss, momentum=m)
            assert result.critical_lr[loss][i] == pytest.approx(critical, rel=MAP_RTOL)
            for j, lr in enumerate(LRS):
                w, peak, w_star = heavy_ball(w0, lr, m, x[:n, :b], y[:n, :b], loss)
                if 0.5 < peak < 2:
                    continue  # near the divergence limit, float32 may decide either way
                assert result.diverged[loss][i, j] == (peak > 1), (loss, m, lr, peak)
                checked.append(peak > 1)
                if peak < 0.5 and abs(w - w_star) > 1e-3 * max(1.0, abs(w0)):
                    assert result.log10_error[loss][i, j] == pytest.approx(
                        np.log10(abs(w - w_star)), abs=2e-3
                    )
    assert any(checked) and not all(checked) and len(checked) > 0.7 * 2 * MOMENTA.size * LRS.size


def test_a_cell_is_optimizer_history_s_run():
    x, y = core.make_batches(30, 8, seed=11, noise=0.3)
    batches = core.HistoryEngine(max_steps=30, max_batch=8).pad(x, y)
    result = momentum_map(batches, [0.01, 0.03], [0.5, 0.9], batch_size=5, w0=-1.0, n=25)
    w_star = core.optimum(x[:25, :5], y[:25, :5])
    for loss in LOSSES:
        for i, m in enumerate((0.5, 0.9)):
            for j, lr in enumerate((0.01, 0.03)):
                run = core.optimizer_history(
                    -1.0, lr, x[:25, :5], y[:25, :5], optimizer="momentum", momentum=m, loss=loss
                )
                assert result.diverged[loss][i, j] == (run.diverged_at is not None)
                if run.diverged_at is None:
                    error = abs(float(run.weights[-1]) - w_star)
                    assert 10 ** result.log10_error[loss][i, j] == pytest.approx(error, rel=1e-3, abs=1e-5)


@pytest.mark.parametrize("loss", LOSSES)
def test_identical_batches_diverge_exactly_past_one_plus_momentum_over_s(loss):
    n, b = 200, 4
    row = np.array([0.5, -1.0, 0.75, 1.25], np.float32)
    x, y = np.tile(row, (n, 1)), np.tile(2 * row, (n, 1))
    batches = core.HistoryEngine(max_steps=n, max_batch=b).pad(x, y)
    momenta = np.linspace(0.0, 0.9, 10)
    lrs = np.geomspace(0.05, 2.0, 60)
    result = momentum_map(batches, lrs, momenta, batch_size=b, w0=0.0)
    s = float(np.sum(row.astype(np.float64) ** 2))
    expected = (1 + momenta) / s * (b if loss == "mean" else 1)
    np.testing.assert_allclose(result.critical_lr[loss], expected, rtol=1e-12)
    ratio = lrs[None, :] / expected[:, None]
    # At 0.99 and 1.01 times the boundary, over many steps: decay and growth.
    away = np.abs(ratio - 1) > 0.05
    np.testing.assert_array_equal(result.diverged[loss][away], (ratio > 1)[away])
    assert (ratio[away] > 1).any() and (ratio[away] < 1).any()
    near = momentum_map(
        batches, np.concatenate([0.99 * expected, 1.01 * expected]), momenta, batch_size=b, w0=0.0, n=n
    )
    size, start = momenta.size, np.log10(2.0)  # |w0 - w*| = 2
    below = near.log10_error[loss][np.arange(size), np.arange(size)]
    above = near.log10_error[loss][np.arange(size), size + np.arange(size)]
    assert not near.diverged[loss][np.arange(size), np.arange(size)].any()
    assert np.all(below < start - 0.1), below  # decayed over the 200 steps
    grew = near.diverged[loss][np.arange(size), size + np.arange(size)] | (above > start + 0.1)
    assert grew.all(), above


def test_momentum_zero_is_the_stability_map():
    x, y = core.make_batches(40, 10, seed=2, noise=0.5)
    batches = core.HistoryEngine(max_steps=40, max_batch=10).pad(x, y)
    plain = core.stability_map(batches, LRS, [3, 7], w0=0.5, n=33)
    mapped = momentum_map(batches, LRS, [0.0], batch_size=7, w0=0.5, n=33)
    for loss in LOSSES:
        np.testing.assert_array_equal(mapped.diverged[loss][0], plain.diverged[loss][1])
        np.testing.assert_array_equal(mapped.log10_error[loss][0], plain.log10_error[loss][1])
        assert mapped.critical_lr[loss][0] == plain.critical_lr[loss][1]


def test_no_recompile_for_new_n_w0_b_lrs_momenta_or_data(count_compiles):
    engine = core.HistoryEngine(max_steps=29, max_batch=7)  # a padded shape no other test uses
    first = engine.pad(*core.make_batches(29, 7, seed=3, noise=0.2))
    second = engine.pad(*core.make_batches(20, 6, seed=4, noise=0.4))
    with count_compiles() as events:
        a = momentum_map(first, np.geomspace(1e-3, 1.0, 5), [0.0, 0.5, 0.9], batch_size=7, w0=0.0)
    assert len(events) >= 1
    with count_compiles() as events:
        b = momentum_map(second, np.geomspace(2e-3, 2.0, 5), [0.1, 0.2, 0.99], batch_size=2, w0=1.5, n=13)
    assert events == []
    assert not np.array_equal(a.log10_error["sum"], b.log10_error["sum"], equal_nan=True)


GOOD = {"lrs": LRS, "momenta": MOMENTA, "batch_size": 3, "w0": 0.0, "n": 10}


@pytest.mark.parametrize(
    "change, error, words",
    [
        ({"momenta": [0.5, 1.0]}, ValueError, "momenta must lie in \\[0, 1\\), got 1$"),
        ({"momenta": [-0.1]}, ValueError, "momenta must lie in \\[0, 1\\)"),
        ({"momenta": [np.nan]}, ValueError, "momenta must lie in \\[0, 1\\)"),
        ({"momenta": []}, ValueError, "momenta must be a non-empty 1-D array"),
        ({"momenta": [[0.5]]}, ValueError, "momenta must be a non-empty 1-D array"),
        ({"momenta": ["a"]}, TypeError, "momenta must hold real numbers"),
        ({"batch_size": 0}, ValueError, "batch_size must lie in 1..8"),
        ({"batch_size": 9}, ValueError, "batch_size must lie in 1..8"),
        ({"batch_size": 2.0}, TypeError, "batch_size must be an integer"),
        ({"batch_size": True}, TypeError, "batch_size must be an integer"),
        ({"lrs": [0.0]}, ValueError, "lrs must be positive"),
        ({"w0": np.inf}, ValueError, "w0"),
        ({"n": 0}, ValueError, "n must lie in 1..20"),
    ],
)
def test_bad_arguments_are_named(change, error, words):
    batches = core.HistoryEngine(max_steps=20, max_batch=8).pad(*core.make_batches(20, 8, seed=0))
    arguments = {**GOOD, **change}
    lrs, momenta = arguments.pop("lrs"), arguments.pop("momenta")
    with pytest.raises(error, match=words):
        momentum_map(batches, lrs, momenta, **arguments)


def test_traced_momenta_are_refused():
    batches = core.HistoryEngine(max_steps=20, max_batch=8).pad(*core.make_batches(20, 8, seed=0))
    with pytest.raises(TypeError, match="momenta must be concrete"):
        jax.jit(lambda m: momentum_map(batches, LRS, m, batch_size=3, w0=0.0))(np.array([0.5]))
