"""The theory of y = w*x + b (core.average_loss(..., b=), step_factors and regime with
intercept=True) against float64 loops over the data, numpy's eigenvalues and products of the step
matrices multiplied out; without an intercept, the lesson's numbers bit for bit."""

import re
from fractions import Fraction

import jax
import numpy as np
import pytest

import core

CASES = 50


def random_data(rng, n=None, b=None):
    """float32 (n, b) batches: x around a random mean and spread, y a noisy random line."""
    n = int(rng.integers(2, 30)) if n is None else n  # n*b >= 2: x varies, (w*, b*) is defined
    b = int(rng.integers(1, 9)) if b is None else b
    x = rng.normal(loc=rng.uniform(-4, 4), scale=rng.uniform(0.2, 2), size=(n, b))
    y = rng.uniform(-3, 3) * x + rng.uniform(-3, 3) + rng.normal(scale=rng.uniform(0.01, 1), size=(n, b))
    return x.astype(np.float32), y.astype(np.float32)


def step_matrices(lr, x, loss):
    """I - c*lr*H_k for each batch, float64 (N, 2, 2), written out from the examples."""
    x = np.asarray(x, np.float64)
    c = 2.0 / x.shape[1] if loss == "mean" else 2.0
    matrices = []
    for row in x:
        h = np.array([[np.sum(row * row), np.sum(row)], [np.sum(row), row.size]])
        matrices.append(np.eye(2) - c * lr * h)
    return np.array(matrices)


def log_radius_multiplied_out(matrices):
    """log of the spectral radius of M_N ... M_1, one step at a time, rescaled as it goes."""
    product, log_scale = np.eye(2), 0.0
    for m in matrices:
        product = m @ product
        big = np.max(np.abs(product))
        product, log_scale = product / big, log_scale + np.log(big)
    return log_scale + np.log(np.max(np.abs(np.linalg.eigvals(product))))


# The loss over (w, b) -------------------------------------------------------------------------


def test_average_loss_with_b_is_the_mean_over_every_example():
    rng = np.random.default_rng(0)
    for _ in range(CASES):
        x, y = random_data(rng)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        w_star, b_star = core.optimum(x, y, intercept=True)
        w = np.concatenate([[w_star], w_star + rng.normal(scale=3, size=4)])
        b = np.concatenate([[b_star], b_star + rng.normal(scale=3, size=3)])
        got = core.average_loss(w[None, :], x, y, b=b[:, None])
        assert got.shape == (4, 5) and got.dtype == np.float64
        want = np.array([[np.mean((wi * x64 + bi - y64) ** 2) for wi in w] for bi in b])
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * float(np.mean(y64**2)))
        # The minimum is at the least-squares (w*, b*), and the Moments give the same numbers.
        assert got[0, 0] == got.min()
        np.testing.assert_array_equal(core.average_loss(w[None, :], core.moments(x, y), b=b[:, None]), got)


def test_average_loss_with_b_broadcasts_and_takes_scalars():
    x, y = random_data(np.random.default_rng(1), 6, 4)
    w, b = np.linspace(-2, 2, 7), np.linspace(-1, 1, 3)
    grid = core.average_loss(w[None, :], x, y, b=b[:, None])
    assert grid.shape == (3, 7)
    assert core.average_loss(w, x, y, b=0.5).shape == (7,)
    assert core.average_loss(w[3], x, y, b=b[1]) == grid[1, 3]
    with pytest.raises(ValueError, match="b must be real numbers that broadcast against weights"):
        core.average_loss(w, x, y, b=np.zeros(3))


def test_average_loss_with_b_when_every_x_is_alike():
    # No (w*, b*): a line of (w, b) fits equally well, and the loss is still the mean over the data.
    x = np.full((4, 3), 2.0, np.float32)
    y = (3.0 * x - 1.0 + np.arange(12, dtype=np.float32).reshape(4, 3) / 10).astype(np.float32)
    w, b = np.array([[0.0, 3.0, -1.5]]), np.array([[-1.0], [0.0], [5.0]])
    want = [[np.mean((wi * x.astype(np.float64) + bi - y) ** 2) for wi in w[0]] for bi in b[:, 0]]
    np.testing.assert_allclose(core.average_loss(w, x, y, b=b), want, rtol=1e-9)


