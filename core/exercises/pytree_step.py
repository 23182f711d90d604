"""The checker of the exercise on a parameter pytree as the carry: y = w*x + b, params {"w", "b"}.

`check_pytree_step(fn)` calls `fn(params, lr, x_batches, y_batches)` on designed cases, params the
dict {"w": w, "b": b} of float32 0-d arrays, and returns a `Report` as the other checkers do, with
the same machinery (core.exercises.sandbox): each check in its own thread under a time limit, the
learner's exceptions described by the line of their own code, and a mistake diagnosed only when,
on every case, the final (w, b) matches either the right values or that mistake's float64 model,
and on at least one case only that mistake's.

The checks (`PYTREE_CHECKS`), in order:

- "numbers": four cases (the worked example, three distinct batches, one batch, two batches of
  four), every x with a nonzero mean so that w and b pull on each other: a step that treats them
  apart, or in turn, moves them elsewhere. The models: the right step (both gradients of the sum
  loss sum((w*x + b - y)**2) at the params the step receives, then every leaf p - lr * g), b never
  updated (kept at its start, in the loss or left out of it), the updates in turn (w first and b's
  gradient at the new w, or b first and w's at the new b), gradient ascent (p + lr * g), the
  tree.map's trees swapped (g - lr * p), the mean loss (both gradients divided by B), the
  gradients without their factor 2 (of 1/2 * sum((w*x + b - y)**2)), lr applied twice, every
  batch's gradients at every step (summed or averaged), the previous step's gradients, every step
  from the params given (the body reading the outer params), x and y swapped, a leaf stepped with
  the other's gradient, the leaves read as params.values() (inside the scan the keys come back
  sorted: w reads b), the batches transposed, a hard-coded lr, the params returned unchanged (the
  updates never applied: optax.apply_updates left out, or the params given returned instead of the
  scan's final carry), the scan started from w = b = 0 instead of params, and one slip with no
  code, said in words: the right values under each other's keys. A tuple or list of two numbers
  is `returns_tuple`, said with what came back and the dict expected; a dict of per-step arrays,
  or the pair that lax.scan returns, is `returns_history` (judged on the distinct batches).
- "traced": `jax.jit` of the function with params, lr and the batches traced must run and give the
  right params on the distinct batches (judged once the numbers are right).
- "loop": core.exercises.loop's check: a `scan` in the jaxpr, the step's operations not repeating
  with N.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from core.exercises.hints import PYTREE_EXPLANATIONS, PYTREE_HINTS
from core.exercises.loop import check_loop
from core.exercises.reading import close, diagnose, pattern_finding, read_params
from core.exercises.report import (
    DEFAULT_TIMEOUT,
    WRONG_RESULT,
    Exercise,
    Finding,
    Report,
    params_text,
    rows_text,
)
from core.exercises.sandbox import call, run

# The numeric slips a later issue named (the first exercise's names where it has the same slip),
# each with a float64 model in `_Case.run`.
_LATER_NUMERIC = (
    "missing_factor_two",
    "lr_twice",
    "full_batch",
    "stale_gradient",
    "each_step_from_initial",
    "xy_swapped",
    "wrong_leaf_gradient",
    "values_order",
    "wrong_axis",
    "lr_ignored",
)

PYTREE_MISTAKES = (
    "b_not_updated",
    "sequential_update",
    "returns_tuple",
    "gradient_ascent",
    "tree_map_swapped",
    "mean_not_sum",
    "returns_history",
    "not_scan",
    "host_sync",
    "error",
    *_LATER_NUMERIC,
    "keys_renamed",
    "params_unchanged",
    "from_zeros",
)
"""The pytree exercise's public mistake codes (new ones appended)."""
PYTREE_CHECKS = ("numbers", "traced", "loop")
"""Its checks, in the order they run."""

# The patterns with a model: the right step, the numeric mistakes, the params returned unchanged,
# the scan from zeros, and a slip with no code (the right values under each other's keys).
_NUMERIC = (
    "b_not_updated",
    "sequential_update",
    "gradient_ascent",
    "tree_map_swapped",
    "mean_not_sum",
    *_LATER_NUMERIC,
)
# lr_ignored's rates: common constants, none of them a case's lr (each case has the same models).
_HARD_CODED_LRS = (0.01, 0.05, 0.2)
_PATTERNS = ("correct", *_NUMERIC, "params_unchanged", "keys_swapped", "from_zeros")
# The rules of `_Case.run` whose step is the right one, p - lr * g: they differ in what the gradients
# are taken on (the rows, the params, x and y), before the step.
_PLAIN_STEP = (
    "correct",
    "full summed",
    "full averaged",
    "from initial",
    "x y swapped",
    "sorted values",
    "transposed",
)


