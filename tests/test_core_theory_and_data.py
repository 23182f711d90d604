"""Theory (factors, optimum, critical learning rate, regime) and the deterministic data."""

import numpy as np
import pytest

import core


def test_identical_batches_critical_lr_is_exactly_1_over_s_and_b_over_s():
    x, _ = core.make_batches(10, 4, seed=0, kind="ones")  # S = 4
    assert core.critical_lr(x) == 1 / 4
    assert core.critical_lr(x, loss="mean") == 4 / 4
    x1, _ = core.make_batches(1, 7, seed=3)
    x = np.tile(x1, (5, 1))
    s = float(np.sum(x1.astype(np.float64) ** 2))
    assert core.critical_lr(x) == 1 / s
    assert core.critical_lr(x, loss="mean") == 7 / s


@pytest.mark.parametrize(("n", "b", "seed"), [(50, 1, 0), (200, 2, 1), (30, 16, 2), (500, 64, 3)])
def test_varying_batches_critical_lr_is_where_the_product_reaches_one(n, b, seed):
    x, _ = core.make_batches(n, b, seed=seed)
    sums = np.sum(x.astype(np.float64) ** 2, axis=1)
    for loss, scale in (("sum", 1.0), ("mean", float(b))):
        critical = core.critical_lr(x, loss=loss)

        def log_product(lr, scale=scale):
            return np.sum(np.log(np.abs(1 - 2 * (lr / scale) * sums)))

        assert scale / sums.max() <= critical <= scale / sums.min()
        assert abs(log_product(critical)) < 1e-6
        grid = np.linspace(0, critical, 4001)[1:-1]
        assert max(log_product(lr) for lr in grid) < 0


@pytest.mark.parametrize(
    "x",
    [
        core.make_batches(300, 37, seed=8)[0],  # varying batches: one bisection serves both losses
        core.make_batches(6, 5, seed=0, kind="ones")[0],  # one distinct S: B/S, not B*(1/S)
        np.tile(core.make_batches(1, 7, seed=3)[0], (4, 1)),
        np.zeros((3, 2), np.float32),  # inf for both
    ],
)
def test_critical_lrs_are_critical_lr_for_both_losses_bit_for_bit(x):
    both = core.critical_lrs(x)
    assert set(both) == {"sum", "mean"}
    for loss, value in both.items():
        assert value == core.critical_lr(x, loss=loss)
        assert value == core.critical_lrs(core.moments(x))[loss]


def test_all_zero_inputs_never_move():
    x = np.zeros((3, 2), np.float32)
    assert core.critical_lr(x) == float("inf")
    assert core.regime(0.1, x) == "stalled"
    assert np.isnan(core.optimum(x, x))


@pytest.mark.parametrize(
    ("lr", "expected"),
    [
        (0.0, "stalled"),
        (0.05, "monotone"),
        (0.125, "monotone"),
        (0.2, "oscillating"),
        (0.25, "two-cycle"),
        (0.3, "diverging"),
        (-0.01, "diverging"),
    ],
)
def test_regime_for_identical_batches(lr, expected):
    x, _ = core.make_batches(5, 4, seed=0, kind="ones")  # S = 4: exact at 1/8, two-cycle at 1/4
    assert core.regime(lr, x) == expected
    assert core.regime(lr * 4, x, loss="mean") == expected


def test_regime_matches_the_run():
    x, y = core.make_batches(6, 4, seed=0, kind="ones")
    assert core.regime(0.25, x) == "two-cycle"
    history = core.training_history(0.0, 0.25, x, y)
    np.testing.assert_allclose(history.weights[1::2], 2.0)  # w* = 1: 0 -> 2 -> 0 -> 2 ...
    np.testing.assert_allclose(history.weights[0::2], 0.0)


def test_step_factors_and_optimum():
    x, y = core.make_batches(3, 5, seed=4, true_w=-1.5)
    sums = np.sum(x.astype(np.float64) ** 2, axis=1)
    np.testing.assert_allclose(core.step_factors(0.01, x), 1 - 0.02 * sums)
    np.testing.assert_allclose(core.step_factors(0.01, x, loss="mean"), 1 - 0.02 * sums / 5)
    assert core.optimum(x, y) == pytest.approx(-1.5, rel=1e-6)


def test_make_batches_is_deterministic_and_prefix_stable():
    x, y = core.make_batches(20, 16, seed=5, noise=0.3)
    x2, y2 = core.make_batches(20, 16, seed=5, noise=0.3)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
    small_x, small_y = core.make_batches(7, 5, seed=5, noise=0.3)
    np.testing.assert_array_equal(small_x, x[:7, :5])
    np.testing.assert_array_equal(small_y, y[:7, :5])
    other_x, _ = core.make_batches(20, 16, seed=6, noise=0.3)
    assert not np.array_equal(other_x, x)