def test_average_loss_without_b_is_unchanged_bit_for_bit():
    rng = np.random.default_rng(2)
    for _ in range(CASES):
        x, y = random_data(rng)
        weights = rng.normal(scale=4, size=9)
        m = core.moments(x, y)
        sxx, sxy, syy = float(np.sum(m.sxx)), float(np.sum(m.sxy)), float(np.sum(m.syy))
        w_star = sxy / sxx
        want = ((weights - w_star) ** 2 * sxx + max(syy - sxy * w_star, 0.0)) / x.size
        np.testing.assert_array_equal(core.average_loss(weights, x, y), want)
        np.testing.assert_array_equal(core.average_loss(weights, x, y, b=None), want)


def test_average_loss_with_b_needs_the_sums_of_x_and_y():
    x, y = random_data(np.random.default_rng(3), 3, 2)
    for field in ("sx", "sy"):
        with pytest.raises(ValueError, match=re.escape("average_loss(..., intercept=True) needs Moments")):
            core.average_loss(1.0, core.moments(x, y)._replace(**{field: None}), b=0.0)
    with pytest.raises(TypeError, match="cannot run under jax.jit"):
        jax.jit(lambda b: core.average_loss(1.0, x, y, b=b))(0.0)


# Per-step factors -----------------------------------------------------------------------------


def test_step_factors_are_the_step_matrices_largest_eigenvalue_in_magnitude():
    rng = np.random.default_rng(4)
    for case in range(CASES):
        x, _ = random_data(rng)
        loss = ("sum", "mean")[case % 2]
        lr = core.critical_lr(x, loss=loss, intercept=True) * rng.uniform(0.05, 3)
        got = core.step_factors(lr, x, loss=loss, intercept=True)
        assert got.shape == (x.shape[0],) and got.dtype == np.float64
        for k, matrix in enumerate(step_matrices(lr, x, loss)):
            eigenvalues = np.linalg.eigvals(matrix).real  # symmetric: real
            want = eigenvalues[np.argmax(np.abs(eigenvalues))]
            assert got[k] == pytest.approx(want, rel=1e-9, abs=1e-12 * max(1.0, abs(want)))
            assert abs(got[k]) == pytest.approx(np.linalg.norm(matrix, 2), rel=1e-9)
        np.testing.assert_array_equal(got, core.step_factors(lr, core.moments(x), loss=loss, intercept=True))


def test_step_factors_of_a_large_mean_keep_the_shallow_direction():
    # x = 1000 + a small spread: lambda_min is about 1e-8 of lambda_max, and its factor must not be
    # lost to cancellation. det(H_k) = B * sum((x - mean_k)**2), centred here, gives it exactly.
    rng = np.random.default_rng(5)
    x = (1000 + rng.normal(scale=0.1, size=(3, 4))).astype(np.float32)
    x64 = x.astype(np.float64)
    largest = np.array([np.linalg.eigvalsh(np.eye(2) - m)[-1] for m in step_matrices(1.0, x, "sum")]) / 2
    lr = 0.5 / largest.max()
    factors = core.step_factors(lr, x, intercept=True)
    centred = np.sum((x64 - x64.mean(axis=1, keepdims=True)) ** 2, axis=1)
    shallow = 1 - 2 * lr * x.shape[1] * centred / largest
    # 1 - factor is about 1e-14 here, which float64 holds to about 1%.
    np.testing.assert_allclose(1 - factors, 1 - shallow, rtol=0.05)
    assert np.all(factors < 1)


def test_step_factors_without_an_intercept_are_unchanged_bit_for_bit():
    rng = np.random.default_rng(6)
    for case in range(CASES):
        x, _ = random_data(rng)
        loss, lr = ("sum", "mean")[case % 2], float(rng.uniform(0.001, 1))
        scale = x.shape[1] if loss == "mean" else 1.0
        want = 1.0 - 2.0 * (lr / scale) * np.sum(x.astype(np.float64) ** 2, axis=1)
        np.testing.assert_allclose(core.step_factors(lr, x, loss=loss), want, rtol=1e-14)
        np.testing.assert_array_equal(
            core.step_factors(lr, x, loss=loss, intercept=False), core.step_factors(lr, x, loss=loss)
        )


# Regime ---------------------------------------------------------------------------------------


def brute_force_regime(lr, x, loss):
    """regime's words from the step matrices multiplied out (None within 1e-6 of the boundary)."""
    matrices = step_matrices(lr, x, loss)
    log_radius = log_radius_multiplied_out(matrices)
    if abs(log_radius) < 1e-6:
        return None
    overshoots = any(np.linalg.eigvalsh(m)[0] < 0 for m in matrices)
    if log_radius > 0:
        return "diverging"
    return "oscillating" if overshoots else "monotone"


