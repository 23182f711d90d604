"""The checker's vocabulary: what a check finds (`Finding`), the verdict (`Report`), how close is
right (`TOLERANCE`), how numbers are written in messages, and the row every exercise is (`Exercise`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

WRONG_RESULT = "wrong_result"
"""The code of a "numbers" finding whose numbers no known mistake explains; never in `mistakes`."""

DEFAULT_TIMEOUT = 10.0
"""Seconds each check may take."""

TOLERANCE = 1e-4
"""A result matches a model when |result - model| <= TOLERANCE * max(1, |model|)."""


class Finding(NamedTuple):
    """The outcome of one check.

    code: the mistake found (from MISTAKES, or WRONG_RESULT); the check's name (from CHECKS) when
        the check passed or could not be judged.
    passed: True when the check found nothing wrong.
    message: what was run and what came back, in the learner's words, with the expected and actual
        numbers (printed with 6 significant digits).
    hint: the rule of the exercise that the mistake breaks (for a check that could not be judged, the
        rule it will check); "" when the check passed.
    expected, actual: the numbers the message compares (a float, an int, a list of them, or a
        short text such as a dtype or an error), or None.
    """

    code: str
    passed: bool
    message: str
    hint: str = ""
    expected: float | list | str | None = None
    actual: float | list | str | None = None


class Report(NamedTuple):
    """A checker's verdict (check_training_step, check_momentum_step, check_scheduled_step,
    check_pytree_step).

    passed: every check passed.
    mistakes: the codes (from MISTAKES) of the failed findings; empty when all is well. A
        "wrong_result" or a check that could not be judged fails the report without a code here.
    findings: one Finding per check, in the order of CHECKS.
    """

    passed: bool
    mistakes: frozenset
    findings: list


class Exercise(NamedTuple):
    """One exercise, a row of the checker's table (core.exercises.EXERCISES): what the learner's
    function is called with, the designed cases and models, the public mistake codes, the words,
    and the checks that run, in order. A new exercise adds its cases, models, hints and one row.

    signature: the learner's function's arguments, e.g. "(w, lr, x_batches, y_batches)".
    cases: the designed cases; the numbers check reads them.
    mistakes: the public, stable mistake codes.
    explanations: pattern -> what a model of that mistake did, a format string (core.exercises.hints).
    hints: code -> the rule of the exercise it breaks, "traced values" and WRONG_RESULT included.
    trace: (fn, n, x, y) -> the ClosedJaxpr of fn on (n, 3) float32 batches x and y, lr fixed.
    checks: (name, check(exercise, fn, state) -> Finding, what it does as the learner reads it).
    """

    signature: str
    cases: tuple
    mistakes: tuple
    explanations: dict
    hints: dict
    trace: Callable
    checks: tuple


def num(value) -> str:
    """A number as messages show it: an int as is, else 6 significant digits."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return f"{float(value):.6g}"


def nums(values) -> str:
    return "[" + ", ".join(num(v) for v in values) + "]"


def params_text(pair) -> str:
    """A (w, b) pair as messages show the params dict, as Python prints one: {'w': 0.48, 'b': 0.48}."""
    w, b = pair
    return f"{{'w': {num(w)}, 'b': {num(b)}}}"


def rows_text(array) -> str:
    """A (N, B) array as messages show it: [[1, 0.5], [-1, 2]]."""
    return "[" + ", ".join("[" + ", ".join(f"{v:g}" for v in row) + "]" for row in array) + "]"
