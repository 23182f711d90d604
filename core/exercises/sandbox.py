"""Running a learner's function: each check in a thread of its own under a time limit, and the
learner's exceptions told in the learner's words.

Any exception the learner's function raises is `error` (a tracer-conversion error, or one raised
from it such as NumPy's "setting an array element with a sequence", is `host_sync`), with the
exception's type, the last line of the learner's own code in the traceback (JAX, NumPy, the standard
library and this package filtered out), the lines of its message that say how (JAX's pointers
elsewhere dropped), and the usual causes in words where they are known. Each check runs in a daemon
thread for at most `timeout` seconds, or on a machine too busy to have given this process `timeout`
seconds of CPU by then, until it has (at most `STRETCH` times as long): a verdict must not depend on
what else the machine runs (the class report's workers run at nice 10 beside a class's kernels).
Past it the finding says "too slow" under `error` and the remaining checks are not run (each would
wait as long). An `error` raised by the learner's function is said once too: the checks after it are
not run, and a later check that raises an error said already is marked not run. A thread out of time
is stopped: a trace function (`sys.settrace`, installed in the check's thread only, tracing only the
learner's own files line by line) raises an exception at the next line of the learner's code. An
asynchronous exception (`PyThreadState_SetAsyncExc`) is only the fallback (`_watch`), repeated each
second for a thread that is still running: it lands in whatever Python code runs next, often JAX's
garbage-collector callback, which swallows it. A compiled XLA loop that never ends cannot be stopped
either way and keeps its thread busy until the process exits.

The checks run the learner's code under JAX's standard type and rank promotion whatever the global
setting, and read no other thread-local JAX configuration of the caller.
"""

from __future__ import annotations

import ctypes
import math
import numbers
import os
import sys
import sysconfig
import threading
import time
import traceback

import jax
import numpy as np

from core.exercises.report import Exercise, Finding, Report

TRACER_ERRORS = (
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
# Every file of this package is the checker's, never the learner's: a frame of a check (a lambda of
# an exercise's row, say) must not be named as the line where the learner's code went wrong.
_CHECKER = os.path.join(os.path.dirname(os.path.realpath(__file__)), "")


def _is_learner_file(filename: str) -> bool:
    """Whether code from `filename` is the learner's: not JAX, jaxlib, NumPy, the standard library,
    an installed package, or the checker's own package. "<string>" and notebook cells count as the
    learner's."""
    if filename.startswith(("<frozen", *_LIBRARIES)):  # the common case, without a system call
        return False
    path = filename if filename.startswith("<") else os.path.realpath(filename)
    return not path.startswith((_CHECKER, *_LIBRARIES))


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 6].rstrip() + " (...)"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return _shorten(lines[0].strip().rstrip(".")) if lines else ""


# Lines of a JAX message that point elsewhere (a URL, where JAX traced) or say nothing the learner
# can act on: dropped, while the lines between that say how (float32[] against float32[1]) stay.
_NOISE = ("See http", "Revise the function", "The error occurred while", "For simplicity", "-----")

# What usually causes an error JAX words in its own terms, said in the learner's.
_CAUSES = {
    "carry input and carry output must have equal types": (
        "The carry changed its shape or dtype in one step. Usual causes: a sum with keepdims=True, a "
        "gradient taken with respect to the wrong argument (the batch instead of w), or a batch row "
        "returned as the new weight"
    ),
    # jax.tree.map(f, params, grads) where grads is not a dict like params.
    "pytree structure error": (
        "jax.tree.map was given trees of different shapes: the params dict and something that is "
        "not a dict with the same keys. Usual cause: the gradient taken with respect to another "
        "argument (jax.grad differentiates its function's first argument, argnums=0; with "
        "argnums=1 it is x's gradient, an array like x)"
    ),
    # The body's new carry another tree than the one it received: a dict's update() returns None.
    "carry output must have the same pytree structure": (
        "The body must return as its new carry the same kind of value it received: a dict with the "
        "same keys, a pair for a pair. Usual causes: params.update(...), which changes a dict in place "
        "and returns None (return a new dict), or a tuple or a list returned where a dict came in"
    ),
    # A Python string times an array: what `w, b = params` leaves in w and b, a dict's keys.
    "Only integer scalar arrays can be converted to a scalar index": (
        "Usual cause: a string where a number belongs, such as the keys 'w' and 'b' that w, b = params "
        "unpacks from a dict (its values are params['w'] and params['b'])"
    ),
}