def test_regime_with_an_intercept_against_the_product_multiplied_out():
    rng = np.random.default_rng(7)
    seen = set()
    for case in range(CASES):
        x, _ = random_data(rng)
        loss = ("sum", "mean")[case % 2]
        critical = core.critical_lr(x, loss=loss, intercept=True)
        for factor in (0.01, rng.uniform(0.1, 0.95), rng.uniform(1.05, 3)):
            lr = critical * factor
            want = brute_force_regime(lr, x, loss)
            if want is not None:
                assert core.regime(lr, x, loss=loss, intercept=True) == want, (case, factor)
                seen.add(want)
            if factor < 1:  # below the first crossing nothing grows
                assert core.regime(lr, x, loss=loss, intercept=True) != "diverging"
    assert seen == {"monotone", "oscillating", "diverging"}


@pytest.mark.parametrize("loss", ["sum", "mean"])
def test_regime_with_an_intercept_at_the_closed_form_boundary_is_a_two_cycle(loss):
    x = np.tile(np.array([[0.5, 1.5, 3.0, 2.0]], np.float32), (6, 1))
    critical = core.critical_lr(x, loss=loss, intercept=True)
    assert core.regime(critical, x, loss=loss, intercept=True) == "two-cycle"
    assert core.regime(0.999 * critical, x, loss=loss, intercept=True) == "oscillating"
    assert core.regime(1.001 * critical, x, loss=loss, intercept=True) == "diverging"
    assert core.regime(0.0, x, loss=loss, intercept=True) == "stalled"


def test_regime_when_every_x_is_alike_leaves_the_still_direction_out():
    x = np.full((5, 3), 2.0, np.float32)  # H_k = 3 * (2, 1)(2, 1)^T: lambda_max = 15
    critical = core.critical_lr(x, intercept=True)
    assert critical == pytest.approx(1 / 15, rel=1e-14)
    assert core.regime(0.2 * critical, x, intercept=True) == "monotone"
    assert core.regime(0.8 * critical, x, intercept=True) == "oscillating"
    assert core.regime(critical, x, intercept=True) == "two-cycle"
    assert core.regime(1.2 * critical, x, intercept=True) == "diverging"
    # Zero x: b still moves (H_k = [[0, 0], [0, B]]), so nothing stalls.
    assert core.regime(0.1, np.zeros((3, 2), np.float32), intercept=True) == "monotone"


def test_regime_without_an_intercept_is_unchanged():
    rng = np.random.default_rng(8)
    for case in range(CASES):
        x, _ = random_data(rng)
        loss = ("sum", "mean")[case % 2]
        lr = core.critical_lr(x, loss=loss) * rng.uniform(0.05, 2)
        assert core.regime(lr, x, loss=loss, intercept=False) == core.regime(lr, x, loss=loss)
        factors = core.step_factors(lr, x, loss=loss)
        log_growth = np.sum(np.log(np.abs(factors)))
        if abs(log_growth) > 1e-9:
            want = "diverging" if log_growth > 0 else "oscillating" if np.any(factors < 0) else "monotone"
            assert core.regime(lr, x, loss=loss) == want


def test_the_intercept_theory_needs_the_sums_of_x():
    m = core.moments(np.ones((3, 2), np.float32))._replace(sx=None)
    for function in (core.step_factors, core.regime):
        with pytest.raises(ValueError, match="needs Moments with sx"):
            function(0.1, m, intercept=True)
    with pytest.raises(ValueError, match="lr must be finite"):
        core.regime(float("nan"), np.ones((3, 2), np.float32), intercept=True)


# The critical lr with momentum and an intercept, against exact arithmetic: a float64 product of
# the 4x4 heavy-ball steps cannot tell a contraction of less than an ulp a pass from growth, which
# is the case the search got wrong (a shallow direction when |mean(x)| dwarfs the spread).