def test_make_batches_values():
    x, y = core.make_batches(400, 64, seed=1)
    assert x.dtype == np.float32 and x.shape == (400, 64)
    np.testing.assert_array_equal(y, 2 * x)  # noise-free, default true_w = 2
    assert abs(float(x.mean())) < 0.02 and abs(float(x.std()) - 1) < 0.02
    _, noisy = core.make_batches(400, 64, seed=1, noise=0.5)
    assert abs(float(np.std(noisy - 2 * x)) - 0.5) < 0.02
    ones_x, ones_y = core.make_batches(3, 2, seed=9, kind="ones", true_w=3.0)
    np.testing.assert_array_equal(ones_x, 1.0)
    np.testing.assert_array_equal(ones_y, 3.0)


def test_batches_from_one_large_draw_equal_make_batches():
    draws = core.draw_batches(50, 40, seed=11)
    for n, b, true_w, noise in [(50, 40, 2.0, 0.0), (7, 3, -1.5, 0.4), (1, 1, 0.0, 2.0)]:
        x, y = core.batches_from_draws(draws, n, b, true_w=true_w, noise=noise)
        x2, y2 = core.make_batches(n, b, seed=11, true_w=true_w, noise=noise)
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(y, y2)
    with pytest.raises(ValueError, match="larger than the draws"):
        core.batches_from_draws(draws, 51, 2)


def test_each_row_of_the_draws_is_its_own_generators():
    # The data's contract (prefix-stable in n and b): row i of stream 0 (x) and 1 (eps) is
    # default_rng([seed, stream, i]).standard_normal(b), whatever the rows' number.
    draws = core.draw_batches(6, 5, seed=13)
    for i in range(6):
        for stream, values in ((0, draws.x), (1, draws.eps)):
            expected = np.random.default_rng([13, stream, i]).standard_normal(5)
            assert values[i].tobytes() == expected.tobytes()


def test_draws_without_eps_serve_data_of_noise_0_only():
    full, lean = core.draw_batches(9, 4, seed=11), core.draw_batches(9, 4, seed=11, with_eps=False)
    assert lean.eps is None and lean.x.tobytes() == full.x.tobytes()
    ones = core.draw_batches(3, 2, seed=0, kind="ones", with_eps=False)
    assert ones.eps is None
    np.testing.assert_array_equal(ones.x, 1.0)
    for draws in (full, lean):
        x, y = core.batches_from_draws(draws, 9, 4, true_w=1.5)
        x2, y2 = core.make_batches(9, 4, seed=11, true_w=1.5)
        assert x.tobytes() == x2.tobytes() and y.tobytes() == y2.tobytes()
    with pytest.raises(ValueError, match="noise must be 0 for draws made with with_eps=False, got 0.3"):
        core.batches_from_draws(lean, 9, 4, noise=0.3)
    with pytest.raises(TypeError, match="with_eps must be True or False, got str 'no'"):
        core.draw_batches(9, 4, seed=11, with_eps="no")


def test_moments_give_the_same_theory_as_the_arrays():
    x, y = core.make_batches(40, 6, seed=12, noise=0.3)
    m = core.moments(x, y)
    for loss in ("sum", "mean"):
        assert core.critical_lr(m, loss=loss) == core.critical_lr(x, loss=loss)
        np.testing.assert_array_equal(
            core.step_factors(0.02, m, loss=loss), core.step_factors(0.02, x, loss=loss)
        )
        assert core.regime(0.02, m, loss=loss) == core.regime(0.02, x, loss=loss)
    assert core.optimum(m) == core.optimum(x, y)


def test_average_loss_is_the_mean_squared_error_over_all_examples():
    x, y = core.make_batches(9, 5, seed=13, noise=0.7)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    weights = np.array([-3.0, 0.0, core.optimum(x, y), 2.5, np.inf, np.nan])
    expected = [np.mean((w * x64 - y64) ** 2) for w in weights[:4]]
    landscape = core.average_loss(weights, x, y)
    np.testing.assert_allclose(landscape[:4], expected, rtol=1e-12)
    assert landscape[4] == np.inf and np.isnan(landscape[5])  # and no warning
    np.testing.assert_array_equal(core.average_loss(weights, core.moments(x, y)), landscape)


def test_y_is_required_where_the_answer_depends_on_it():
    x, y = core.make_batches(20, 4, seed=1, true_w=3.0)
    with pytest.raises(TypeError, match="optimum needs y_batches"):
        core.optimum(x)
    with pytest.raises(TypeError, match="average_loss needs y_batches"):
        core.average_loss([3.0], x)
    assert np.isnan(core.optimum(core.moments(x)))  # x alone: w* is unknown, not 0
    assert core.optimum(core.moments(x, y)) == pytest.approx(3.0)


def test_hand_built_moments_are_checked():
    good = core.moments(*core.make_batches(3, 2, seed=0))
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        core.regime(0.1, good._replace(batch_size=0), loss="mean")
    with pytest.raises(ValueError, match="float arrays of one shape"):
        core.critical_lr(good._replace(sxx=[1.0, 2.0]))


def test_theory_refuses_a_traced_lr():
    import jax

    x, _ = core.make_batches(3, 2, seed=0)
    with pytest.raises(TypeError, match="cannot run under jax.jit"):
        jax.jit(lambda lr: core.step_factors(lr, x))(0.1)
