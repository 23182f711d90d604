"""The exercise's checker: run a learner's `scan_training_step` on diagnostic cases and name the mistake.

`check_training_step(fn)` calls `fn(w, lr, x_batches, y_batches)` on cases designed so that each
mistake the exercise warns about gives its own number, and returns a `Report`. A mistake is diagnosed
by evidence, never guessed: the learner's final weight is matched against float64 NumPy models of
the right update and of every mistake on the same case, the jaxpr is inspected for a loop, and
`jax.jit` is tried with `lr` traced and with `lr` fixed.

The four checks (`CHECKS`), in the order they run, each give one `Finding`:

- "numbers": five cases: the worked example (w = 0, lr = 0.1, x = y = ones((2, 2))), three distinct
  batches of three examples, one batch (N = 1), two batches of three (non-square, so that the
  batches scanned along the wrong axis take three steps), and one batch of large values (a weight
  moved by lr = 0.001 is told from one not moved). On each, the final weight is compared
  with the model of the right update and of each mistake: gradients summed at the initial weight,
  the first row at every step, every other order of the rows, one row skipped or repeated, the
  gradient divided by B, without its factor 2, or added (c in 1 - c*lr*S: 2 right, 2/B, 1, -2), lr
  applied twice, x_batches transposed (or column i at step i), every batch's gradient at every
  step (summed or averaged), the previous step's gradient applied (0 at the first), the carry
  started from a constant instead of w (0, 1, 0.5, -1 or 2), and lr hard-coded (0.1, 0.125, 0.01,
  0.05 or 0.001). A constant equal to a case's w, or a rate equal to its lr, is right on that case
  and told on the others: the cases' ws (0, 1, 0.5, 2, 1.5) and lrs (0.1, 0.125, 0.25, 0.015625)
  differ. The match tolerance is 1e-4 (relative, for float32); every pair of patterns is 4 % apart
  or more on the distinct batches, on the two batches of three or on the large values. A code is
  diagnosed when on every case the result matches either the right value or that code's model,
  and on at least one case only that code's model. An output whose length follows N (N or N+1
  entries), or the (carry, outputs) pair of `lax.scan`, is `returns_history`, diagnosed on the
  N = 3 case; its last entry is then the final weight.
- "dtype": w as a float32 array and float32 batches in, the final weight must come out float32: a
  Python float is a change, and so is float64 when the same call runs under `jax_enable_x64`.
- "traced_lr": `jax.jit` of the function with every argument traced, for three values of lr. If it
  raises, the same function is jitted again with lr a fixed Python number (closed over) and the
  rest traced: if that runs, the failure came from lr (`static_lr`); if that too raises a
  tracer-conversion error (`ConcretizationTypeError` and its kin), a traced weight or batch was
  converted to a Python or NumPy value (`host_sync`): a learner who does both gets `host_sync`
  only. If the traced jit runs, the learner's own jit is probed: three calls with lr = a, a again,
  then b (two random values, so that no cache of the learner's holds them already); no trace or
  compile on the repeated value but one on the new value means lr is a static argument
  (`static_lr`). Traces and compiles are counted with `jax.monitoring`, in the check's thread only.
- "loop": core.exercises.loop's check, at N = 2 and N = 6 with lr fixed.

A finding whose check found a mistake carries that mistake's code. A finding that passed carries
the check's name, and so does one that could not be judged (the loop check while the numbers are
wrong, or when the function cannot be traced); those have `passed` False. Numbers wrong in a way
no code explains give the code "wrong_result" (`WRONG_RESULT`), which is not a public mistake:
`Report.mistakes` holds only codes from `MISTAKES`, and `Report.passed` is False whenever any
finding failed, so a wrong result with no known cause still fails.

How a check runs, and how the learner's exceptions are told, is core.exercises.sandbox's; the
hints and explanations are in core.exercises.hints.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import monitoring

from core.exercises.hints import SCAN_STEP_EXPLANATIONS, SCAN_STEP_HINTS
from core.exercises.loop import check_loop
from core.exercises.reading import Output, diagnose, read
from core.exercises.report import (
    DEFAULT_TIMEOUT,
    WRONG_RESULT,
    Exercise,
    Finding,
    Report,
    num,
    rows_text,
)
from core.exercises.sandbox import call, describe_error, run, summary

# The numeric mistakes a later issue named, each with a float64 model in `_outcomes`.
_LATER_NUMERIC = (
    "lr_twice",
    "wrong_axis",
    "full_batch",
    "stale_gradient",
    "carry_from_constant",
    "lr_ignored",
)

MISTAKES = (
    "accumulated_gradients",
    "reused_first_row",
    "wrong_order",
    "off_by_one",
    "returns_history",
    "mean_not_sum",
    "missing_factor_two",
    "wrong_sign",
    "dtype_changed",
    "static_lr",
    "not_scan",
    "host_sync",
    "error",
    *_LATER_NUMERIC,
)
"""The public, stable mistake codes, in the order the issues list them (new ones appended)."""

CHECKS = ("numbers", "dtype", "traced_lr", "loop")
"""The checks, in the order they run; a passing finding carries its check's name as its code."""


