"""The exercise's checker: run a learner's `scan_training_step` on diagnostic cases and name the mistake.

`check_training_step(fn)` calls `fn(w, lr, x_batches, y_batches)` on cases designed so that each
mistake the exercise warns about gives its own number, and returns a `Report`. A mistake is diagnosed
by evidence, never guessed: the learner's final weight is matched against float64 NumPy models of
the right update and of every mistake on the same case, the jaxpr is inspected for a loop, and
`jax.jit` is tried with `lr` traced and with `lr` fixed.

The four checks (`CHECKS`), in the order they run, each give one `Finding`:

- "numbers": three cases: the worked example (w = 0, lr = 0.1, x = y = ones((2, 2))), three distinct
  batches of three examples, and one batch (N = 1). On each, the final weight is compared with the
  model of the right update and of each mistake: gradients summed at the initial weight, the first
  row at every step, every other order of the rows, one row skipped or repeated, the gradient
  divided by B, without its factor 2, or added (c in 1 - c*lr*S: 2 right, 2/B, 1, -2). The models
  are 5 % apart or more on the distinct batches, and the match tolerance is 1e-4 (relative, for
  float32). A code is diagnosed when on every case the result matches either the right value or
  that code's model, and on at least one case only that code's model. An output whose length
  follows N (N or N+1 entries), or the (carry, outputs) pair of `lax.scan`, is `returns_history`,
  diagnosed on the N = 3 case; its last entry is then the final weight.
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
- "loop": `jax.make_jaxpr` at N = 2 and N = 6 (lr fixed, so a static lr does not hide the loop). No
  `scan` primitive in the jaxpr, nested ones included, or more equations at N = 6 than at N = 2 (an
  unrolled Python loop), is `not_scan`. `lax.fori_loop` with a static trip count lowers to `scan`
  and passes; `lax.while_loop` is a compiled loop but not `scan`, and does not. As the exercise
  asks, `not_scan` is reported only when the final weights are right.

A finding whose check found a mistake carries that mistake's code. A finding that passed carries
the check's name, and so does one that could not be judged (the loop check while the numbers are
wrong, or when the function cannot be traced); those have `passed` False. Numbers wrong in a way
no code explains give the code "wrong_result" (`WRONG_RESULT`), which is not a public mistake:
`Report.mistakes` holds only codes from `MISTAKES`, and `Report.passed` is False whenever any
finding failed, so a wrong result with no known cause still fails.

Any exception the learner's function raises is `error` (a tracer-conversion error with lr concrete
is `host_sync`), with the exception's type, the last line of the learner's own code in the
traceback (JAX, NumPy and the standard library filtered out) and the first line of its message.
Each check runs in a daemon thread for at most `timeout` seconds; past it the finding says "too
slow" under `error` and the next check runs. The thread is then stopped: a trace function
(`sys.settrace`, installed in the check's thread only, tracing only the learner's own files line by
line) raises an exception at the next line of the learner's code. An asynchronous exception
(`PyThreadState_SetAsyncExc`) is only the fallback (`_watch`), repeated each second for a thread
that is still running: it lands in whatever Python code runs next, often JAX's garbage-collector
callback, which swallows it. A compiled XLA
loop that never ends cannot be stopped either way and keeps its thread busy until the process
exits.

The checks run the learner's code under JAX's standard type and rank promotion whatever the global
setting, and read no other thread-local JAX configuration of the caller.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import numbers
import os
import sys
import sysconfig
import threading
import traceback
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import monitoring

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
)
"""The public, stable mistake codes, in the order the issue lists them."""

CHECKS = ("numbers", "dtype", "traced_lr", "loop")
"""The checks, in the order they run; a passing finding carries its check's name as its code."""

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
    """check_training_step's verdict.

    passed: every check passed.
    mistakes: the codes (from MISTAKES) of the failed findings; empty when all is well. A
        "wrong_result" or a check that could not be judged fails the report without a code here.
    findings: one Finding per check, in the order of CHECKS.
    """

    passed: bool
    mistakes: frozenset
    findings: list