def _explanation(exc: BaseException) -> str:
    """The lines of `exc`'s message that explain it (its first line and the next few that say how,
    without JAX's pointers elsewhere), then the usual causes in words where they are known."""
    lines = []
    for line in str(exc).strip().splitlines():
        # An indented line, or one that starts in lower case, continues the one above it (JAX's
        # multi-line messages: "... a subtree of type\n    <class 'dict'>\nbut at the same ...").
        # A line that ends in ":" goes on in the next ("the output tree structure is:\nPyTreeDef(None)").
        continues = lines and (line.startswith((" ", "\t")) or line[:1].islower() or lines[-1].endswith(":"))
        if line.strip() and continues:
            lines[-1] += " " + line.strip()
        elif line.strip():
            lines.append(line.strip())
    if not lines:
        return ""
    kept = [lines[0].rstrip(":").rstrip(".")]
    for line in lines[1:4]:
        if line.startswith(_NOISE):
            break
        kept.append(line.rstrip("."))
    text = _shorten(". ".join(kept), 400)
    causes = [words for key, words in _CAUSES.items() if key in lines[0]]
    return ". ".join([text, *causes])


def _tracer_error(exc: BaseException) -> BaseException | None:
    """The tracer-conversion error `exc` is or was raised from (NumPy's "setting an array element
    with a sequence" comes from one: a NumPy array cannot hold a traced value), else None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, TRACER_ERRORS):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def summary(exc: BaseException) -> str:
    """'TypeError: <first line of the message>', for Finding.actual."""
    first = _first_line(exc)
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def describe_error(exc: BaseException) -> str:
    """'TypeError at line 12 of step() in my_file.py: `g = grad(w, batch)`: <first line>'."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_learner_file(f.filename)]
    if frames:
        frame = frames[-1]
        where = f"at line {frame.lineno} of {frame.name}() in {os.path.basename(frame.filename)}"
        if frame.line:
            where += f": `{_shorten(frame.line.strip(), 100)}`"
    else:
        where = "inside JAX, called by your function"
    said = _explanation(exc)
    return f"{type(exc).__name__} {where}" + (f": {said}" if said else "")


class Raised(Exception):
    """The learner's function raised `error` while a check did `doing`."""

    def __init__(self, error: BaseException, doing: str):
        super().__init__(doing)
        self.error, self.doing = error, doing


def call(fn, doing: str, *args):
    try:
        return fn(*args)
    except Exception as exc:
        raise Raised(exc, doing) from exc


def failure(raised: Raised, hints: dict, code: str | None = None) -> Finding:
    """The finding for a call that raised: host_sync for a tracer conversion, else error."""
    error = raised.error
    if code is None:
        code = "host_sync" if _tracer_error(error) is not None else "error"
    message = f"{raised.doing[0].upper()}{raised.doing[1:]}, your function raised {describe_error(error)}."
    if code == "host_sync" and not isinstance(error, TRACER_ERRORS):
        message += (
            f" A NumPy array cannot hold a traced value ({hints['traced values']}): writing one into "
            "it in place (weights[i] = w) asks for its number, which exists only after the scan has "
            "run. Return the weights as the scan's per-step output instead."
        )
    elif code == "host_sync":
        message += (
            f" It converts a traced value ({hints['traced values']}) to a Python or NumPy value, "
            "which fails inside lax.scan and under jax.jit."
        )
    return Finding(code, False, message, hints[code], None, summary(error))


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


STRETCH = 2.0
"""How many times `timeout` a check may take on a busy machine, waiting for its CPU (`_join`)."""


def _join(thread: threading.Thread, timeout: float, stretch: float) -> None:
    """Wait for `thread` `timeout` seconds; if by then this process has had less than `timeout`
    seconds of CPU (all its threads), wait on until it has, at most `stretch * timeout` in all.

    Never shorter than `timeout`: CPU used by other threads (a kernel's, a check that could not be
    stopped) only ends the wait sooner, down to the plain limit. Longer only while the machine is
    busy or the learner's code waits without computing (a sleep: it waits the whole stretch)."""
    began, cpu = time.monotonic(), time.process_time()
    thread.join(timeout)
    while thread.is_alive():
        left = min(timeout - (time.process_time() - cpu), stretch * timeout - (time.monotonic() - began))
        if left <= 0:
            return
        thread.join(max(left, 0.01))