class _Case(NamedTuple):
    label: str
    w: float
    lr: float
    x: np.ndarray  # float64, every value exact in float32
    y: np.ndarray

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def description(self) -> str:
        return (
            f"{self.label} (w = {self.w:g}, lr = {self.lr:g}, x_batches = {rows_text(self.x)}, "
            f"y_batches = {rows_text(self.y)})"
        )


_SEED = _Case("the worked example", 0.0, 0.1, np.ones((2, 2)), np.ones((2, 2)))
_ROWS = _Case(
    "three distinct batches",
    1.0,
    0.125,
    np.array([[-1.0, 0.5, 1.0], [0.5, 1.0, -1.0], [1.0, 1.0, -0.5]]),
    np.array([[1.0, -2.0, -2.0], [-0.5, 2.0, 2.0], [-0.5, -1.0, 1.0]]),
)
_SINGLE = _Case("one batch", 0.5, 0.125, np.array([[1.0, -0.5, 0.5]]), np.array([[2.0, 1.0, -1.0]]))
# Non-square, so that batches scanned along the wrong axis take another number of steps; it tells
# apart the mistakes whose models come close on the other cases (the full-batch gradient and a
# repeated row, a hard-coded lr and another order, ...).
_WIDE = _Case(
    "two batches of three",
    2.0,
    0.25,
    np.array([[1.0, 0.5, -2.0], [1.0, 0.5, 0.25]]),
    np.array([[-2.0, -1.0, 1.0], [1.0, -0.5, 0.25]]),
)
# Large inputs, so that a weight that barely moved (lr hard-coded to 0.001) is told apart from one
# that did not move at all: its gradient, 2 * sum((w*x - y) * x) = 71, moves it by 0.071 (4.7 %).
_LARGE = _Case("one batch of large values", 1.5, 0.015625, np.array([[-1.0, 4.0]]), np.array([[2.0, -2.0]]))
_CASES = (_SEED, _ROWS, _SINGLE, _WIDE, _LARGE)


# The patterns a result is matched against: the right update, the numeric mistakes, and two slips
# with no public code whose message can still say what happened.
_NUMERIC_CODES = (
    "accumulated_gradients",
    "reused_first_row",
    "wrong_order",
    "off_by_one",
    "mean_not_sum",
    "missing_factor_two",
    "wrong_sign",
    *_LATER_NUMERIC,
)
_SLIPS = ("unchanged", "each_step_from_initial_w")
_PATTERNS = ("correct",) + _NUMERIC_CODES + _SLIPS


def _descend(case: _Case, order, c: float = 2.0) -> float:
    """Sequential steps over the rows in `order`, gradient c * sum((w*x - y) * x), in float64.

    Written here on purpose, not taken from `core.training`: the checker's models of the right
    update and of each mistake must not share the code whose mistakes they diagnose."""
    w = case.w
    for i in order:
        w = w - case.lr * c * float(np.sum((w * case.x[i] - case.y[i]) * case.x[i]))
    return w


def _gradient(case: _Case, w: float, i: int) -> float:
    return 2.0 * float(np.sum((w * case.x[i] - case.y[i]) * case.x[i]))


# The rates a learner may write in place of lr: the worked example's (0.1), the other cases' (0.125:
# a learner who copies it is right on those cases, so it is told on the worked example and the two
# batches of three, whose lrs differ) and the usual round ones.
_HARD_CODED_LRS = (0.1, 0.125, 0.01, 0.05, 0.001)
# The constants a learner may start the scan's carry from in place of w: 0 (jnp.zeros, 0.0), 1
# (jnp.ones) and a few other round ones. Each is right on a case whose w it equals, so the cases'
# ws (0, 1, 0.5, 2) differ: every constant is told on the others.
_CONSTANT_CARRIES = (0.0, 1.0, 0.5, -1.0, 2.0)


