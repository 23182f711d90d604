"""check_training_step against a catalogue of learners' scan_training_step, right and wrong.

The catalogue, RIGHT and WRONG, is in harness/support/scan_step_learners.py: each implementation is
written the way a learner would write it, in several styles (the seed's closure over lr, lr in the
carry, fori_loop, a Python loop inside jit, a Python loop outside jit around a jitted step, plain
NumPy). Each must get exactly its codes; every failing finding must print the numbers it compares.
"""

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax.numpy as jnp
import pytest
from jax import lax

import core
from core import exercise
from core.exercises import reading, sandbox, scan_step
from harness.support.scan_step_learners import (
    RIGHT,
    WRONG,
    accumulated_with_vmap,
    checks_lr_is_positive,
    first_row_python_loop,
    forgets_to_count,
    forgets_to_unpack,
    fori_loop_one_step_too_many,
    grad,
    python_loop_in_jit,
    reversed_scan,
    seed_closure,
    shuffled_batches,
    static_lr_for_numbers,
    stops_early,
    weights_of_every_step,
    while_loop,
    whole_scan_result,
)

ROOT = Path(__file__).resolve().parent.parent


def number_texts(value):
    """The texts a message shows for a finding's numbers (6 significant digits)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, list):
        return [t for v in value for t in number_texts(v)]
    if isinstance(value, int):
        return [str(value)]
    return [f"{value:.6g}"]


def test_mistakes_are_the_issues_codes_in_order():
    assert core.MISTAKES == (
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
        "lr_twice",
        "wrong_axis",
        "full_batch",
        "stale_gradient",
        "carry_from_constant",
        "lr_ignored",
    )
    assert core.Finding._fields == ("code", "passed", "message", "hint", "expected", "actual")
    assert core.Report._fields == ("passed", "mistakes", "findings")


@pytest.mark.parametrize("name", RIGHT)
def test_right_implementations_pass(name):
    report = core.check_training_step(RIGHT[name])
    assert report.mistakes == frozenset(), report
    assert report.passed, report
    assert [f.code for f in report.findings] == list(exercise.CHECKS)
    assert all(f.passed and f.hint == "" for f in report.findings)
    assert "0.64 on the worked example" in report.findings[0].message


@pytest.mark.parametrize("name", WRONG)
def test_each_mistake_gets_exactly_its_codes(name):
    fn, codes = WRONG[name]
    report = core.check_training_step(fn)
    assert report.mistakes == frozenset(codes), [f.message for f in report.findings if not f.passed]
    assert not report.passed
    assert len(report.findings) == len(exercise.CHECKS)
    for finding in report.findings:
        if finding.passed:
            continue
        assert finding.message
        for text in number_texts(finding.expected) + number_texts(finding.actual):
            assert text in finding.message, (text, finding.message)
        assert finding.hint.startswith("The exercise")


def finding(report, code):
    (found,) = [f for f in report.findings if f.code == code]
    return found


def test_accumulated_gradients_say_the_worked_examples_0_8_not_0_64():
    found = finding(core.check_training_step(accumulated_with_vmap), "accumulated_gradients")
    assert found.expected == pytest.approx(0.64) and found.actual == pytest.approx(0.8)
    assert "returns 0.8; the sequential updates give 0.64" in found.message
    assert "Adding both gradients at w = 0 would give 0.8 instead." in found.hint


def test_order_and_off_by_one_name_the_rows_used():
    assert "rows 2, 1, 0" in finding(core.check_training_step(reversed_scan), "wrong_order").message
    assert "rows 2, 0, 1" in finding(core.check_training_step(shuffled_batches), "wrong_order").message
    found = finding(core.check_training_step(fori_loop_one_step_too_many), "off_by_one")
    assert "4 steps on rows 0, 1, 2, 2 give, instead of 3 steps on rows 0 to 2" in found.message


def test_history_message_shows_the_weights():
    found = finding(core.check_training_step(weights_of_every_step), "returns_history")
    assert "the weight after every step" in found.message and len(found.actual) == 3
    assert found.actual[-1] == pytest.approx(found.expected, rel=1e-5)
    found = finding(core.check_training_step(whole_scan_result), "returns_history")
    assert "(final carry, per-step outputs)" in found.message and ", None)" in found.actual


def test_exception_names_the_learners_line_not_jax_internals():
    report = core.check_training_step(forgets_to_unpack)
    found = report.findings[0]
    assert found.code == "error"
    assert "TypeError at line" in found.message
    assert "of step() in scan_step_learners.py: `new_w = w - lr * grad(w, batch)`" in found.message
    assert "missing 1 required positional argument: 'y'" in found.message
    assert "jax/_src" not in found.message and "site-packages" not in found.message
    assert len(found.message) < 600
    assert found.message.startswith("On the worked example (w = 0, lr = 0.1,")
    # Said once: the checks after it are not run, and say so instead of repeating it.
    for later, check in zip(report.findings[1:], exercise.CHECKS[1:], strict=True):
        assert later.code == check and not later.passed
        assert later.message.startswith("Not run: your function raised an error in the numbers check")
        assert "TypeError" not in later.message and later.hint


def keepdims_carry(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * jnp.sum(2 * (w * x - y) * x, keepdims=True), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def test_a_jax_error_keeps_the_lines_that_say_how_and_its_usual_causes():
    found = core.check_training_step(keepdims_carry).findings[0]
    assert found.code == "error"
    assert "has type float32[] but the corresponding output carry component has type float32[1]" in (
        found.message
    )
    assert "keepdims=True" in found.message and "https://" not in found.message


def test_static_lr_says_why_and_host_sync_is_told_apart():
    found = finding(core.check_training_step(checks_lr_is_positive), "static_lr")
    assert "TracerBoolConversionError at line" in found.message and "`if lr <= 0:`" in found.message
    assert "With lr a fixed number (lr = 0.125) it runs" in found.message
    found = finding(core.check_training_step(static_lr_for_numbers), "static_lr")
    assert "traces or compiles again for every new lr value" in found.message
    assert found.expected == 0 and found.actual >= 1
    report = core.check_training_step(stops_early)
    found = finding(report, "host_sync")
    assert "ConcretizationTypeError at line" in found.message and "float(g)" in found.message
    assert finding(report, "loop").message.startswith("Not judged")


def test_not_scan_is_reported_only_when_the_numbers_are_right():
    report = core.check_training_step(first_row_python_loop)
    assert report.mistakes == {"reused_first_row"}
    assert finding(report, "loop").message.startswith("Not judged until the final weights are right.")
    found = finding(core.check_training_step(python_loop_in_jit), "not_scan")
    assert "grows with N" in found.message and found.actual > found.expected
    found = finding(core.check_training_step(while_loop), "not_scan")
    assert "lax.while_loop" in found.message


def test_unexplained_numbers_fail_without_a_public_code():
    def swaps_x_and_y(w, lr, x_batches, y_batches):
        return seed_closure(w, lr, y_batches, x_batches)

    report = core.check_training_step(swaps_x_and_y)
    assert not report.passed and report.mistakes == frozenset()
    assert report.findings[0].code == exercise.WRONG_RESULT
    assert "No single known mistake gives this" in report.findings[0].message

    def forgets_the_carry(w, lr, x_batches, y_batches):
        lax.scan(lambda c, b: (c - lr * grad(c, *b), None), w, (x_batches, y_batches))
        return w

    found = core.check_training_step(forgets_the_carry).findings[0]
    assert found.code == exercise.WRONG_RESULT and "is the initial weight w = 0" in found.message

    def forgets_to_return(w, lr, x_batches, y_batches):
        final_w, _ = lax.scan(lambda c, b: (c - lr * grad(c, *b), None), w, (x_batches, y_batches))

    report = core.check_training_step(forgets_to_return)
    assert not report.passed and report.mistakes == frozenset()
    assert "returns None (is its return statement missing?)" in report.findings[0].message
    assert report.findings[1].message.startswith("Not judged")


def test_infinite_loop_reports_too_slow_once_and_the_process_stays_usable():
    start = time.perf_counter()
    report = core.check_training_step(forgets_to_count, timeout=1)
    # One time limit, not one per check: the others are not run.
    assert time.perf_counter() - start < 3
    assert report.mistakes == {"error"}
    assert report.findings[0].code == "error"
    assert report.findings[0].message.startswith("too slow: did not return within 1 s")
    assert [f.code for f in report.findings[1:]] == list(exercise.CHECKS[1:])
    assert all(
        f.message == "Not run: the numbers check ran out of time; every other check calls the same function."
        for f in report.findings[1:]
    )
    deadline = time.monotonic() + 10
    while any(t.name.startswith("scanlab-check") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a stuck check thread was not interrupted"
        time.sleep(0.05)
    assert core.check_training_step(seed_closure).passed


def swallows_the_first_interrupt(w, lr, x_batches, y_batches):
    try:
        while True:
            pass
    except BaseException:  # a learner's catch-all: it also turns the check's tracing off
        pass
    while True:
        pass


def test_a_loop_that_swallows_the_interrupt_is_still_stopped():
    report = core.check_training_step(swallows_the_first_interrupt, timeout=1)
    assert report.mistakes == {"error"}
    deadline = time.monotonic() + 15
    while any(t.name.startswith("scanlab-check") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the watchdog did not stop an untraced loop"
        time.sleep(0.05)


STARVED = """
import time
import core
from harness.support.scan_step_learners import seed_closure

