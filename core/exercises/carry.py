"""The checkers of the two exercises on the carry: a momentum step whose optimizer state rides in the
carry, and a learning-rate schedule scanned with the batches.

`check_momentum_step(fn)` calls `fn(w, lr, momentum, x_batches, y_batches)`, and
`check_scheduled_step(fn)` calls `fn(w, lr_schedule, x_batches, y_batches)`, each on designed cases,
and returns a `Report` as `check_training_step` does, with the same machinery: each check in its
own thread under a time limit, the learner's exceptions described by the line of their own code, a
mistake diagnosed only when, on every case, the final weight matches either the right value or
that mistake's float64 model, and on at least one case only that mistake's.

The checks (`CARRY_CHECKS`), in order:

- "numbers": three cases each (the worked example, three distinct batches, one batch; the schedule's
  second case rises, a warm-up, where the first decays). The momentum models: the right heavy-ball
  step as Optax defines it (trace = g + momentum * trace, then w - lr * trace, the trace starting at
  0), the trace not carried (plain gradient descent), momentum applied to the weight (trace = g +
  momentum * w, or w = momentum * w - lr * g), the trace updated after it is used (w - lr * old
  trace), the trace as an average (momentum * trace + (1 - momentum) * g), and Nesterov's momentum
  (Optax's nesterov=True, or the gradient at the look-ahead weight). The schedule models:
  lr_schedule[i] at step i, one entry at every step (a Python counter in the body, read once when
  the scan traces it: lr_schedule[0] or lr_schedule[1]), the schedule shifted by one (forward with
  the last entry repeated, or back, clamped or wrapped around), the schedule and the batches paired
  in another order (the schedule reversed, the batches reversed, or the whole scan run backwards),
  and one rate that is no counter's at every step (the schedule's mean or its last entry). On the
  distinct batches, an output of N or N+1 numbers is `returns_history` and a pair is
  `returns_carry`.
- "traced": `jax.jit` of the function with every argument traced must run and give the right final
  weight on the distinct batches (judged once the numbers are right).
- "loop": core.exercises.loop's check: a `scan` in the jaxpr, the step's operations not repeating
  with N.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from core.exercises.hints import MOMENTUM_EXPLANATIONS, MOMENTUM_HINTS, SCHEDULE_EXPLANATIONS, SCHEDULE_HINTS
from core.exercises.loop import check_loop
from core.exercises.reading import close, diagnose, numeric, pattern_finding, read
from core.exercises.report import DEFAULT_TIMEOUT, WRONG_RESULT, Exercise, Finding, Report, num, rows_text
from core.exercises.sandbox import call, run

_COMMON = ("returns_history", "returns_carry", "not_scan", "host_sync", "error")
MOMENTUM_MISTAKES = (
    ("state_not_carried", "momentum_on_weight", "trace_after_use")
    + _COMMON
    + ("trace_as_average", "nesterov")
)
"""The momentum exercise's public mistake codes (new ones appended)."""
SCHEDULE_MISTAKES = (
    ("schedule_closed_over", "schedule_off_by_one", "schedule_wrong_order") + _COMMON + ("schedule_one_rate",)
)
"""The schedule exercise's public mistake codes (new ones appended)."""
CARRY_CHECKS = ("numbers", "traced", "loop")
"""The checks of both exercises, in the order they run."""


def _gradient(w: float, x: np.ndarray, y: np.ndarray) -> float:
    return 2.0 * float(np.sum((w * x - y) * x))


# --- the momentum exercise -----------------------------------------------------------------------