def _full_batch(case: _Case, scale: float) -> float:
    """N steps, each with the gradient of every batch at the current weight, times `scale`."""
    w = case.w
    for _ in range(case.n):
        w = w - case.lr * scale * sum(_gradient(case, w, i) for i in range(case.n))
    return w


def _stale(case: _Case) -> float:
    """Each step applies the gradient the previous step took (0 at the first), in a carry (w, g)."""
    w, previous = case.w, 0.0
    for i in range(case.n):
        w, previous = w - case.lr * previous, _gradient(case, w, i)
    return w


def _outcomes(case: _Case) -> dict:
    """pattern -> [(final weight, the rows it used as text, or "")] on `case`."""
    n, rows = case.n, list(range(case.n))
    permutations = [p for p in itertools.permutations(rows) if list(p) != rows]
    skipped = [rows[:k] + rows[k + 1 :] for k in range(n)]
    repeated = [rows[: k + 1] + [k] + rows[k + 1 :] for k in range(n)]
    return {
        "correct": [(_descend(case, rows), "")],
        "accumulated_gradients": [(case.w - case.lr * sum(_gradient(case, case.w, i) for i in rows), "")],
        "reused_first_row": [(_descend(case, [0] * n), "")] if n > 1 else [],
        "wrong_order": [(_descend(case, p), _order(p)) for p in permutations],
        "off_by_one": [(_descend(case, s), _order(s)) for s in skipped + repeated],
        "mean_not_sum": [(_descend(case, rows, 2.0 / case.x.shape[1]), "")],
        "missing_factor_two": [(_descend(case, rows, 1.0), "")],
        "wrong_sign": [(_descend(case, rows, -2.0), "")],
        "lr_twice": [(_descend(case, rows, 2.0 * case.lr), "")],
        # Scanning x_batches.T (B steps over columns), or column i at step i: the loss summed
        # over the batches' axis instead of the examples'.
        "wrong_axis": [
            (_descend(case._replace(x=case.x.T, y=case.y.T), range(case.x.shape[1])), "x_batches.T"),
            (
                _descend(case._replace(x=case.x.T, y=case.y.T), range(min(case.x.shape))),
                "x_batches[:, i] at step i",
            ),
        ],
        "full_batch": [(_full_batch(case, 1.0), "summed"), (_full_batch(case, 1.0 / n), "averaged")],
        "stale_gradient": [(_stale(case), "")],
        # A model equal to the right update on this case (the constant is this case's w, the rate
        # its lr) is left out: there the learner's result is right, and says nothing.
        "carry_from_constant": [
            (_descend(case._replace(w=w0), rows), f"{w0:g}") for w0 in _CONSTANT_CARRIES if w0 != case.w
        ],
        "lr_ignored": [
            (_descend(case._replace(lr=lr), rows), f"{lr:g}") for lr in _HARD_CODED_LRS if lr != case.lr
        ],
        "unchanged": [(case.w, "")],
        "each_step_from_initial_w": [(case.w - case.lr * _gradient(case, case.w, n - 1), "")],
    }


def _order(rows) -> str:
    return ", ".join(str(i) for i in rows) if len(rows) else "none"


def _inputs(case: _Case):
    """The learner's arguments: w a float32 0-d array, lr a Python float, float32 batches."""
    return (
        jnp.asarray(np.float32(case.w)),
        float(case.lr),
        jnp.asarray(case.x.astype(np.float32)),
        jnp.asarray(case.y.astype(np.float32)),
    )


# --- the checks ------------------------------------------------------------------------------------


def _check_numbers(exercise: Exercise, fn, state: dict) -> Finding:
    outputs = [read(call(fn, f"on {case.description}", *_inputs(case)), case.n) for case in _CASES]
    expected = [_descend(case, range(case.n)) for case in _CASES]
    rows = _CASES.index(_ROWS)
    for case, output, right in zip(_CASES, outputs, expected, strict=True):
        if output.kind == "other" and outputs[rows].kind not in ("history", "pair"):
            return Finding(
                WRONG_RESULT,
                False,
                f"On {case.description}, your function returns {output.shown}; expected the final "
                f"weight alone, a scalar: {num(right)}.",
                exercise.hints["returns_history"],
                right,
                output.shown,
            )
    values = [math.nan if output.final is None else output.final for output in outputs]
    pattern, per_case = diagnose([_outcomes(case) for case in _CASES], values, _PATTERNS)
    state["values_right"] = pattern is None
    if outputs[rows].kind in ("history", "pair"):
        return _history_finding(exercise, outputs[rows], expected[rows], pattern is None)
    if pattern is None:
        shown = ", ".join(f"{num(v)} on {case.label}" for case, v in zip(_CASES, values, strict=True))
        return Finding("numbers", True, f"The final weights are right: {shown}.", "", expected, values)
    return _numbers_finding(exercise, pattern, per_case, values, expected)