_HINTS = {
    "accumulated_gradients": (
        'The exercise: "These are sequential updates, not gradient accumulation at a fixed weight. In the '
        "example, adding both gradients evaluated at w=0 would give w=0.8 instead of 0.64. The second "
        "gradient must use w=0.4.\" Make the weight the scan's carry: the body takes the gradient at "
        "the carry it receives and returns the updated weight as the next carry."
    ),
    "reused_first_row": (
        'The exercise: "Use each paired row (x_batches[i], y_batches[i]) exactly once, in order." Pass '
        "(x_batches, y_batches) as the scan's xs: the body receives (x_batches[i], y_batches[i]) at "
        "step i."
    ),
    "wrong_order": (
        'The exercise: "The batch arrays are read in order along their first axis" and "With different '
        'batches, changing their order can change the final weight." Scan forward over the rows as '
        "they are: no reverse=True, no reversed or shuffled rows."
    ),
    "off_by_one": (
        'The exercise: "take one gradient-descent step per batch" and "Return only the scalar final weight '
        'after all N updates." N rows, N steps: scan over the whole arrays, with no extra step before '
        "or after and no row left out."
    ),
    "returns_history": (
        'The exercise: "Return only the scalar final weight after all N updates." Return None as the '
        "body's per-step output and unpack the scan: final_w, _ = lax.scan(step, w, (x_batches, "
        "y_batches)); return final_w."
    ),
    "mean_not_sum": (
        "The exercise: \"The loss is a sum over each batch. Replacing it with a mean divides that batch's "
        'gradient by its size." Use sum((w*x - y)**2), whose gradient is 2 * sum((w*x - y) * x).'
    ),
    "missing_factor_two": (
        "The exercise: gradient = 2 * sum((w*x - y) * x), the derivative of sum((w*x - y)**2); or let "
        "jax.grad differentiate the loss."
    ),
    "wrong_sign": (
        "The exercise: new_w = w - lr * gradient. Gradient descent steps against the gradient; adding it "
        "climbs the loss."
    ),
    "dtype_changed": (
        'The exercise: "The carry must keep the same structure, shape and dtype across steps" and "use '
        "matching dtypes so each update preserves the scalar carry's dtype.\" Start the carry from w "
        "as given (no float(), .item() or dtype=float) and return the jax array the scan gives."
    ),
    "static_lr": (
        'The exercise: "It need not be a static argument when you JIT the enclosing function" and '
        '"closing over it in the scan body does not make it a static JIT argument." Use lr as an '
        "array: no static_argnums for it, no float(lr), no Python if on its value."
    ),
    "not_scan": (
        'The exercise: "Implement scan_training_step(w, lr, x_batches, y_batches) with lax.scan", which '
        '"lowers the loop to a compiled loop operation, avoiding the large unrolled computation a Python '
        'for loop can create inside jit."'
    ),
    "host_sync": (
        "The exercise: lax.scan traces the body once and compiles the loop, so inside it (and under jit) "
        "the weight is a traced value with no number yet. float(), .item(), int(), np.asarray and a "
        "Python if or break on it need one: keep the step in jax.numpy operations, and use "
        "jax.debug.print to look at values."
    ),
    "error": (
        "The exercise's signature: scan_training_step(w, lr, x_batches, y_batches), where x_batches and "
        "y_batches have shape (N, B). Inside the body, unpack the batch with x, y = batch, and return "
        "the 2-tuple (new_w, None)."
    ),
    # Not a hint: what a host_sync message says was traced.
    "traced values": "the weight or a batch, not lr",
    WRONG_RESULT: (
        "The exercise: starting from w, one step per row (x_batches[i], y_batches[i]) in order, each "
        "from the weight the previous step produced: gradient = 2 * sum((w*x - y) * x); new_w = "
        "w - lr * gradient. Return the final weight."
    ),
}

# --- the cases and the float64 models of each mistake -------------------------------------------


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
            f"{self.label} (w = {self.w:g}, lr = {self.lr:g}, x_batches = {_rows(self.x)}, "
            f"y_batches = {_rows(self.y)})"
        )


def _rows(array) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{v:g}" for v in row) + "]" for row in array) + "]"