class _MomentumCase(NamedTuple):
    label: str
    w: float
    lr: float
    momentum: float
    x: np.ndarray  # float64, every value exact in float32
    y: np.ndarray

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def description(self) -> str:
        return (
            f"{self.label} (w = {self.w:g}, lr = {self.lr:g}, momentum = {self.momentum:g}, "
            f"x_batches = {rows_text(self.x)}, y_batches = {rows_text(self.y)})"
        )

    def inputs(self, traced: bool = False) -> tuple:
        """The learner's arguments: w a float32 0-d array, lr and momentum Python floats (float32
        arrays when `traced`), float32 batches."""
        scalars = (np.float32(self.lr), np.float32(self.momentum)) if traced else (self.lr, self.momentum)
        x, y = (jnp.asarray(a.astype(np.float32)) for a in (self.x, self.y))
        return (jnp.asarray(np.float32(self.w)), *(jnp.asarray(s) if traced else s for s in scalars), x, y)

    def run(self, rule: str) -> float:
        """The final weight under `rule`, in float64: written here, not taken from core.optimizers,
        so that the models do not share the code they check."""
        w, trace, m = self.w, 0.0, self.momentum
        for x, y in zip(self.x, self.y, strict=True):
            g = _gradient(w, x, y)
            if rule == "correct":
                trace = g + m * trace
                w = w - self.lr * trace
            elif rule == "sgd":
                w = w - self.lr * g
            elif rule == "trace of the weight":
                w = w - self.lr * (g + m * w)
            elif rule == "weight decayed":
                w = m * w - self.lr * g
            elif rule == "average":
                trace = m * trace + (1.0 - m) * g
                w = w - self.lr * trace
            elif rule == "nesterov":  # Optax's nesterov=True
                trace = g + m * trace
                w = w - self.lr * (g + m * trace)
            elif rule == "look-ahead":  # the gradient at the weight the trace is about to reach
                trace = _gradient(w - self.lr * m * trace, x, y) + m * trace
                w = w - self.lr * trace
            else:  # "after use"
                w, trace = w - self.lr * trace, g + m * trace
        return w

    def outcomes(self) -> dict:
        """pattern -> [(final weight, what the model did, as text)]."""
        return {
            "correct": [(self.run("correct"), "")],
            "state_not_carried": [(self.run("sgd"), "")],
            "momentum_on_weight": [
                (self.run("trace of the weight"), "trace = gradient + momentum * w"),
                (self.run("weight decayed"), "new_w = momentum * w - lr * gradient"),
            ],
            "trace_after_use": [(self.run("after use"), "")],
            "trace_as_average": [(self.run("average"), "")],
            "nesterov": [
                (
                    self.run("nesterov"),
                    "new_w = w - lr * (gradient + momentum * trace), Optax's nesterov=True",
                ),
                (
                    self.run("look-ahead"),
                    "the gradient taken at the look-ahead weight w - lr * momentum * trace",
                ),
            ],
        }


_ONES = np.ones((3, 2))
_DISTINCT_X = np.array([[-1.0, 0.5, 1.0], [0.5, 1.0, -1.0], [1.0, 1.0, -0.5]])
_DISTINCT_Y = np.array([[1.0, -2.0, -2.0], [-0.5, 2.0, 2.0], [-0.5, -1.0, 1.0]])
MOMENTUM_CASES = (
    _MomentumCase("the worked example", 0.0, 0.1, 0.9, _ONES, _ONES),
    _MomentumCase("three distinct batches", 1.0, 0.125, 0.5, _DISTINCT_X, _DISTINCT_Y),
    _MomentumCase("one batch", 0.5, 0.125, 0.5, np.array([[1.0, -0.5, 0.5]]), np.array([[2.0, 1.0, -1.0]])),
)


# --- the schedule exercise -----------------------------------------------------------------------


