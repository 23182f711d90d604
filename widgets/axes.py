"""The charts' axes: their ranges around the drawn values, their ticks and labels, and the signed
log scale on which a diverging run's weights are drawn. No charts here: widgets.figures uses these.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

RANGE_PAD = {"xaxis": 0.02, "yaxis": 0.05}
"""How much wider than the drawn values an axis is, each side, as a share of their span."""


def axis_range(
    values: list, *, log: bool = False, pad: float = 0.05, floor: float | None = None
) -> list[float] | None:
    """[low, high] around the finite values in `values` (arrays and lists), padded by `pad` of their
    span each side; on a log axis, in log10 units around the positive ones. None when no value can
    be drawn. With a `floor` (linear axes) that no value is under, the range starts there: a
    quantity that cannot be negative is drawn from 0."""
    parts = [np.asarray(v, dtype=np.float64).ravel() for v in values]
    a = np.concatenate(parts) if parts else np.empty(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if log:
            a = np.log10(a[a > 0])
        a = a[np.isfinite(a)]
    if a.size == 0:
        return None
    low, high = float(a.min()), float(a.max())
    if floor is not None and not log and floor <= low:
        return [floor, high + pad * (high - floor)] if high > floor else [floor, floor + 1.0]
    span = high - low
    if not span > 0:  # one value: a decade, or a fifth of it either side
        span = 1.0 if log else (abs(high) * 0.4 or 2.0)
        return [low - span / 2, high + span / 2]
    return [low - pad * span, high + pad * span]


STEP_TICKS_UP_TO = 10
"""The widest step axis (in steps) labelled at every step. Plotly draws at most 10 labels on an axis
of its own, so on a wider one its spacing is a whole number of steps."""

LOG_TICKS_UP_TO = 3.0
"""The most decades that the loss chart's log axis labels at 1, 2 and 5 in each (`LossPerStep.ticks`)."""

_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def tick_label(value: float) -> str:
    """A log axis's label for 1, 2 or 5 times a power of ten, written out in full from 0.001 to
    50000 (0.002, 50, 20000) and as 2×10⁵ or 10⁻⁶ beyond."""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    power = f"10{str(int(exponent)).translate(_SUPERSCRIPTS)}"
    return power if mantissa == "1" else f"{mantissa}×{power}"


def log_ticks(low: float, high: float) -> list[float]:
    """1, 2 and 5 times each power of ten from 10**low to 10**high (log10 units), in order; none
    for a range that is not finite."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    values = []
    for exponent in range(math.floor(low), math.ceil(high) + 1):
        for mantissa in (1, 2, 5):
            value = float(f"{mantissa}e{exponent}")  # 2e-3 exactly as written, not 2 * 10.0**-3
            if value > 0 and low <= math.log10(value) <= high:  # float("1e-324") is 0
                values.append(value)
    return values


class SignedLog(NamedTuple):
    """A signed log scale for a weight axis, for runs that diverge: w/c within ±c, and
    sign(w)·(1 + log10(|w|/c)) beyond, so that 0, ±c, ±10c, ±100c ... are evenly spaced and a run
    whose distance grows by a constant factor each step climbs in a straight line. On a linear
    axis such a run was a flat line for 50 steps and then a spike to 5e15, with the ✖ of "diverged at
    step 23" on the flat part. Plotly has no such axis type: the values are drawn transformed and
    the ticks labelled with the weights (`ticks`); hover shows the weights (customdata)."""

    c: float  # a power of ten: the linear part's half-width, beyond w0 and w*

    @classmethod
    def around(cls, *weights: float) -> SignedLog:
        """The scale whose linear part holds `weights` (w0, w*) with a fifth to spare."""
        largest = max([abs(w) for w in weights if math.isfinite(w)] + [1.0])
        return cls(10.0 ** math.ceil(math.log10(1.2 * largest)))

    def __call__(self, values) -> np.ndarray:
        """The drawn positions of `values` (NaN stays NaN)."""
        v = np.asarray(values, dtype=np.float64) / self.c
        with np.errstate(divide="ignore", invalid="ignore"):
            far = np.sign(v) * (1.0 + np.log10(np.abs(v)))
        return np.where(np.abs(v) <= 1.0, v, far)

    def weight(self, position: float) -> float:
        """The weight drawn at `position` (the inverse of calling the scale)."""
        if abs(position) <= 1.0:
            return position * self.c
        return math.copysign(self.c * 10.0 ** (abs(position) - 1.0), position)

    def ticks(self, low: float, high: float) -> tuple[list[float], list[str]]:
        """Tick positions at whole numbers from `low` to `high` (0, ±c, ±10c, ...), every k-th one
        so that at most SIGNED_LOG_TICKS are labelled, and their labels, the weights."""
        if not (math.isfinite(low) and math.isfinite(high)):
            return [], []
        first, last = math.ceil(low), math.floor(high)
        every = max(1, math.ceil((last - first + 1) / SIGNED_LOG_TICKS))
        positions = [float(k) for k in range(first, last + 1) if k % every == 0]
        labels = []
        for k in positions:
            value = self.weight(k)
            size = abs(value)
            # Powers of ten (c is one): written out up to 1000, then as 10⁴, 10⁸.
            power = f"10{str(round(math.log10(size))).translate(_SUPERSCRIPTS)}" if value else "0"
            text = "0" if not value else f"{size:g}" if size < 1e4 else power
            labels.append("−" + text if value < 0 else text)
        return positions, labels


SIGNED_LOG_TICKS = 9
"""The most labels on a SignedLog axis: a run that diverges both ways spans 32 whole positions."""


def figure_scale(figure) -> SignedLog | None:
    """The SignedLog scale a drawn chart's y axis has now (its layout's meta.signed_log, set with
    the ticks), None for a plain axis."""
    c = figure.get("meta.signed_log")
    return None if c is None else SignedLog(c)