_SEED = _Case("the worked example", 0.0, 0.1, np.ones((2, 2)), np.ones((2, 2)))
_ROWS = _Case(
    "three distinct batches",
    1.0,
    0.125,
    np.array([[-1.0, 0.5, 1.0], [0.5, 1.0, -1.0], [1.0, 1.0, -0.5]]),
    np.array([[1.0, -2.0, -2.0], [-0.5, 2.0, 2.0], [-0.5, -1.0, 1.0]]),
)
_SINGLE = _Case("one batch", 0.5, 0.125, np.array([[1.0, -0.5, 0.5]]), np.array([[2.0, 1.0, -1.0]]))
_CASES = (_SEED, _ROWS, _SINGLE)

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
        "unchanged": [(case.w, "")],
        "each_step_from_initial_w": [(case.w - case.lr * _gradient(case, case.w, n - 1), "")],
    }


def _order(rows) -> str:
    return ", ".join(str(i) for i in rows) if len(rows) else "none"


def _close(value: float, model: float) -> bool:
    return math.isfinite(value) and abs(value - model) <= TOLERANCE * max(1.0, abs(model))


def _matches(outcomes: dict, value: float) -> dict:
    """pattern -> the rows text of its first model in `outcomes` (pattern -> [(model, rows)]) that
    `value` matches."""
    found = {}
    for pattern, models in outcomes.items():
        for model, rows in models:
            if _close(value, model):
                found.setdefault(pattern, rows)
                break
    return found


def _diagnose(outcomes: list, values, patterns=_PATTERNS) -> tuple[str | None, list]:
    """The pattern that `values`, one final weight per case, show against each case's `outcomes`
    (pattern -> [(model, rows)], "correct" among them): None when all are right, a mistake code or
    a slip when exactly one of `patterns` is consistent with every case, else WRONG_RESULT; and the
    per-case matches."""
    per_case = [_matches(found, value) for found, value in zip(outcomes, values, strict=True)]
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


class _Output(NamedTuple):
    kind: str  # "scalar", "history" (entries follow N), "pair" (scan's (carry, ys)) or "other"
    final: float | None  # the final weight it holds, if any
    dtype: str | None  # the final weight's dtype, "a Python float", ... ; None if not a number
    shown: str  # the output as messages show it
    values: list | None = None  # a history's entries


def _numeric(value):
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


def _dtype_of(value, array) -> str:
    if not isinstance(value, (np.generic, np.ndarray, jax.Array)):
        if isinstance(value, bool):
            return "a Python bool"
        if isinstance(value, numbers.Integral):
            return "a Python int"
        if isinstance(value, numbers.Real):
            return "a Python float"
    return str(array.dtype)


def _num(value) -> str:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return f"{float(value):.6g}"


def _nums(values) -> str:
    return "[" + ", ".join(_num(v) for v in values) + "]"


def _read(out, n: int) -> _Output:
    """What `out`, returned for n batches, holds."""
    if isinstance(out, (tuple, list)) and len(out) == 2:
        first, second = _numeric(out[0]), _numeric(out[1])
        per_step = out[1] is None or (second is not None and second.ndim >= 1 and second.shape[0] == n)
        if first is not None and first.ndim == 0 and per_step:
            rest = "None" if out[1] is None else f"an array of shape {tuple(second.shape)}"
            return _Output("pair", float(first), _dtype_of(out[0], first), f"({_num(first)}, {rest})")
    if isinstance(out, (tuple, list)):
        entries = [_numeric(v) for v in out]
        if out and all(e is not None and e.ndim == 0 for e in entries):
            values = [float(e) for e in entries]
            kind = "history" if len(out) in (n, n + 1) else "other"
            what = f"a {type(out).__name__} of {len(out)} numbers {_nums(values)}"
            return _Output(kind, values[-1], _dtype_of(out[-1], entries[-1]), what, values)
        return _Output("other", None, None, f"a {type(out).__name__} of {len(out)} items")
    if out is None:
        return _Output("other", None, None, "None (is its return statement missing?)")
    array = _numeric(out)
    if array is None:
        return _Output("other", None, None, f"a {type(out).__name__}"[:80])
    dtype = _dtype_of(out, array)
    if array.ndim == 0:
        return _Output("scalar", float(array), dtype, _num(array))
    if array.ndim == 1 and array.shape[0] in (n, n + 1):
        values = [float(v) for v in array]
        return _Output(
            "history", values[-1], dtype, f"an array of shape {array.shape}: {_nums(values)}", values
        )
    return _Output("other", None, dtype, f"an array of shape {tuple(array.shape)}")