def _as_integers(values):
    """Integers n_i and one power of two d with values_i == n_i / d exactly (finite floats)."""
    fractions = [Fraction(float(v)) for v in values]
    d = max(f.denominator for f in fractions)
    return [f.numerator * (d // f.denominator) for f in fractions], d


def _times(a, b):
    return [[sum(a[i][j] * b[j][k] for j in range(4)) for k in range(4)] for i in range(4)]


def exactly_contracts(u, data, momentum):
    """Exactly whether every eigenvalue of the N heavy-ball steps' product at sum-loss rate u lies
    inside the unit circle: the steps [[I - 2u*H_k, -u*m*I], [2H_k, m*I]] in integers (scaled by
    d**2), the characteristic polynomial by Faddeev-LeVerrier, then the Schur-Cohn test."""
    (nu, nm, nb, *sums), d = _as_integers([u, momentum, data.batch_size, *data.sxx, *data.sx])
    steps = len(data.sxx)
    product = None
    for s, x in zip(sums[:steps], sums[steps:], strict=True):
        h11, h12, h22 = 2 * s, 2 * x, 2 * nb
        step = [
            [d * d - nu * h11, -nu * h12, -nu * nm, 0],
            [-nu * h12, d * d - nu * h22, 0, -nu * nm],
            [h11 * d, h12 * d, nm * d, 0],
            [h12 * d, h22 * d, 0, nm * d],
        ]
        product = step if product is None else _times(step, product)
    # det(zI - product): c[0] + c[1] z + ... + c[4] z**4, exact (every division leaves no remainder).
    c, m = [0, 0, 0, 0, 1], [[0] * 4 for _ in range(4)]
    for k in range(1, 5):
        m = [
            [e + (c[5 - k] if i == j else 0) for j, e in enumerate(row)]
            for i, row in enumerate(_times(product, m))
        ]
        trace = -sum(_times(product, m)[i][i] for i in range(4))
        assert trace % k == 0
        c[4 - k] = trace // k
    # The true product is the integer one over d**(2N): its eigenvalues z are those over that scale.
    scale = d ** (2 * steps)
    poly = [c[k] * scale**k for k in range(5)]
    while len(poly) > 1:  # Schur-Cohn: each reduction keeps the roots' count inside the circle
        first, last = poly[0], poly[-1]
        if abs(first) >= abs(last):
            return False
        poly = [last * poly[i] - first * poly[-1 - i] for i in range(len(poly))][1:]
    return True


def nearly_identical(x_mean, spread, n=12, b=8):
    """Moments of n copies of one batch, every other copy's S_k one ulp larger: no longer identical,
    so the general search runs, but the closed form still holds to ~1e-15."""
    x = np.random.default_rng(7).normal(x_mean, spread, (1, b)).repeat(n, axis=0)
    data = core.moments(x)
    sxx = np.where(np.arange(n) % 2 == 1, np.nextafter(data.sxx, np.inf), data.sxx)
    return data._replace(sxx=sxx)


@pytest.mark.parametrize(("x_mean", "spread"), [(0, 1), (3, 1), (5, 1), (20, 1), (1000, 1), (1000, 0.01)])
@pytest.mark.parametrize("momentum", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("loss", ["sum", "mean"])
def test_critical_lr_with_an_intercept_and_momentum_for_near_identical_batches(
    x_mean, spread, momentum, loss
):
    # Heavy ball on a quadratic converges iff lr * c * lambda_max < 2 (1 + momentum).
    data = nearly_identical(x_mean, spread)
    s, x, b = float(data.sxx[0]), float(data.sx[0]), float(data.batch_size)
    largest = (s + b) / 2 + np.hypot((s - b) / 2, x)
    c = 2.0 / b if loss == "mean" else 2.0
    expected = 2 * (1 + momentum) / (c * largest)
    got = core.critical_lr(data, loss=loss, momentum=momentum, intercept=True)
    assert got == pytest.approx(expected, rel=1e-9)
    assert core.critical_lrs(data, momentum=momentum, intercept=True)[loss] == got


@pytest.mark.parametrize(("x_mean", "spread"), [(0, 1), (3, 1), (5, 1), (20, 1), (1000, 1), (1000, 0.01)])
@pytest.mark.parametrize("momentum", [0.0, 0.5, 0.9])
def test_critical_lr_with_an_intercept_and_momentum_against_exact_arithmetic(x_mean, spread, momentum):
    x = np.random.default_rng(int(x_mean) + 11).normal(x_mean, spread, (16, 8))
    data = core.moments(x)
    u = core.critical_lr(data, momentum=momentum, intercept=True)  # sum loss: u is the rate itself
    # Just above, the product does not contract; just below, it does. Where the crossing is flat
    # (x_mean = 1000, momentum 0.9: the log radius within 1e-13 of 0 for a band of rates 1e-6 wide)
    # the search, which counts growth within rounding's reach as none, lands up to 2e-6 above it.
    assert not exactly_contracts(u * (1 + 1e-9), data, momentum)
    assert exactly_contracts(u * (1 - 1e-5), data, momentum)
    # And none of 24 rates below it (down to a thousandth) fails to contract. (A window of growth
    # narrower than the search's first grid can still hide between them: `critical_lr` says so.)
    for rate in np.geomspace(u / 1000, u * (1 - 1e-5), 24):
        assert exactly_contracts(rate, data, momentum), rate / u