def _history_finding(exercise: Exercise, output: Output, right: float, values_right: bool) -> Finding:
    n = _ROWS.n
    if output.kind == "pair":
        what = "the pair (final carry, per-step outputs) that lax.scan returns"
    elif len(output.values) == n + 1:
        what = "the initial weight and the weight after every step"
    else:
        what = "the weight after every step"
    message = (
        f"For N = {n} batches ({_ROWS.description}) your function returns {output.shown}, {what}, "
        f"instead of the final weight alone, {num(right)}."
    )
    if not values_right:
        message += f" Its final weight, {num(output.final)}, is not {num(right)} either."
    actual = output.values if output.values is not None else output.shown
    return Finding("returns_history", False, message, exercise.hints["returns_history"], right, actual)


def _numbers_finding(
    exercise: Exercise, pattern: str, per_case: list, values: list, expected: list
) -> Finding:
    wrong = [i for i, found in enumerate(per_case) if "correct" not in found]
    # Say it on the case that shows it best: the worked example's own 0.8 for accumulated gradients and for
    # slips, otherwise the distinct batches (where every model differs), else the first wrong case.
    preferred = (
        (0, 1, 2, 3, 4) if pattern in ("accumulated_gradients", WRONG_RESULT, *_SLIPS) else (1, 0, 2, 3, 4)
    )
    index = next(i for i in preferred if i in wrong and (pattern == WRONG_RESULT or pattern in per_case[i]))
    case, actual, right = _CASES[index], values[index], expected[index]
    message = (
        f"On {case.description}, your function returns {num(actual)}; the sequential updates give "
        f"{num(right)}."
    )
    if pattern == WRONG_RESULT:
        message += " No single known mistake gives this (perhaps several at once)."
        code, hint = WRONG_RESULT, exercise.hints[WRONG_RESULT]
    else:
        rows = per_case[index][pattern]
        explanation = exercise.explanations[pattern].format(
            w=num(case.w),
            rows=rows,
            k=len(rows.split(", ")) if rows != "none" else 0,
            n=case.n,
            last=case.n - 1,
            b=case.x.shape[1],
            lr=num(case.lr),
        )
        message += f" {num(actual)} is {explanation}."
        code = pattern if pattern in MISTAKES else WRONG_RESULT
        hint = exercise.hints[code]
    return Finding(code, False, message, hint, right, actual)


def _check_dtype(exercise: Exercise, fn, state: dict) -> Finding:
    case = _ROWS
    doing = "given w as a float32 array and float32 batches"
    dtypes = [read(call(fn, doing, *_inputs(case)), case.n).dtype]
    modes = ["by default"]
    if not jax.config.jax_enable_x64:
        with jax.enable_x64(True):
            dtypes.append(read(call(fn, doing + " under jax_enable_x64", *_inputs(case)), case.n).dtype)
        modes.append("under jax_enable_x64")
    if any(dtype is None for dtype in dtypes):
        return Finding(
            "dtype",
            False,
            "Not judged: the function returns no number to read a dtype from (see the numbers check).",
            exercise.hints[WRONG_RESULT],
        )
    wrong = [(mode, dtype) for mode, dtype in zip(modes, dtypes, strict=True) if dtype != "float32"]
    if not wrong:
        return Finding(
            "dtype", True, "float32 in, float32 out (" + " and ".join(modes) + ").", "", "float32", "float32"
        )
    if len({dtype for _, dtype in wrong}) == 1:
        shown = f"{wrong[0][1]} (" + " and ".join(mode for mode, _ in wrong) + ")"
    else:
        shown = " and ".join(f"{dtype} {mode}" for mode, dtype in wrong)
    return Finding(
        "dtype_changed",
        False,
        f"Given w as a float32 array and float32 batches, your function returns {shown}; the carry "
        "must stay float32.",
        exercise.hints["dtype_changed"],
        "float32",
        wrong[0][1],
    )


_TRACE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/backend_compile_duration")