def _inputs(case: _Case):
    """The learner's arguments: w a float32 0-d array, lr a Python float, float32 batches."""
    return (
        jnp.asarray(np.float32(case.w)),
        float(case.lr),
        jnp.asarray(case.x.astype(np.float32)),
        jnp.asarray(case.y.astype(np.float32)),
    )


# --- describing the learner's exceptions ----------------------------------------------------------

_TRACER_ERRORS = (
    jax.errors.ConcretizationTypeError,  # TracerBoolConversionError is one
    jax.errors.TracerArrayConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.NonConcreteBooleanIndexError,
)


def _library_dirs() -> tuple:
    dirs = {os.path.dirname(module.__file__) for module in (jax, np)}
    paths = sysconfig.get_paths()
    # site-packages (purelib, platlib) holds jaxlib and every other installed package.
    dirs |= {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    return tuple({os.path.join(form(d), "") for d in dirs for form in (os.path.abspath, os.path.realpath)})


_LIBRARIES = _library_dirs()
_THIS_FILE = os.path.realpath(__file__)


def _is_learner_file(filename: str) -> bool:
    """Whether code from `filename` is the learner's: not JAX, jaxlib, NumPy, the standard library,
    an installed package, or this module. "<string>" and notebook cells count as the learner's."""
    if filename.startswith(("<frozen", *_LIBRARIES)):  # the common case, without a system call
        return False
    path = filename if filename.startswith("<") else os.path.realpath(filename)
    return path != _THIS_FILE and not path.startswith(_LIBRARIES)


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 6].rstrip() + " (...)"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return _shorten(lines[0].strip().rstrip(".")) if lines else ""


def _summary(exc: BaseException) -> str:
    """'TypeError: <first line of the message>', for Finding.actual."""
    first = _first_line(exc)
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _describe_error(exc: BaseException) -> str:
    """'TypeError at line 12 of step() in my_file.py: `g = grad(w, batch)`: <first line>'."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_learner_file(f.filename)]
    if frames:
        frame = frames[-1]
        where = f"at line {frame.lineno} of {frame.name}() in {os.path.basename(frame.filename)}"
        if frame.line:
            where += f": `{_shorten(frame.line.strip(), 100)}`"
    else:
        where = "inside JAX, called by your function"
    first = _first_line(exc)
    return f"{type(exc).__name__} {where}" + (f": {first}" if first else "")


class _Raised(Exception):
    """The learner's function raised `error` while a check did `doing`."""

    def __init__(self, error: BaseException, doing: str):
        super().__init__(doing)
        self.error, self.doing = error, doing


def _call(fn, doing: str, *args):
    try:
        return fn(*args)
    except Exception as exc:
        raise _Raised(exc, doing) from exc


def _failure(raised: _Raised, code: str | None = None, hints: dict = _HINTS) -> Finding:
    """The finding for a call that raised: host_sync for a tracer conversion, else error."""
    error = raised.error
    if code is None:
        code = "host_sync" if isinstance(error, _TRACER_ERRORS) else "error"
    message = f"{raised.doing[0].upper()}{raised.doing[1:]}, your function raised {_describe_error(error)}."
    if code == "host_sync":
        message += (
            f" It converts a traced value ({hints['traced values']}) to a Python or NumPy value, "
            "which fails inside lax.scan and under jax.jit."
        )
    return Finding(code, False, message, hints[code], None, _summary(error))


# --- the checks ------------------------------------------------------------------------------------


