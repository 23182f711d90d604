"""Reading what a learner's function returned, and matching it against the models of an exercise.

`read(out, n)` says what an output holds (the final weight alone, a history of N or N+1 entries,
scan's (carry, outputs) pair, or something else); `diagnose` names the one pattern (the right
update, a mistake, a slip) that the final weights of every case agree with, by evidence. This is
the one module that learns what a parameter pytree looks like when an exercise returns one.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from core.exercises.report import TOLERANCE, WRONG_RESULT, num, nums


class Output(NamedTuple):
    kind: str  # "scalar", "history" (entries follow N), "pair" (scan's (carry, ys)) or "other"
    final: float | None  # the final weight it holds, if any
    dtype: str | None  # the final weight's dtype, "a Python float", ... ; None if not a number
    shown: str  # the output as messages show it
    values: list | None = None  # a history's entries


def numeric(value):
    """`value` as a NumPy array of real numbers, or None."""
    if value is None or isinstance(value, (str, bytes)):
        return None
    try:
        array = np.asarray(value)
    except Exception:  # anything np.asarray refuses is not a number
        return None
    dtype = array.dtype
    if not (jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer) or dtype.kind == "b"):
        return None
    return array


def dtype_of(value, array) -> str:
    if not isinstance(value, (np.generic, np.ndarray, jax.Array)):
        if isinstance(value, bool):
            return "a Python bool"
        if isinstance(value, numbers.Integral):
            return "a Python int"
        if isinstance(value, numbers.Real):
            return "a Python float"
    return str(array.dtype)


def read(out, n: int) -> Output:
    """What `out`, returned for n batches, holds."""
    if isinstance(out, (tuple, list)) and len(out) == 2:
        first, second = numeric(out[0]), numeric(out[1])
        per_step = out[1] is None or (second is not None and second.ndim >= 1 and second.shape[0] == n)
        if first is not None and first.ndim == 0 and per_step:
            rest = "None" if out[1] is None else f"an array of shape {tuple(second.shape)}"
            return Output("pair", float(first), dtype_of(out[0], first), f"({num(first)}, {rest})")
    if isinstance(out, (tuple, list)):
        entries = [numeric(v) for v in out]
        if out and all(e is not None and e.ndim == 0 for e in entries):
            values = [float(e) for e in entries]
            kind = "history" if len(out) in (n, n + 1) else "other"
            what = f"a {type(out).__name__} of {len(out)} numbers {nums(values)}"
            return Output(kind, values[-1], dtype_of(out[-1], entries[-1]), what, values)
        return Output("other", None, None, f"a {type(out).__name__} of {len(out)} items")
    if out is None:
        return Output("other", None, None, "None (is its return statement missing?)")
    array = numeric(out)
    if array is None:
        return Output("other", None, None, f"a {type(out).__name__}"[:80])
    dtype = dtype_of(out, array)
    if array.ndim == 0:
        return Output("scalar", float(array), dtype, num(array))
    if array.ndim == 1 and array.shape[0] in (n, n + 1):
        values = [float(v) for v in array]
        return Output(
            "history", values[-1], dtype, f"an array of shape {array.shape}: {nums(values)}", values
        )
    return Output("other", None, dtype, f"an array of shape {tuple(array.shape)}")


def close(value: float, model: float) -> bool:
    return math.isfinite(value) and abs(value - model) <= TOLERANCE * max(1.0, abs(model))


def matches(outcomes: dict, value: float) -> dict:
    """pattern -> the rows text of its first model in `outcomes` (pattern -> [(model, rows)]) that
    `value` matches."""
    found = {}
    for pattern, models in outcomes.items():
        for model, rows in models:
            if close(value, model):
                found.setdefault(pattern, rows)
                break
    return found


def diagnose(outcomes: list, values, patterns) -> tuple[str | None, list]:
    """The pattern that `values`, one final weight per case, show against each case's `outcomes`
    (pattern -> [(model, rows)], "correct" among them): None when all are right, a mistake code or
    a slip when exactly one of `patterns` is consistent with every case, else WRONG_RESULT; and the
    per-case matches."""
    per_case = [matches(found, value) for found, value in zip(outcomes, values, strict=True)]
    if all("correct" in found for found in per_case):
        return None, per_case
    consistent = [
        pattern
        for pattern in patterns
        if pattern != "correct"
        if all(pattern in found or "correct" in found for found in per_case)
        and any(pattern in found and "correct" not in found for found in per_case)
    ]
    return (consistent[0] if len(consistent) == 1 else WRONG_RESULT), per_case


# --- reading what the learner's function returns -------------------------------------------------
