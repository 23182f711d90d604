"""Timing statistics, one definition for every benchmark: the median, and the 95th percentile
interpolated linearly between the two samples around it (NumPy's default, `np.percentile(values,
95)`), so that a p95 in one table means the same everywhere."""

import numpy as np


def summary(values) -> dict:
    """{"n", "min", "median", "p95", "max"} of a non-empty sequence of numbers, as floats (n an int)."""
    a = np.asarray(list(values), dtype=np.float64)
    return {
        "n": int(a.size),
        "min": float(a.min()),
        "median": float(np.median(a)),
        "p95": float(np.percentile(a, 95)),
        "max": float(a.max()),
    }