def _check_numbers(fn, state: dict) -> Finding:
    outputs = [_read(_call(fn, f"on {case.description}", *_inputs(case)), case.n) for case in _CASES]
    expected = [_descend(case, range(case.n)) for case in _CASES]
    rows = _CASES.index(_ROWS)
    for case, output, right in zip(_CASES, outputs, expected, strict=True):
        if output.kind == "other" and outputs[rows].kind not in ("history", "pair"):
            return Finding(
                WRONG_RESULT,
                False,
                f"On {case.description}, your function returns {output.shown}; expected the final "
                f"weight alone, a scalar: {_num(right)}.",
                _HINTS["returns_history"],
                right,
                output.shown,
            )
    values = [math.nan if output.final is None else output.final for output in outputs]
    pattern, per_case = _diagnose([_outcomes(case) for case in _CASES], values)
    state["values_right"] = pattern is None
    if outputs[rows].kind in ("history", "pair"):
        return _history_finding(outputs[rows], expected[rows], pattern is None)
    if pattern is None:
        shown = ", ".join(f"{_num(v)} on {case.label}" for case, v in zip(_CASES, values, strict=True))
        return Finding("numbers", True, f"The final weights are right: {shown}.", "", expected, values)
    return _numbers_finding(pattern, per_case, values, expected)


def _history_finding(output: _Output, right: float, values_right: bool) -> Finding:
    n = _ROWS.n
    if output.kind == "pair":
        what = "the pair (final carry, per-step outputs) that lax.scan returns"
    elif len(output.values) == n + 1:
        what = "the initial weight and the weight after every step"
    else:
        what = "the weight after every step"
    message = (
        f"For N = {n} batches ({_ROWS.description}) your function returns {output.shown}, {what}, "
        f"instead of the final weight alone, {_num(right)}."
    )
    if not values_right:
        message += f" Its final weight, {_num(output.final)}, is not {_num(right)} either."
    actual = output.values if output.values is not None else output.shown
    return Finding("returns_history", False, message, _HINTS["returns_history"], right, actual)


_EXPLANATIONS = {
    "accumulated_gradients": "what every batch's gradient taken at the initial weight w = {w}, summed "
    "and applied once, gives: each step must take its gradient at the weight the previous step produced",
    "reused_first_row": "what the first batch (x_batches[0], y_batches[0]) used at every step gives",
    "wrong_order": "what the same batches in another order (rows {rows}) give",
    "off_by_one": "what {k} steps on rows {rows} give, instead of {n} steps on rows 0 to {last}",
    "mean_not_sum": "what the mean loss gives: each batch's gradient divided by B = {b}",
    "missing_factor_two": "what the gradient without its factor 2, sum((w*x - y) * x), gives",
    "wrong_sign": "what stepping up the gradient, w + lr * gradient, gives",
    "unchanged": "the initial weight w = {w}: the updates are not returned (is the final carry of "
    "lax.scan what the function returns?)",
    "each_step_from_initial_w": "what one step from the initial weight on the last batch gives: every "
    "step starts from the initial w instead of the carry",
}


def _numbers_finding(pattern: str, per_case: list, values: list, expected: list) -> Finding:
    wrong = [i for i, found in enumerate(per_case) if "correct" not in found]
    # Say it on the case that shows it best: the worked example's own 0.8 for accumulated gradients and for
    # slips, otherwise the distinct batches (where every model differs), else the first wrong case.
    preferred = (0, 1, 2) if pattern in ("accumulated_gradients", WRONG_RESULT, *_SLIPS) else (1, 0, 2)
    index = next(i for i in preferred if i in wrong and (pattern == WRONG_RESULT or pattern in per_case[i]))
    case, actual, right = _CASES[index], values[index], expected[index]
    message = (
        f"On {case.description}, your function returns {_num(actual)}; the sequential updates give "
        f"{_num(right)}."
    )
    if pattern == WRONG_RESULT:
        message += " No single known mistake gives this (perhaps several at once)."
        code, hint = WRONG_RESULT, _HINTS[WRONG_RESULT]
    else:
        rows = per_case[index][pattern]
        explanation = _EXPLANATIONS[pattern].format(
            w=_num(case.w),
            rows=rows,
            k=len(rows.split(", ")) if rows != "none" else 0,
            n=case.n,
            last=case.n - 1,
            b=case.x.shape[1],
        )
        message += f" {_num(actual)} is {explanation}."
        code = pattern if pattern in MISTAKES else WRONG_RESULT
        hint = _HINTS[code]
    return Finding(code, False, message, hint, right, actual)


