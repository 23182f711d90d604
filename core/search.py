"""The first-crossing searches the theory's critical learning rates share, in float64 NumPy.

`bisect` narrows a boundary between two rates to float64 resolution; `first_crossing` finds, for
many searches at once, the smallest rate at which a product of step matrices grows (its spectral
radius reaches 1), by geometric then finer grids. Both know nothing of the model: the caller gives
the predicate or the log of the spectral radius (`core.theory`, for y = w*x and y = w*x + b).
"""

from __future__ import annotations

import numpy as np

GRID = 512  # learning rates tried at first in the search for the first crossing with momentum


def bisect(predicate, lo, hi):
    """The boundary between lo (predicate False) and hi (predicate True), to float64 resolution."""
    while True:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            return hi
        if predicate(mid):
            hi = mid
        else:
            lo = mid


def first_crossing(
    log_radius, low: np.ndarray, high: np.ndarray, rtol: float = 0.0, points: int = GRID, grow: float = 2.0
) -> np.ndarray:
    """M searches at once for the smallest rate at which a product of step matrices grows.

    log_radius(rows, rates) is the log of the spectral radius for searches `rows` (K,) at `rates`
    (K, G). Search i starts on a geometric grid of `points` rates (default GRID) over
    [low[i], high[i]], then over [high, grow * high] (default: doubling) until a rate grows, then
    narrows the first bracket by finer grids to float64 resolution (or to a relative `rtol`).
    Returns (M,) rates, float64."""
    result = np.full(low.shape, np.inf)
    searching = np.ones(low.shape, bool)  # no rate tried has grown yet
    grid = np.empty(low.shape + (max(points, 64),))
    grows = np.zeros(grid.shape, bool)
    for _ in range(60):
        rows = np.flatnonzero(searching)
        if rows.size == 0:
            break
        grid[rows] = np.inf  # past the first grid's points, nothing is tried
        grid[rows, :points] = np.geomspace(low[rows], high[rows], points, axis=-1)
        grows[rows] = False
        grows[rows, :points] = log_radius(rows, grid[rows, :points]) >= 0
        found = grows[rows].any(axis=-1)
        searching[rows[found]] = False
        later = rows[~found]
        low[later], high[later] = high[later], grow * high[later]
    # Refine each first bracket with finer grids (each pass over the batches tries many rates at
    # once, where a bisection would pass once per rate) down to float64 resolution.
    refining = ~searching
    for _ in range(20):
        rows = np.flatnonzero(refining)
        if rows.size == 0:
            break
        k = np.argmax(grows[rows], axis=-1)
        first = k == 0
        result[rows[first]] = grid[rows[first], 0]
        refining[rows[first]] = False
        rows, k = rows[~first], k[~first]
        lo, hi = grid[rows, k - 1], grid[rows, k]
        resolved = (np.nextafter(lo, hi) >= hi) | (hi - lo <= rtol * hi)
        result[rows[resolved]] = hi[resolved]
        refining[rows[resolved]] = False
        rows, lo, hi = rows[~resolved], lo[~resolved], hi[~resolved]
        if rows.size == 0:
            break
        fine = np.linspace(lo, hi, 64, axis=-1)
        grid[rows] = np.inf  # past the fine grid's 64 rates, nothing is tried
        grid[rows, :64] = fine
        grows[rows] = True
        grows[rows, :64] = log_radius(rows, fine) >= 0
        grows[rows, 63] = True  # high grew when it was tried; rounding may say otherwise once
    rows = np.flatnonzero(refining)
    result[rows] = grid[rows, np.argmax(grows[rows], axis=-1)]
    return result