def _gradients(w: float, b: float, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The gradients of sum((w*x + b - y)**2) in w and in b, in float64."""
    error = w * x + b - y
    return 2.0 * float(np.sum(error * x)), 2.0 * float(np.sum(error))


class _Case(NamedTuple):
    label: str
    w: float
    b: float
    lr: float
    x: np.ndarray  # float64, every value exact in float32; every row's mean nonzero
    y: np.ndarray

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def description(self) -> str:
        return (
            f"{self.label} (params = {params_text((self.w, self.b))}, lr = {self.lr:g}, "
            f"x_batches = {rows_text(self.x)}, y_batches = {rows_text(self.y)})"
        )

    def inputs(self, traced: bool = False) -> tuple:
        """The learner's arguments: params {"w", "b"} of float32 0-d arrays, lr a Python float (a
        float32 0-d array when `traced`), float32 (N, B) batches."""
        params = {"w": jnp.asarray(np.float32(self.w)), "b": jnp.asarray(np.float32(self.b))}
        lr = jnp.asarray(np.float32(self.lr)) if traced else float(self.lr)
        x, y = (jnp.asarray(a.astype(np.float32)) for a in (self.x, self.y))
        return params, lr, x, y

    def run(self, rule: str) -> tuple[float, float]:
        """The final (w, b) under `rule`, in float64: written here, not taken from core.pytree, so
        that the models do not share the code they check."""
        w, b, lr = self.w, self.b, self.lr
        previous = (0.0, 0.0)  # "stale": the gradients the step before took
        rows = (
            zip(self.x.T, self.y.T, strict=True) if rule == "transposed" else zip(self.x, self.y, strict=True)
        )
        for x, y in rows:
            if rule == "sorted values":  # w, b = params.values(): the keys come back sorted, b first
                w, b = b, w
            if rule == "from initial":  # every step from the params given: the last batch's step stays
                w, b = self.w, self.b
            gw, gb = _gradients(w, b, y, x) if rule == "x y swapped" else _gradients(w, b, x, y)
            if rule.startswith("full"):  # every batch's gradients, at every step
                everything = [_gradients(w, b, xs, ys) for xs, ys in zip(self.x, self.y, strict=True)]
                share = 1.0 if rule == "full summed" else 1.0 / self.n
                gw, gb = (share * sum(g[i] for g in everything) for i in (0, 1))
            if rule in _PLAIN_STEP:
                w, b = w - lr * gw, b - lr * gb
            elif rule == "b kept":
                w = w - lr * gw
            elif rule == "b left out":  # the first exercise's loss, sum((w*x - y)**2)
                w = w - lr * _gradients(w, 0.0, x, y)[0]
            elif rule == "w first":
                w = w - lr * gw
                b = b - lr * _gradients(w, b, x, y)[1]
            elif rule == "b first":
                b = b - lr * gb
                w = w - lr * _gradients(w, b, x, y)[0]
            elif rule == "ascent":
                w, b = w + lr * gw, b + lr * gb
            elif rule == "swapped":  # jax.tree.map(lambda p, g: p - lr * g, grads, params)
                w, b = gw - lr * w, gb - lr * b
            elif rule == "mean":
                w, b = w - lr * gw / x.size, b - lr * gb / x.size
            elif rule == "half":  # the gradients without their factor 2
                w, b = w - lr * gw / 2, b - lr * gb / 2
            elif rule == "lr twice":
                w, b = w - lr * lr * gw, b - lr * lr * gb
            elif rule == "stale":
                (w, b), previous = (w - lr * previous[0], b - lr * previous[1]), (gw, gb)
            elif rule == "b with w's":
                w, b = w - lr * gw, b - lr * gw
            elif rule == "w with b's":
                w, b = w - lr * gb, b - lr * gb
            elif rule.startswith("lr "):  # a hard-coded rate, "lr 0.01"
                rate = float(rule[3:])
                w, b = w - rate * gw, b - rate * gb
            else:  # "unchanged"
                pass
        return w, b

    def outcomes(self) -> dict:
        """pattern -> [((w, b) final, what the model did, as text)]."""
        return {
            "correct": [(self.run("correct"), "")],
            "b_not_updated": [
                (self.run("b kept"), "b kept at its start value"),
                (self.run("b left out"), "b left out of the loss and kept at its start value"),
            ],
            "sequential_update": [
                (self.run("w first"), "w updated first, then b's gradient taken at the new w"),
                (self.run("b first"), "b updated first, then w's gradient taken at the new b"),
            ],
            "gradient_ascent": [(self.run("ascent"), "")],
            "tree_map_swapped": [(self.run("swapped"), "")],
            "mean_not_sum": [(self.run("mean"), f"B = {self.x.shape[1]}")],
            "missing_factor_two": [(self.run("half"), "")],
            "lr_twice": [(self.run("lr twice"), "")],
            "full_batch": [(self.run("full summed"), "summed"), (self.run("full averaged"), "averaged")],
            "stale_gradient": [(self.run("stale"), "")],
            "each_step_from_initial": [(self.run("from initial"), "")],
            "xy_swapped": [(self.run("x y swapped"), "")],
            "wrong_leaf_gradient": [
                (self.run("b with w's"), "b stepped with w's gradient"),
                (self.run("w with b's"), "w stepped with b's gradient"),
            ],
            "values_order": [(self.run("sorted values"), "")],
            "wrong_axis": [(self.run("transposed"), "")],
            "lr_ignored": [(self.run(f"lr {rate:g}"), f"{rate:g}") for rate in _HARD_CODED_LRS],
            "params_unchanged": [(self.run("unchanged"), "")],
            "keys_swapped": [(self.run("correct")[::-1], "")],
            "from_zeros": [(self._replace(w=0.0, b=0.0).run("correct"), "")],
        }


# A model equal to the right one on a case says nothing there: b left out of the loss is the
# right w on no case, but equals "b kept" where b starts at 0 (the worked example); the other
# cases start b elsewhere, and the test of the cases checks every pair is told apart somewhere.
PYTREE_CASES = (
    _Case("the worked example", 0.0, 0.0, 0.1, np.ones((2, 2)), np.ones((2, 2))),
    _Case(
        "three distinct batches",
        1.0,
        -0.5,
        0.0625,
        np.array([[0.5, 1.0, 2.0], [1.0, 1.5, 0.5], [2.0, 0.5, 1.0]]),
        np.array([[1.0, 2.5, 3.0], [2.0, 1.5, 1.0], [3.5, 1.0, 2.5]]),
    ),
    _Case("one batch", 0.5, 1.0, 0.125, np.array([[1.0, 2.0]]), np.array([[2.0, 1.0]])),
    _Case(
        "two batches of four",
        -1.0,
        0.5,
        0.03125,
        np.array([[1.0, 2.0, 3.0, 0.5], [2.0, 1.0, 0.5, 1.5]]),
        np.array([[1.0, 3.0, 4.0, 0.0], [2.5, 1.0, 0.0, 2.0]]),
    ),
)

_DISTINCT = 1  # the index of the three distinct batches


# Two numbers in the wrong container (read_params' kinds): the code, where the values were, and
# what was expected.
_CONTAINERS = {
    "tuple": (
        "returns_tuple",
        "in a tuple",
        "Expected the params dict, {right}, with the keys of the dict it was given.",
    ),
    "keys": (
        "keys_renamed",
        "under other keys",
        "Expected the params dict with the keys it was given, 'w' and 'b': {right}.",
    ),
}


def _shape_finding(exercise: Exercise, outputs: list, expected: list) -> Finding | None:
    """The finding for an output that is not the params dict, or None when every case gave one."""
    hints, distinct = exercise.hints, outputs[_DISTINCT]
    if distinct.kind in ("history", "pair"):
        case, right = exercise.cases[_DISTINCT], expected[_DISTINCT]
        what = (
            "the pair (final carry, per-step outputs) that lax.scan returns"
            if distinct.kind == "pair"
            else "the params of every step"
        )
        message = (
            f"For N = {case.n} batches ({case.description}) your function returns {distinct.shown}, "
            f"{what}, instead of the final params alone, {params_text(right)}."
        )
        if not close(distinct.final, right):
            message += f" Its final params, {params_text(distinct.final)}, are not right either."
        return Finding(
            "returns_history", False, message, hints["returns_history"], params_text(right), distinct.shown
        )
    order = [_DISTINCT] + [i for i in range(len(outputs)) if i != _DISTINCT]
    for kind, (code, where, wanted) in _CONTAINERS.items():
        for i in order:
            output, case, right = outputs[i], exercise.cases[i], expected[i]
            if output.kind != kind:
                continue
            if close(output.final, right):
                said = f"the right w and b, but {where}"
            elif close(output.final, right[::-1]):
                said = f"the right b and w, in that order, {where}"
            else:
                said = "and not the right values either"
            message = (
                f"On {case.description}, your function returns {output.shown}: {said}. "
                + wanted.format(right=params_text(right))
            )
            return Finding(code, False, message, hints[code], params_text(right), output.shown)
    for i in order:
        output, case, right = outputs[i], exercise.cases[i], expected[i]
        if output.kind == "other":
            message = (
                f"On {case.description}, your function returns {output.shown}; expected the params "
                f"dict {params_text(right)}."
            )
            return Finding(
                WRONG_RESULT, False, message, hints["returns_tuple"], params_text(right), output.shown
            )
    return None


def _check_numbers(exercise: Exercise, fn, state: dict) -> Finding:
    cases = exercise.cases
    outputs = [read_params(call(fn, f"on {case.description}", *case.inputs()), case.n) for case in cases]
    outcomes = [case.outcomes() for case in cases]
    expected = [found["correct"][0][0] for found in outcomes]
    state["values_right"] = False
    shape = _shape_finding(exercise, outputs, expected)
    if shape is not None:
        return shape
    values = [output.final for output in outputs]
    pattern, per_case = diagnose(outcomes, values, _PATTERNS)
    state["values_right"] = pattern is None
    if pattern is None:
        shown = "; ".join(f"{params_text(v)} on {case.label}" for case, v in zip(cases, values, strict=True))
        return Finding(
            "numbers",
            True,
            f"The final params are right: {shown}.",
            "",
            [params_text(v) for v in expected],
            [params_text(v) for v in values],
        )
    return pattern_finding(exercise, pattern, per_case, values, expected, params_text, params_text)


def _check_traced(exercise: Exercise, fn, state: dict) -> Finding:
    case = exercise.cases[_DISTINCT]
    right = case.outcomes()["correct"][0][0]
    doing = f"under jax.jit with params, lr and the batches traced, on {case.description}"
    out = read_params(jax.block_until_ready(call(jax.jit(fn), doing, *case.inputs(traced=True))), case.n)
    if not state.get("values_right"):
        return Finding(
            "traced",
            False,
            "Not judged until the final params are right; under jax.jit it runs.",
            exercise.hints[WRONG_RESULT],
        )
    if out.kind == "params" and close(out.final, right):
        return Finding(
            "traced",
            True,
            f"Runs under jax.jit with params, lr and the batches traced: {out.shown}.",
            "",
            params_text(right),
            out.shown,
        )
    return Finding(
        WRONG_RESULT,
        False,
        f"Under jax.jit with params, lr and the batches traced, on {case.description}, your function "
        f"returns {out.shown}; called directly it gives the right {params_text(right)}.",
        exercise.hints["host_sync"],
        params_text(right),
        out.shown,
    )


def _trace(fn, n, x, y):
    """The learner's jaxpr for (n, 3) batches x and y, lr fixed (see core.exercises.loop)."""
    params = {"w": jnp.float32(1.0), "b": jnp.float32(0.5)}
    return jax.make_jaxpr(lambda params, x, y: fn(params, 0.125, x, y))(params, x, y)