core.check_training_step(seed_closure)  # JAX's first compiles, outside the timed check
calls = []


def right_after_a_moment(w, lr, x_batches, y_batches):
    if not calls:
        calls.append(print("computing", flush=True))
        began = time.thread_time()
        while time.thread_time() - began < 0.2:
            pass
    return seed_closure(w, lr, x_batches, y_batches)


report = core.check_training_step(right_after_a_moment, timeout=TIMEOUT)
print(report.passed, report.findings[0].message, flush=True)
"""


def test_a_check_the_machine_starved_of_cpu_is_judged_not_timed_out():
    """A busy machine (here: the checking process stopped for longer than the time limit while the
    function computes) stretches a check's wall time, not the CPU it needs: the verdict is the
    function's, not "too slow" (the class report's workers run at nice 10 beside a class)."""
    timeout = 3
    script = STARVED.replace("TIMEOUT", str(timeout))
    with subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    ) as child:  # fmt: skip
        try:
            assert child.stdout.readline() == "computing\n"
            child.send_signal(signal.SIGSTOP)
            time.sleep(timeout + 0.5)  # past the time limit, with no CPU given
            child.send_signal(signal.SIGCONT)
            said = child.stdout.read()
        finally:
            child.kill()
    assert said.startswith("True "), said


def sleeps(w, lr, x_batches, y_batches):
    for _ in range(600):  # waits without computing (no CPU), a line at a time: stopped at its limit
        time.sleep(0.1)
    return w


def test_a_function_that_waits_without_computing_is_stopped_at_the_stretched_limit():
    began = time.monotonic()
    report = core.check_training_step(sleeps, timeout=0.5)
    waited = time.monotonic() - began
    assert report.mistakes == {"error"}
    assert report.findings[0].message.startswith("too slow: did not return within 0.5 s")
    assert sandbox.STRETCH * 0.5 <= waited < 30, waited
    deadline = time.monotonic() + 10
    while any(t.name.startswith("scanlab-check") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the sleeping check's thread was not stopped"
        time.sleep(0.05)


def test_the_designed_cases_tell_every_pattern_apart():
    outcomes = [scan_step._outcomes(case) for case in scan_step._CASES]
    seed, rows, single, wide, large = outcomes
    assert seed["correct"][0][0] == pytest.approx(0.64) and seed["accumulated_gradients"][0][0] == 0.8

    def gap(a, b):
        return abs(a - b) / max(1, abs(a), abs(b))

    # On the distinct batches every model of every pattern of the first issue is 4 % or more from
    # every other pattern's.
    first = ("correct", *scan_step._NUMERIC_CODES[:7], *scan_step._SLIPS)
    values = [(p, v) for p, models in rows.items() if p in first for v, _ in models]
    assert min(gap(a, b) for p, a in values for q, b in values if p != q) > 0.04
    # Every pair of patterns, the later ones included, is 4 % apart or more on the distinct
    # batches, on the two batches of three or on the large values (lr 0.001 against an unchanged
    # weight: under 3 % apart on the others).
    for i, p in enumerate(scan_step._PATTERNS):
        for q in scan_step._PATTERNS[i + 1 :]:
            assert any(
                min(gap(a, b) for a, _ in found[p] for b, _ in found[q]) > 0.04
                for found in (rows, wide, large)
                if found[p] and found[q]
            ), (p, q)
    # A learner making one mistake is diagnosed as that mistake, whichever of its models it matches.
    for pattern in scan_step._PATTERNS[1:]:
        for k in (1, 3, 4):
            for value, _ in outcomes[k][pattern]:
                around = [(models[pattern] or models["correct"])[0][0] for models in outcomes]
                around[k] = value
                found = reading.diagnose(outcomes, around, scan_step._PATTERNS)[0]
                assert found == pattern, (pattern, k, value)
    # A learner who writes one constant for the carry, or one number for lr, gives that model on
    # every case and the right weight where the constant is the case's w or the number its lr
    # (carry from 1.0 is right on the distinct batches, lr 0.125 on them and on one batch): named
    # all the same, by the cases where it differs. Likewise for every pattern whose models say the
    # same thing on every case (row lists, as in wrong_order, name other rows on other cases).
    carries = {label for _, label in rows["carry_from_constant"] + wide["carry_from_constant"]}
    assert carries == {"0", "1", "0.5", "-1", "2"}
    rates = {label for _, label in seed["lr_ignored"] + wide["lr_ignored"]}
    assert rates == {"0.1", "0.125", "0.01", "0.05", "0.001"}
    for pattern in scan_step._PATTERNS[1:]:
        if pattern in ("wrong_order", "off_by_one"):
            continue
        for label in {label for models in outcomes for _, label in models[pattern]}:
            learner = [
                next((v for v, said in models[pattern] if said == label), models["correct"][0][0])
                for models in outcomes
            ]
            found = reading.diagnose(outcomes, learner, scan_step._PATTERNS)[0]
            assert found == pattern, (pattern, label, learner)


def test_bad_use_of_the_checker():
    with pytest.raises(TypeError, match="fn must be callable"):
        core.check_training_step(0.64)
    for timeout in (0, -1, math.nan, math.inf, True, "10", None):
        with pytest.raises(ValueError, match="timeout must be a finite positive number"):
            core.check_training_step(seed_closure, timeout=timeout)