def _check_dtype(fn, state: dict) -> Finding:
    case = _ROWS
    doing = "given w as a float32 array and float32 batches"
    dtypes = [_read(_call(fn, doing, *_inputs(case)), case.n).dtype]
    modes = ["by default"]
    if not jax.config.jax_enable_x64:
        with jax.enable_x64(True):
            dtypes.append(_read(_call(fn, doing + " under jax_enable_x64", *_inputs(case)), case.n).dtype)
        modes.append("under jax_enable_x64")
    if any(dtype is None for dtype in dtypes):
        return Finding(
            "dtype",
            False,
            "Not judged: the function returns no number to read a dtype from (see the numbers check).",
            _HINTS[WRONG_RESULT],
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
        _HINTS["dtype_changed"],
        "float32",
        wrong[0][1],
    )


_TRACE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/backend_compile_duration")


def _check_traced_lr(fn, state: dict) -> Finding:
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
        jax.block_until_ready(_call(jax.jit(lambda w, x, y: fn(w, fixed_lr, x, y)), doing, w, x, y))
        return Finding(
            "static_lr",
            False,
            f"Under jax.jit with lr traced, your function raised {_describe_error(traced_error)}. With "
            f"lr a fixed number (lr = {fixed_lr:g}) it runs: lr is used as a static or concrete value.",
            _HINTS["static_lr"],
            None,
            _summary(traced_error),
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
            jax.block_until_ready(_call(fn, f"with lr = {lr:g}", w, lr, x, y))
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
            _HINTS["static_lr"],
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


def _check_loop(fn, state: dict) -> Finding:
    return _loop_finding(
        lambda n, x, y: jax.make_jaxpr(lambda w, x, y: fn(w, 0.125, x, y))(jnp.float32(1.0), x, y),
        state,
        _HINTS,
    )


def _loop_finding(trace, state: dict, hints: dict) -> Finding:
    """The "loop" check: `trace(n, x, y)` gives the learner's ClosedJaxpr for (n, 3) batches x and y
    (lr fixed, so that a static lr does not hide the loop); `hints` has "not_scan" and "host_sync"."""
    sizes, primitives = {}, {}
    for n in (2, 6):
        ones = np.ones((n, 3), np.float32)
        try:
            jaxpr = trace(n, ones, ones).jaxpr
        except _TRACER_ERRORS as exc:
            return Finding(
                "loop",
                False,
                "Not judged: tracing your function to a jaxpr raised "
                f"{_describe_error(exc)} (see host_sync).",
                hints["host_sync"],
            )
        except Exception as exc:
            raise _Raised(exc, f"while tracing it with jax.make_jaxpr for N = {n} batches") from exc
        equations = list(_equations(jaxpr))
        sizes[n] = len(equations)
        primitives[n] = {eqn.primitive.name for eqn in equations}
    has_scan = "scan" in primitives[6]
    unrolled = sizes[6] > sizes[2]
    if has_scan and not unrolled:
        return Finding(
            "loop",
            True,
            f"The traced program has a lax.scan and the same size for N = 2 and N = 6 batches "
            f"({sizes[2]} operations).",
            "",
            sizes[2],
            sizes[6],
        )
    if unrolled:
        message = (
            f"The traced program grows with N: {sizes[2]} operations for N = 2 batches, {sizes[6]} for "
            "N = 6. The loop is unrolled, one copy of the step per batch (a Python loop)."
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


_CHECK_FUNCTIONS = {
    "numbers": (_check_numbers, "while computing the final weight on the designed cases"),
    "dtype": (_check_dtype, "while checking the output's dtype"),
    "traced_lr": (_check_traced_lr, "while running it under jax.jit with lr traced"),
    "loop": (_check_loop, "while tracing it with jax.make_jaxpr"),
}

# --- running a check with a time limit ------------------------------------------------------------


class _Interrupted(BaseException):
    """Raised in the learner's code once its check's time is up (a BaseException, so that a
    learner's `except Exception` does not swallow it)."""


def _stopper(stop: threading.Event):
    """A trace function for sys.settrace that raises _Interrupted in the learner's own code once
    `stop` is set.

    Only frames of the learner's files are traced line by line (the library's run at full speed,
    with a check per call), so the interrupt lands in the learner's loop, never inside a callback
    that JAX runs from the garbage collector, where an exception would be swallowed (which is what
    PyThreadState_SetAsyncExc does to it: the eager loop's garbage runs JAX's gc callback often).
    """
    learner_code = {}

    def line(frame, event, arg):
        if stop.is_set():
            raise _Interrupted
        return line

    def call(frame, event, arg):
        code = frame.f_code
        mine = learner_code.get(code)
        if mine is None:
            mine = learner_code[code] = _is_learner_file(code.co_filename)
        if not mine:
            return None
        if stop.is_set():
            raise _Interrupted
        return line

    return call


def _watch(thread: threading.Thread, grace: float = 1.0) -> None:
    """If `thread` outlives the trace function's interrupt by `grace` seconds, raise _Interrupted in
    it asynchronously, every `grace` seconds until it ends.

    The trace function is the way that lands cleanly, but CPython turns a thread's tracing off when
    the trace function raises; if something between the learner's loop and the check swallows that
    one exception, the loop runs on untraced (seen once in a CI run: a thread still looping 10 s
    later, slowing every test after it). An asynchronous exception may land in a callback that
    swallows it too (JAX's GC callback), which is why it is the fallback, and why it is repeated.
    """

    def watchdog():
        while thread.is_alive():
            thread.join(grace)
            if thread.is_alive() and thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(thread.ident), ctypes.py_object(_Interrupted)
                )

    threading.Thread(target=watchdog, name="scanlab-watchdog", daemon=True).start()


def _run_check(name: str, check, doing: str, hints: dict, fn, state: dict, timeout: float) -> Finding:
    """`check(fn, state)` in a daemon thread for at most `timeout` seconds; `doing` says what it
    does (for an error message) and `hints` has the "error" and "host_sync" hints."""
    box = {}
    stop = threading.Event()

    def target():
        try:
            sys.settrace(_stopper(stop))
            try:
                with jax.numpy_dtype_promotion("standard"), jax.numpy_rank_promotion("allow"):
                    box["finding"] = check(fn, state)
            except _Interrupted:
                pass
            except BaseException as exc:  # the learner's code may raise anything, SystemExit included
                box["error"] = exc
            finally:
                sys.settrace(None)
        except _Interrupted:  # a late one from the watchdog
            pass

    thread = threading.Thread(target=target, name=f"scanlab-check-{name}", daemon=True)
    thread.start()
    try:
        thread.join(timeout)
    finally:
        stop.set()  # a no-op once the thread is done; else its learner code stops at its next line
    if thread.is_alive():
        _watch(thread)
    if "finding" in box:
        return box["finding"]
    if "error" in box:
        error = box["error"]
        if isinstance(error, _Raised):
            return _failure(error, hints=hints)
        return _failure(_Raised(error, doing), hints=hints)
    return Finding(
        "error",
        False,
        f"too slow: did not return within {timeout:g} s ({doing}). Is there a loop that never ends?",
        hints["error"],
        timeout,
        None,
    )


def _check_all(fn, timeout, checks: dict, hints: dict, mistakes: tuple, signature: str) -> Report:
    """Run `checks` (name -> (check(fn, state), what it does)) in order on `fn`, each in its own
    thread for at most `timeout` seconds, and collect the Report; `mistakes` are the exercise's
    public codes and `signature` the call the learner's function must take, for the TypeError."""
    if not callable(fn):
        raise TypeError(
            f"fn must be callable: the function fn{signature} to check; got {type(fn).__name__} {fn!r}"[:200]
        )
    if (
        isinstance(timeout, (bool, np.bool_))
        or not isinstance(timeout, numbers.Real)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(f"timeout must be a finite positive number of seconds, got {timeout!r}"[:200])
    state: dict = {}
    findings = [
        _run_check(name, check, doing, hints, fn, state, float(timeout))
        for name, (check, doing) in checks.items()
    ]
    found = frozenset(f.code for f in findings if not f.passed and f.code in mistakes)
    return Report(all(f.passed for f in findings), found, findings)


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
    return _check_all(fn, timeout, _CHECK_FUNCTIONS, _HINTS, MISTAKES, "(w, lr, x_batches, y_batches)")
