"""The "loop" check: is there a `lax.scan`, or is the step unrolled?

`jax.make_jaxpr` at N = 2 and N = 6 (lr fixed, so a static lr does not hide the loop). No `scan`
primitive in the jaxpr, nested ones included, or the step's own arithmetic repeating with N (an
unrolled Python loop: more multiplications, sums, ... at N = 6 than at N = 2), is `not_scan`. Only
moving data may grow with N: `list(ys)` after a scan slices its output N times, and that is no loop.
`lax.fori_loop` with a static trip count lowers to `scan` and passes; `lax.while_loop` is a
compiled loop but not `scan`, and does not. As the exercises ask, `not_scan` is reported only when
the final weights are right.
"""

from __future__ import annotations

import numpy as np

from core.exercises.report import Exercise, Finding
from core.exercises.sandbox import TRACER_ERRORS, Raised, describe_error


def _sub_jaxprs(param):
    if hasattr(param, "eqns"):
        yield param
    elif hasattr(getattr(param, "jaxpr", None), "eqns"):  # a ClosedJaxpr
        yield param.jaxpr
    elif isinstance(param, (tuple, list)):
        for item in param:
            yield from _sub_jaxprs(item)


def _equations(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in _sub_jaxprs(param):
                yield from _equations(sub)


# Primitives that move, reshape or wrap data and compute nothing: a scan's output turned into a
# Python list or stacked again adds these per step, while an unrolled step repeats its arithmetic.
_MOVING = frozenset(
    {
        "slice",
        "squeeze",
        "dynamic_slice",
        "dynamic_update_slice",
        "gather",
        "concatenate",
        "reshape",
        "broadcast_in_dim",
        "convert_element_type",
        "copy",
        "copy_p",
        "pjit",
        "jit",
        "closed_call",
        "expand_dims",
    }
)


def _repeating(counts: dict) -> dict:
    """primitive -> how many more of it at N = 6 than at N = 2, for the primitives that compute."""
    grown = {name: counts[6].get(name, 0) - counts[2].get(name, 0) for name in counts[6]}
    return {name: more for name, more in grown.items() if more > 0 and name not in _MOVING}


def check_loop(exercise: Exercise, fn, state: dict) -> Finding:
    """The "loop" check of any exercise: its `trace` gives the learner's jaxpr."""
    return loop_finding(lambda n, x, y: exercise.trace(fn, n, x, y), state, exercise.hints)


def loop_finding(trace, state: dict, hints: dict) -> Finding:
    """The "loop" check: `trace(n, x, y)` gives the learner's ClosedJaxpr for (n, 3) batches x and y
    (lr fixed, so that a static lr does not hide the loop); `hints` has "not_scan" and "host_sync"."""
    sizes, primitives, counts = {}, {}, {}
    for n in (2, 6):
        ones = np.ones((n, 3), np.float32)
        try:
            jaxpr = trace(n, ones, ones).jaxpr
        except TRACER_ERRORS as exc:
            return Finding(
                "loop",
                False,
                f"Not judged: tracing your function to a jaxpr raised {describe_error(exc)} (see host_sync).",
                hints["host_sync"],
            )
        except Exception as exc:
            raise Raised(exc, f"while tracing it with jax.make_jaxpr for N = {n} batches") from exc
        equations = list(_equations(jaxpr))
        sizes[n] = len(equations)
        primitives[n] = {eqn.primitive.name for eqn in equations}
        counts[n] = {}
        for eqn in equations:
            counts[n][eqn.primitive.name] = counts[n].get(eqn.primitive.name, 0) + 1
    has_scan = "scan" in primitives[6]
    repeating = _repeating(counts)
    unrolled = bool(repeating)
    if has_scan and not unrolled:
        return Finding(
            "loop",
            True,
            f"The traced program has a lax.scan, and its step's operations do not repeat with N "
            f"({sizes[2]} operations for N = 2 batches, {sizes[6]} for N = 6).",
            "",
            sizes[2],
            sizes[6],
        )
    if unrolled:
        message = (
            f"The traced program grows with N: {sizes[2]} operations for N = 2 batches, {sizes[6]} for "
            "N = 6, the step's own arithmetic repeating ("
            + ", ".join(f"{more} more {name}" for name, more in sorted(repeating.items()))
            + "). The loop is unrolled, one copy of the step per batch (a Python loop)."
        )
        expected, actual = sizes[2], sizes[6]
    else:
        loops = (
            "it uses lax.while_loop, a compiled loop but not a scan"
            if "while" in primitives[6]
            else "no loop"
        )
        message = f"The traced program has no lax.scan ({loops})."
        expected, actual = "scan", ", ".join(sorted(primitives[6] & {"while", "cond"})) or "no loop"
    if not state.get("values_right"):
        return Finding(
            "loop", False, "Not judged until the final weights are right. " + message, hints["not_scan"]
        )
    return Finding("not_scan", False, message, hints["not_scan"], expected, actual)
