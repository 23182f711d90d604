"""core.contours.valley_path: how a path over (w, b) crosses the valley's floor, against a path built
across a floor found another way (the 2x2 matrix's eigenvector angle in closed form)."""

import math

import numpy as np
import pytest

import core
from core.contours import valley_path


def _floor_and_steep(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors along the valley's floor and across it, from A = [[mean(x²), mean(x)], [mean(x), 1]]:
    the larger eigenvalue's eigenvector lies at 0.5 * atan2(2 A01, A00 - A11)."""
    a00, a01 = float(np.mean(x * x)), float(np.mean(x))
    angle = 0.5 * math.atan2(2.0 * a01, a00 - 1.0)
    steep = np.array([math.cos(angle), math.sin(angle)])
    return np.array([-steep[1], steep[0]]), steep


@pytest.mark.parametrize("x_mean", [0.5, 3.0, -2.0])
def test_a_path_built_across_the_floor_is_counted_as_built(x_mean):
    rng = np.random.default_rng(7)
    x = (rng.normal(size=(12, 8)) + x_mean).astype(np.float32)
    y = (2.0 * x + 1.0).astype(np.float32)
    data = core.moments(x, y)
    centre = (2.0, 1.0)
    floor, steep = _floor_and_steep(x.astype(np.float64))
    # 21 points: along the floor from 5 to 0; across it +-d, the sign flipping at steps 1..9 and then
    # kept, so 9 of the 20 steps cross it.
    steps = 20
    across = np.array([0.3 * 0.9**k * (-1) ** min(k, 9) for k in range(steps + 1)])
    along = np.linspace(5.0, 0.0, steps + 1)
    points = np.asarray(centre) + along[:, None] * floor + across[:, None] * steep
    path = valley_path(data, centre, points[:, 0], points[:, 1])
    assert (path.crossings, path.steps, path.after) == (9, steps, 2)
    assert path.settled == pytest.approx(np.mean(np.abs(across[2:])), rel=1e-9)
    assert path.end == pytest.approx(math.hypot(*(points[-1] - centre)), rel=1e-9)


def test_a_diverged_path_is_measured_up_to_its_last_finite_point():
    x = np.linspace(-1.0, 3.0, 16, dtype=np.float32).reshape(2, 8)
    data = core.moments(x, 2.0 * x)
    w = np.array([0.0, 1.0, -3.0, np.inf, np.nan])
    b = np.array([0.0, 0.5, 2.0, 1.0, np.nan])
    path = valley_path(data, (2.0, 0.0), w, b)
    assert path.steps == 2 and path.end == pytest.approx(math.hypot(-5.0, 2.0))