# The pytree exercise, a row of the checker's table.
PYTREE = Exercise(
    signature="(params, lr, x_batches, y_batches)",
    cases=PYTREE_CASES,
    mistakes=PYTREE_MISTAKES,
    explanations=PYTREE_EXPLANATIONS,
    hints=PYTREE_HINTS,
    trace=_trace,
    checks=(
        ("numbers", _check_numbers, "while computing the final params on the designed cases"),
        ("traced", _check_traced, "while running it under jax.jit with params, lr and the batches traced"),
        ("loop", check_loop, "while tracing it with jax.make_jaxpr"),
    ),
)
assert tuple(name for name, _, _ in PYTREE.checks) == PYTREE_CHECKS


def check_pytree_step(fn: Callable, *, timeout: float = DEFAULT_TIMEOUT) -> Report:
    """Check a learner's `pytree_training_step(params, lr, x_batches, y_batches)`: one plain
    gradient step per batch of sum((w*x + b - y)**2) on the params dict, carried by lax.scan.

    Args:
      fn: called with params {"w": w, "b": b} of float32 0-d jax arrays, lr a Python float (a
        float32 0-d array under jit), and float32 (N, B) jax arrays; expected to return the dict
        {"w": w_N, "b": b_N}.
      timeout: seconds each of the three checks may take, a positive number.

    Returns:
      A Report: passed, mistakes (codes from PYTREE_MISTAKES), findings (one per PYTREE_CHECKS).

    Raises:
      TypeError when fn is not callable; ValueError when timeout is not a finite positive number.
      Whatever fn raises or however long it runs is reported, never raised.
    """
    return run(PYTREE, fn, timeout)
