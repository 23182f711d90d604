"""Reading what a learner's function returned, and matching it against the models of an exercise.

`read(out, n)` says what an output holds (the final weight alone, a history of N or N+1 entries,
scan's (carry, outputs) pair, or something else); `read_params(out, n)` says the same of an output
that should be the params dict {"w": w, "b": b}; `diagnose` names the one pattern (the right
update, a mistake, a slip) that the final weights (or (w, b) pairs) of every case agree with, by
evidence. This is the one module that learns what a parameter pytree looks like when an exercise
returns one.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from core._checks import PARAMS
from core.exercises.report import TOLERANCE, WRONG_RESULT, Exercise, Finding, num, nums, params_text


class Output(NamedTuple):
    kind: str  # "scalar", "history" (entries follow N), "pair" (scan's (carry, ys)) or "other"
    final: float | tuple | None  # the final weight it holds, or read_params's (w, b); None if none
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


def close(value, model) -> bool:
    """Whether `value` matches `model` within TOLERANCE: two floats, or two tuples of floats (the
    (w, b) of read_params) entry by entry."""
    if isinstance(model, tuple):
        return (
            isinstance(value, tuple)
            and len(value) == len(model)
            and all(close(v, m) for v, m in zip(value, model, strict=True))
        )
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


def pattern_finding(
    exercise: Exercise, pattern: str, per_case: list, values: list, expected: list, show=num, held=None
) -> Finding:
    """The failing "numbers" finding for what `diagnose` found on `exercise.cases`: `pattern` (a
    mistake, a slip of `exercise.explanations`, or WRONG_RESULT), with `values` the learner's
    results and `expected` the right ones, one per case. Said on the case that shows it best: the
    distinct batches (case 1), else the first case where the pattern's model matched, else the
    first wrong one. `show` writes a value in the message; `held` gives what the Finding holds as
    expected and actual (default: the value itself). A slip's code is WRONG_RESULT."""
    held = held or (lambda value: value)
    wrong = [i for i, found in enumerate(per_case) if "correct" not in found]
    order = [1] + [i for i in range(len(per_case)) if i != 1]
    index = next((i for i in order if i in wrong and pattern in per_case[i]), wrong[0])
    case, actual, right = exercise.cases[index], values[index], expected[index]
    message = (
        f"On {case.description}, your function returns {show(actual)}; the right steps give {show(right)}."
    )
    if pattern == WRONG_RESULT:
        message += " No single known mistake gives this (perhaps several at once)."
    else:
        explained = exercise.explanations[pattern].format(rows=per_case[index][pattern])
        message += f" {show(actual)} is {explained}."
    code = pattern if pattern in exercise.mistakes else WRONG_RESULT
    return Finding(code, False, message, exercise.hints[code], held(right), held(actual))


# --- reading a params dict {"w": w, "b": b} ----------------------------------------------------------


def _param_arrays(value) -> dict | None:
    """{"w": array, "b": array} when `value` is a dict of exactly those keys holding real numbers
    (any shape), else None."""
    if not isinstance(value, dict) or set(value) != set(PARAMS):
        return None
    arrays = {key: numeric(value[key]) for key in PARAMS}
    return arrays if all(a is not None for a in arrays.values()) else None


def _per_step(value, n: int) -> bool:
    """Whether `value` is a scan's per-step output for n steps: None, or leaves with leading axis n."""
    if value is None:
        return True
    leaves = [numeric(leaf) for leaf in jax.tree.leaves(value)]
    return bool(leaves) and all(a is not None and a.ndim >= 1 and a.shape[0] == n for a in leaves)


def read_params(out, n: int) -> Output:
    """What `out`, returned for n batches where the params dict {"w": w_N, "b": b_N} is expected,
    holds. kind: "params" (that dict, final = (w, b) as floats), "history" (a dict whose "w" and
    "b" have N or N+1 entries; final = the last of each), "pair" (scan's (carry, per-step outputs)
    with the params dict as carry; final = its (w, b)), "tuple" (a tuple or list of two numbers;
    final = them in the order given), "keys" (a dict of two numbers under other keys than "w" and
    "b"; final = its values in its order) or "other" (final None)."""
    arrays = _param_arrays(out)
    if arrays is not None:
        w, b = arrays["w"], arrays["b"]
        if w.ndim == 0 and b.ndim == 0:
            final = (float(w), float(b))
            return Output("params", final, dtype_of(out["w"], w), params_text(final))
        if w.ndim == 1 and w.shape == b.shape and w.shape[0] in (n, n + 1):
            values = [(float(a), float(c)) for a, c in zip(w, b, strict=True)]
            shown = f"a dict of arrays of shape {w.shape}: {{'w': {nums(w)}, 'b': {nums(b)}}}"
            return Output("history", values[-1], str(w.dtype), shown, values)
        return Output("other", None, None, f"a dict whose 'w' has shape {w.shape} and 'b' shape {b.shape}")
    if isinstance(out, dict):
        keys = f"a dict with the keys {', '.join(map(repr, out))}"[:120]
        values = [numeric(value) for value in out.values()]
        if len(values) == 2 and all(v is not None and v.ndim == 0 for v in values):
            final = (float(values[0]), float(values[1]))
            return Output("keys", final, None, f"{keys} ({num(values[0])}, {num(values[1])})")
        return Output("other", None, None, keys)
    if isinstance(out, (tuple, list)) and len(out) == 2:
        carry = _param_arrays(out[0])
        if carry is not None and all(a.ndim == 0 for a in carry.values()) and _per_step(out[1], n):
            final = (float(carry["w"]), float(carry["b"]))
            rest = "None" if out[1] is None else "the per-step outputs"
            return Output("pair", final, None, f"({params_text(final)}, {rest})")
        first, second = numeric(out[0]), numeric(out[1])
        if first is not None and second is not None and first.ndim == 0 and second.ndim == 0:
            final = (float(first), float(second))
            shown = f"a {type(out).__name__} of two numbers ({num(first)}, {num(second)})"
            return Output("tuple", final, dtype_of(out[0], first), shown)
    output = read(out, n)
    shown = f"one number, {output.shown}" if output.kind == "scalar" else output.shown
    return Output("other", None, None, shown)
