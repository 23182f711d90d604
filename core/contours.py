"""The contours of the loss of y = w*x + b over (w, b), in closed form.

The average loss over the M = N*B examples is a quadratic in p = (w, b):
L(p) = L* + (p - p*)^T A (p - p*), A = [[mean(x**2), mean(x)], [mean(x), 1]], p* its least-squares
minimum. So each contour {L = L* + d} is an ellipse around p*, whose axes are A's eigenvectors and
half-lengths sqrt(d / eigenvalue): computed from the data's sums in microseconds, exactly, with no grid
and no pass over the data. When every x is alike, A has rank one and the "ellipse" is a pair of
parallel lines (the valley floor is a line of equally good fits).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from core.theory import Moments

# An eigenvalue of A below this share of the larger counts as zero: every x alike, in float32 data.
_FLAT = 1e-9


class Contours(NamedTuple):
    """The loss's level curves, ready to draw as one line with gaps.

    w, b: float64 (K * (points + 1),): each curve's points then a NaN (a gap between curves).
    levels: float64 (K * (points + 1),): the average loss on the curve each point belongs to.
    """

    w: np.ndarray
    b: np.ndarray
    levels: np.ndarray


def _quadratic(data: Moments) -> tuple[np.ndarray, float]:
    """A (2, 2) float64 and M, the number of examples, from the data's sums."""
    if data.sx is None:
        raise ValueError("loss_contours needs Moments with sx (as core.moments makes them)")
    m = float(np.size(data.sxx) * data.batch_size)
    mean_xx, mean_x = float(np.sum(data.sxx)) / m, float(np.sum(data.sx)) / m
    return np.array([[mean_xx, mean_x], [mean_x, 1.0]]), m


def loss_contours(data: Moments, centre, excess, *, reach: float, points: int = 97) -> Contours:
    """The curves where the average loss is `excess` above its minimum, around the minimum `centre`.

    Args:
      data: the batches' `Moments` (with sx, as `core.moments` makes them).
      centre: (w*, b*), a minimum of the average loss (any point of the valley floor when every x is
        alike).
      excess: K positive floats, the heights above the minimum to draw.
      reach: how far a flat valley's lines run each way from `centre` along its floor (when every x
        is alike): the drawing's size in (w, b) units.
      points: points per curve.

    Returns:
      `Contours` (levels are the excess, to be added to the minimum's loss by the caller).
    """
    a, _ = _quadratic(data)
    values, vectors = np.linalg.eigh(a)  # ascending: values[1] the steep direction
    centre = np.asarray(centre, dtype=np.float64).reshape(2, 1)
    excess = np.asarray(excess, dtype=np.float64).reshape(-1)
    flat = values[0] <= _FLAT * values[1]
    angle = np.linspace(0.0, 2.0 * np.pi, points)
    gap = np.full((2, 1), np.nan)
    curves, heights = [np.zeros((2, 0))], [np.zeros(0)]
    for d in excess:
        if flat:
            # Two lines either side of the floor, `points // 2` points each, a gap between them.
            half = np.sqrt(d / values[1]) * vectors[:, 1:2]
            along = np.linspace(-reach, reach, points // 2) * vectors[:, 0:1]
            curve = np.concatenate([centre + half + along, gap, centre - half + along], axis=1)
        else:
            radii = np.sqrt(d / values)
            curve = centre + vectors @ (radii[:, None] * np.stack([np.cos(angle), np.sin(angle)]))
        curves.append(np.concatenate([curve, gap], axis=1))
        heights.append(np.full(curve.shape[1] + 1, d))
    w, b = np.concatenate(curves, axis=1)
    return Contours(w, b, np.concatenate(heights))


def nearest_minimum(data: Moments, start) -> tuple[float, float]:
    """The minimum of the average loss nearest `start` (w0, b0), as floats: (w*, b*) itself, or when
    every x is alike (a valley floor of minima) the floor's point nearest the start, which plain
    gradient descent from there reaches (its steps move across the floor, never along it)."""
    if data.sy is None:
        raise ValueError("nearest_minimum needs Moments with sx and sy (as core.moments makes them)")
    a, m = _quadratic(data)
    v = np.array([float(np.sum(data.sxy)), float(np.sum(data.sy))]) / m
    p = np.asarray(start, dtype=np.float64)
    w, b = p - np.linalg.pinv(a, rcond=_FLAT, hermitian=True) @ (a @ p - v)
    return float(w), float(b)


def valley_ratio(data: Moments) -> float:
    """How much steeper the loss's steepest direction over (w, b) is than its flattest: the ratio of
    A's eigenvalues (its condition number), inf when every x is alike. 1 + mean(x)**2 and more: x
    far from 0 makes the valley long and narrow."""
    a, _ = _quadratic(data)
    low, high = np.linalg.eigvalsh(a)
    return float(high / low) if low > _FLAT * high else float("inf")


class ValleyPath(NamedTuple):
    """How a run's path over (w, b) moves in the valley (`valley_path`).

    crossings: how many of its steps cross the floor's line (the line through the minimum along the
      flattest direction), of `steps`, the steps before it diverged or ended.
    settled: the mean distance from that line of the points after the first tenth of the steps
      (after step `after`), float: how near the floor the path keeps once under way.
    end: the distance of its last point (its last finite one) from the minimum, float.
    """

    crossings: int
    steps: int
    settled: float
    after: int
    end: float


def valley_path(data: Moments, centre, w, b) -> ValleyPath:
    """`ValleyPath` of the path of (w, b) (each (N+1,), the start first) around the minimum `centre`,
    float64 throughout; the points after the first non-finite one are left out."""
    a, _ = _quadratic(data)
    steep = np.linalg.eigh(a)[1][:, 1]  # the steepest direction, across the floor
    path = np.stack([np.asarray(w, np.float64), np.asarray(b, np.float64)], axis=1)
    finite = np.all(np.isfinite(path), axis=1)
    path = path[: len(path) if finite.all() else int(np.argmin(finite))] - np.asarray(centre, np.float64)
    across = path @ steep
    steps = len(across) - 1
    after = max(1, steps // 10)
    crossings = int(np.sum(across[1:] * across[:-1] < 0))
    settled = float(np.mean(np.abs(across[after:]))) if steps > after else float(abs(across[-1]))
    return ValleyPath(crossings, steps, settled, after, float(np.hypot(*path[-1])))


def excess_loss(data: Moments, centre, w, b) -> np.ndarray:
    """How far above the minimum the average loss is at each (w, b) (broadcast), float64: the
    contours' height at those points, from the quadratic alone."""
    a, _ = _quadratic(data)
    dw = np.asarray(w, dtype=np.float64) - centre[0]
    db = np.asarray(b, dtype=np.float64) - centre[1]
    with np.errstate(over="ignore", invalid="ignore"):
        return a[0, 0] * dw * dw + 2.0 * a[0, 1] * dw * db + a[1, 1] * db * db


__all__ = [
    "Contours",
    "ValleyPath",
    "excess_loss",
    "loss_contours",
    "nearest_minimum",
    "valley_path",
    "valley_ratio",
]