class _ScheduleCase(NamedTuple):
    label: str
    w: float
    schedule: tuple  # N learning rates
    x: np.ndarray
    y: np.ndarray

    @property
    def n(self) -> int:
        return self.x.shape[0]

    @property
    def description(self) -> str:
        shown = "[" + ", ".join(f"{lr:g}" for lr in self.schedule) + "]"
        return (
            f"{self.label} (w = {self.w:g}, lr_schedule = {shown}, x_batches = {rows_text(self.x)}, "
            f"y_batches = {rows_text(self.y)})"
        )

    def inputs(self, traced: bool = False) -> tuple:
        """The learner's arguments: w a float32 0-d array and float32 (N,) and (N, B) arrays."""
        arrays = (np.float32(self.w), np.array(self.schedule, np.float32), self.x, self.y)
        return tuple(jnp.asarray(np.asarray(a, np.float32)) for a in arrays)

    def run(self, steps) -> float:
        """The final weight after steps [(lr index, batch index)], in float64."""
        w = self.w
        for k, i in steps:
            w = w - self.schedule[k] * _gradient(w, self.x[i], self.y[i])
        return w

    def outcomes(self) -> dict:
        """pattern -> [(final weight, the steps as text)]."""
        n = self.n
        rows = list(range(n))
        models = {
            "correct": [[(k, k) for k in rows]],
            "schedule_closed_over": [[(0, k) for k in rows], [(min(1, n - 1), k) for k in rows]],
            "schedule_off_by_one": [
                [(min(k + 1, n - 1), k) for k in rows],
                [((k - 1) % n, k) for k in rows],
                [(max(k - 1, 0), k) for k in rows],
            ],
            "schedule_wrong_order": [
                [(n - 1 - k, k) for k in rows],
                [(k, n - 1 - k) for k in rows],
                [(i, i) for i in reversed(rows)],
            ],
        }
        right = models["correct"][0]
        found = {"correct": [(self.run(right), "")]}
        for pattern, options in list(models.items())[1:]:
            found[pattern] = [
                (self.run(steps), self.steps_text(steps)) for steps in options if steps != right
            ]
        # One rate that is no single entry at step 0 or 1 (a counter's): the mean, or the last.
        mean, last = float(np.mean(self.schedule)), self.schedule[-1]
        found["schedule_one_rate"] = [
            (self.constant(mean), f"lr {mean:g}, the schedule's mean, at every step"),
            (self.constant(last), f"lr {last:g}, the schedule's last entry, at every step"),
        ]
        return found

    def constant(self, lr: float) -> float:
        """The final weight with the rate `lr` at every step, in float64."""
        w = self.w
        for x, y in zip(self.x, self.y, strict=True):
            w = w - lr * _gradient(w, x, y)
        return w

    def steps_text(self, steps) -> str:
        return ", ".join(f"lr {self.schedule[k]:g} with batch {i}" for k, i in steps)


SCHEDULE_CASES = (
    _ScheduleCase("the worked example", 0.0, (0.1, 0.05), np.ones((2, 2)), np.ones((2, 2))),
    _ScheduleCase("three distinct batches", 1.0, (0.25, 0.125, 0.0625), _DISTINCT_X, _DISTINCT_Y),
    _ScheduleCase(
        "a warm-up over four batches",
        0.0,
        (0.03125, 0.0625, 0.125, 0.25),
        np.array([[1.0, 0.5], [0.5, 1.0], [1.0, -0.5], [0.5, 0.5]]),
        np.array([[2.0, 1.0], [0.5, 1.5], [1.0, -1.0], [1.0, 0.0]]),
    ),
)


# --- the checks, shared by both exercises ---------------------------------------------------------


_DISTINCT = 1  # the index of the three distinct batches in each exercise's cases


def _check_numbers(exercise: Exercise, fn, state: dict) -> Finding:
    cases, hints = exercise.cases, exercise.hints
    raw = [call(fn, f"on {case.description}", *case.inputs()) for case in cases]
    outputs = [read(out, case.n) for out, case in zip(raw, cases, strict=True)]
    expected = [case.outcomes()["correct"][0][0] for case in cases]
    case, out, right = cases[_DISTINCT], raw[_DISTINCT], expected[_DISTINCT]
    state["values_right"] = False
    output = outputs[_DISTINCT]
    if output.kind in ("history", "pair"):
        what = (
            "the pair (final carry, per-step outputs) that lax.scan returns"
            if output.kind == "pair"
            else "one entry per step"
        )
        message = (
            f"For N = {case.n} batches ({case.description}) your function returns {output.shown}, "
            f"{what}, instead of the final weight alone, {num(right)}."
        )
        return Finding(
            "returns_history", False, message, hints["returns_history"], right, output.values or output.shown
        )
    if isinstance(out, (tuple, list)) and len(out) == 2:
        first = numeric(out[0])
        said = (
            f"a pair whose first entry is {num(first)}" if first is not None and first.ndim == 0 else "a pair"
        )
        message = (
            f"On {case.description}, your function returns {said}: the final carry, not the final "
            f"weight alone, {num(right)}."
        )
        return Finding("returns_carry", False, message, hints["returns_carry"], right, output.shown)
    for case, output, right_value in zip(cases, outputs, expected, strict=True):
        if output.kind == "other":
            return Finding(
                WRONG_RESULT,
                False,
                f"On {case.description}, your function returns {output.shown}; expected the final "
                f"weight alone, a scalar: {num(right_value)}.",
                hints["returns_carry"],
                right_value,
                output.shown,
            )
    values = [output.final for output in outputs]
    outcomes = [case.outcomes() for case in cases]
    pattern, per_case = diagnose(outcomes, values, ("correct",) + tuple(exercise.explanations))
    state["values_right"] = pattern is None
    if pattern is None:
        shown = ", ".join(f"{num(v)} on {case.label}" for case, v in zip(cases, values, strict=True))
        return Finding("numbers", True, f"The final weights are right: {shown}.", "", expected, values)
    return pattern_finding(exercise, pattern, per_case, values, expected)