def _check_traced_lr(exercise: Exercise, fn, state: dict) -> Finding:
    case = _ROWS
    w, fixed_lr, x, y = _inputs(case)
    traces = []

    def traced(w, lr, x, y):
        traces.append(1)
        return fn(w, lr, x, y)

    lrs = (0.125, 0.0625, 0.03125)
    jitted = jax.jit(traced)
    try:
        for lr in lrs:
            jax.block_until_ready(jitted(w, jnp.float32(lr), x, y))
    except Exception as traced_error:
        doing = f"under jax.jit with lr fixed at {fixed_lr:g} and the weight and batches traced"
        jax.block_until_ready(call(jax.jit(lambda w, x, y: fn(w, fixed_lr, x, y)), doing, w, x, y))
        return Finding(
            "static_lr",
            False,
            f"Under jax.jit with lr traced, your function raised {describe_error(traced_error)}. With "
            f"lr a fixed number (lr = {fixed_lr:g}) it runs: lr is used as a static or concrete value.",
            exercise.hints["static_lr"],
            None,
            summary(traced_error),
        )
    # Traced, it runs. Does the learner's own jit retrace for each new lr? Count traces and
    # compiles in this thread for lr = a, a again, then b: two values no earlier call has used, so
    # that no cache of the learner's already holds them.
    a, b = (float(v) for v in np.random.default_rng().uniform(0.0625, 0.125, 2))
    me, events = threading.get_ident(), []

    def listen(event, duration, **kwargs):
        if event in _TRACE_EVENTS and threading.get_ident() == me:
            events.append(event)

    counts = []
    monitoring.register_event_duration_secs_listener(listen)
    try:
        for lr in (a, a, b):
            before = len(events)
            jax.block_until_ready(call(fn, f"with lr = {lr:g}", w, lr, x, y))
            counts.append(len(events) - before)
    finally:
        monitoring.unregister_event_duration_listener(listen)
    if counts[1] == 0 and counts[2] > 0:
        return Finding(
            "static_lr",
            False,
            f"Your function traces or compiles again for every new lr value: called again with lr = "
            f"{a:g} it did {counts[1]} new traces or compiles, with lr = {b:g} it did {counts[2]}; "
            "expected 0 for a new value too.",
            exercise.hints["static_lr"],
            0,
            counts[2],
        )
    return Finding(
        "traced_lr",
        True,
        f"Runs under jax.jit with lr traced: {len(traces)} trace served lr = "
        + ", ".join(f"{lr:g}" for lr in lrs)
        + ".",
        "",
        1,
        len(traces),
    )


# The first exercise, a row of the checker's table.
SCAN_STEP = Exercise(
    signature="(w, lr, x_batches, y_batches)",
    cases=_CASES,
    mistakes=MISTAKES,
    explanations=SCAN_STEP_EXPLANATIONS,
    hints=SCAN_STEP_HINTS,
    trace=lambda fn, n, x, y: jax.make_jaxpr(lambda w, x, y: fn(w, 0.125, x, y))(jnp.float32(1.0), x, y),
    checks=(
        ("numbers", _check_numbers, "while computing the final weight on the designed cases"),
        ("dtype", _check_dtype, "while checking the output's dtype"),
        ("traced_lr", _check_traced_lr, "while running it under jax.jit with lr traced"),
        ("loop", check_loop, "while tracing it with jax.make_jaxpr"),
    ),
)
assert tuple(name for name, _, _ in SCAN_STEP.checks) == CHECKS


def check_training_step(fn: Callable, *, timeout: float = DEFAULT_TIMEOUT) -> Report:
    """Check a learner's `scan_training_step` (the exercise) and name its mistakes by evidence.

    Args:
      fn: the learner's function, called as fn(w, lr, x_batches, y_batches) with w a float32 0-d
        jax array, lr a Python float (or a traced float32 under jit), and float32 (N, B) jax
        arrays. It may return a jax or NumPy array, a Python number, or a list or tuple.
      timeout: seconds each of the four checks may take, a positive number (default 10).

    Returns:
      A Report: passed (every check passed), mistakes (a frozenset of codes from MISTAKES) and
      findings (one Finding per check, in the order of CHECKS). See the module docstring for what
      each check runs and how each code is told apart from the others.

    Raises:
      TypeError when fn is not callable; ValueError when timeout is not a finite positive number.
      Whatever fn raises or however long it runs is reported, never raised.
    """
    return run(SCAN_STEP, fn, timeout)