def limited(work, timeout: float, name: str = "work", stretch: float = 1.0):
    """`work()`, which calls the learner's code, in a daemon thread for at most `timeout` seconds
    (with `stretch` > 1, longer on a busy machine: `_join`), the learner's lines stopped once the
    time is up (`_stopper`, then `_watch`), under JAX's standard promotion rules.

    Returns (how it ended, what came of it): ("ran", its value), ("raised", the exception) or
    ("timed out", None)."""
    box = {}
    stop = threading.Event()

    def target():
        try:
            sys.settrace(_stopper(stop))
            try:
                with jax.numpy_dtype_promotion("standard"), jax.numpy_rank_promotion("allow"):
                    box["value"] = work()
            except _Interrupted:
                pass
            except BaseException as exc:  # the learner's code may raise anything, SystemExit included
                box["error"] = exc
            finally:
                sys.settrace(None)
        except _Interrupted:  # a late one from the watchdog
            pass

    thread = threading.Thread(target=target, name=f"scanlab-{name}", daemon=True)
    thread.start()
    try:
        _join(thread, timeout, stretch)
    finally:
        stop.set()  # a no-op once the thread is done; else its learner code stops at its next line
    if thread.is_alive():
        _watch(thread)
    if "value" in box:
        return "ran", box["value"]
    if "error" in box:
        return "raised", box["error"]
    return "timed out", None


def too_slow(timeout: float, doing: str) -> str:
    """What a learner reads when their function did not return within `timeout` seconds."""
    return f"too slow: did not return within {timeout:g} s ({doing}). Is there a loop that never ends?"


def _run_check(name: str, check, doing: str, hints: dict, fn, state: dict, timeout: float):
    """`check(fn, state)` in a daemon thread for `timeout` seconds (`limited`, stretched by `STRETCH` on
    a busy machine: a verdict, unlike a drawn path, must not depend on the load); `doing` says
    what it does (for an error message) and `hints` has the "error" and "host_sync" hints.

    Returns (the Finding, how it ended): "ran" when the check returned, "raised" when the learner's
    function raised, "timed out" when it did not return in time."""
    ended, value = limited(lambda: check(fn, state), timeout, f"check-{name}", STRETCH)
    if ended == "ran":
        return value, ended
    if ended == "raised":
        raised = value if isinstance(value, Raised) else Raised(value, doing)
        return failure(raised, hints), ended
    finding = Finding(
        "error",
        False,
        too_slow(timeout, doing),
        hints["error"],
        f"a result within {timeout:g} s",  # the time limit, said as what was expected
        "no result",
    )
    return finding, ended


NOT_RUN = "Not run"
"""How the message of a check that was not run begins (widgets.exercise shows such a row apart)."""
NOT_JUDGED = "Not judged"
"""How the message of a check that ran but could not be judged begins (an earlier row says why):
shown apart too, not as a second failure."""


def _not_run(name: str, why: str, hint: str) -> Finding:  # why: ": ..." or " to the end: ..."
    """A check's finding when it was not run (or its run only repeated an earlier error): the
    check's name as its code, not passed, the reason, and the hint of the error that stopped it."""
    return Finding(name, False, NOT_RUN + why, hint)


def run(exercise: Exercise, fn, timeout) -> Report:
    """Run `exercise.checks` in order on `fn`, each in its own thread for at most `timeout` seconds,
    and collect the Report: its mistakes are the failed findings' codes among `exercise.mistakes`.

    Raises TypeError when fn is not callable and ValueError when timeout is not a finite positive
    number, naming the argument; whatever fn raises or however long it runs is reported instead."""
    if not callable(fn):
        raise TypeError(
            f"fn must be callable: the function fn{exercise.signature} to check; "
            f"got {type(fn).__name__} {fn!r}"[:200]
        )
    if (
        isinstance(timeout, (bool, np.bool_))
        or not isinstance(timeout, numbers.Real)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ValueError(f"timeout must be a finite positive number of seconds, got {timeout!r}"[:200])
    state: dict = {}
    findings, why_not = [], None  # why_not: why the remaining checks are not run
    for name, check, doing in exercise.checks:
        if why_not is not None:
            findings.append(_not_run(name, why_not, exercise.hints["error"]))
            continue
        finding, ended = _run_check(
            name,
            lambda fn, state, check=check: check(exercise, fn, state),
            doing,
            exercise.hints,
            fn,
            state,
            float(timeout),
        )
        # A function that never returns would cost the learner the time limit once per check, and
        # an error raised on every call would fill every row with the same words: say it once.
        if ended == "timed out":
            why_not = f": the {name} check ran out of time; every other check calls the same function."
        elif ended == "raised" and finding.code == "error":
            why_not = f": your function raised an error in the {name} check (see there); fix it first."
        elif ended == "raised":
            same = [i for i, f in enumerate(findings) if (f.code, f.actual) == (finding.code, finding.actual)]
            if same:
                first = exercise.checks[same[0]][0]
                why = f" to the end: it raised the same error as in the {first} check (see there)."
                finding = _not_run(name, why, finding.hint)
        findings.append(finding)
    found = frozenset(f.code for f in findings if not f.passed and f.code in exercise.mistakes)
    return Report(all(f.passed for f in findings), found, findings)