def _check_traced(exercise: Exercise, fn, state: dict) -> Finding:
    case = exercise.cases[_DISTINCT]
    right = case.outcomes()["correct"][0][0]
    doing = f"under jax.jit with every argument traced, on {case.description}"
    out = read(jax.block_until_ready(call(jax.jit(fn), doing, *case.inputs(traced=True))), case.n)
    if not state.get("values_right"):
        return Finding(
            "traced",
            False,
            "Not judged until the final weights are right; under jax.jit it runs.",
            exercise.hints[WRONG_RESULT],
        )
    if out.final is not None and close(out.final, right):
        return Finding(
            "traced",
            True,
            f"Runs under jax.jit with every argument traced: {num(out.final)}.",
            "",
            right,
            out.final,
        )
    return Finding(
        WRONG_RESULT,
        False,
        f"Under jax.jit with every argument traced, on {case.description}, your function returns "
        f"{out.shown}; called directly it gives the right {num(right)}.",
        exercise.hints["host_sync"],
        right,
        out.shown,
    )


_CHECKS = (
    ("numbers", _check_numbers, "while computing the final weight on the designed cases"),
    ("traced", _check_traced, "while running it under jax.jit with every argument traced"),
    ("loop", check_loop, "while tracing it with jax.make_jaxpr"),
)
assert tuple(name for name, _, _ in _CHECKS) == CARRY_CHECKS

# The two exercises on the carry, rows of the checker's table.
MOMENTUM = Exercise(
    signature="(w, lr, momentum, x_batches, y_batches)",
    cases=MOMENTUM_CASES,
    mistakes=MOMENTUM_MISTAKES,
    explanations=MOMENTUM_EXPLANATIONS,
    hints=MOMENTUM_HINTS,
    trace=lambda fn, n, x, y: jax.make_jaxpr(lambda w, x, y: fn(w, 0.125, 0.5, x, y))(jnp.float32(1.0), x, y),
    checks=_CHECKS,
)
SCHEDULE = Exercise(
    signature="(w, lr_schedule, x_batches, y_batches)",
    cases=SCHEDULE_CASES,
    mistakes=SCHEDULE_MISTAKES,
    explanations=SCHEDULE_EXPLANATIONS,
    hints=SCHEDULE_HINTS,
    trace=lambda fn, n, x, y: jax.make_jaxpr(fn)(jnp.float32(1.0), jnp.full((n,), 0.125, jnp.float32), x, y),
    checks=_CHECKS,
)


def check_momentum_step(fn: Callable, *, timeout: float = DEFAULT_TIMEOUT) -> Report:
    """Check a learner's `momentum_training_step(w, lr, momentum, x_batches, y_batches)`: heavy-ball
    momentum with the trace in the scan's carry, returning the final weight.

    Args:
      fn: called with w a float32 0-d jax array, lr and momentum Python floats (float32 arrays
        under jit), and float32 (N, B) jax arrays.
      timeout: seconds each of the three checks may take, a positive number.

    Returns:
      A Report: passed, mistakes (codes from MOMENTUM_MISTAKES), findings (one per CARRY_CHECKS).

    Raises:
      TypeError when fn is not callable; ValueError when timeout is not a finite positive number.
    """
    return run(MOMENTUM, fn, timeout)


def check_scheduled_step(fn: Callable, *, timeout: float = DEFAULT_TIMEOUT) -> Report:
    """Check a learner's `scheduled_training_step(w, lr_schedule, x_batches, y_batches)`: step i
    uses lr_schedule[i] with batch i, the schedule scanned with the batches.

    Args:
      fn: called with w a float32 0-d jax array, lr_schedule a float32 (N,) jax array and float32
        (N, B) jax arrays.
      timeout: seconds each of the three checks may take, a positive number.

    Returns:
      A Report: passed, mistakes (codes from SCHEDULE_MISTAKES), findings (one per CARRY_CHECKS).

    Raises:
      TypeError when fn is not callable; ValueError when timeout is not a finite positive number.
    """
    return run(SCHEDULE, fn, timeout)
