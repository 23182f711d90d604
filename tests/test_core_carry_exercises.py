"""check_momentum_step and check_scheduled_step against learners' functions, right and wrong.

Each function below is written as a learner would write it; each must get exactly its codes, and
every failing finding must print the numbers it compares.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax import lax

import core
from core.exercises import carry


def grad(w, x, y):
    return 2 * jnp.sum((w * x - y) * x)


# --- the momentum exercise: right ----------------------------------------------------------------


def momentum_right(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        x, y = batch
        trace = grad(w, x, y) + momentum * trace
        return (w - lr * trace, trace), None

    (final_w, _), _ = lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))
    return final_w


def momentum_with_optax(w, lr, momentum, x_batches, y_batches):
    optimizer = optax.sgd(lr, momentum=momentum)

    def step(carry, batch):
        w, state = carry
        updates, state = optimizer.update(
            jax.grad(lambda w: jnp.sum((w * batch[0] - batch[1]) ** 2))(w), state
        )
        return (optax.apply_updates(w, updates), state), None

    (final_w, _), _ = lax.scan(step, (w, optimizer.init(w)), (x_batches, y_batches))
    return final_w


# --- the momentum exercise: wrong ----------------------------------------------------------------


def momentum_state_not_carried(w, lr, momentum, x_batches, y_batches):
    def step(w, batch):
        trace = jnp.zeros_like(w)
        trace = grad(w, *batch) + momentum * trace
        return w - lr * trace, None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def momentum_on_the_trace_of_w(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + momentum * w
        return (w - lr * trace, trace), None

    return lax.scan(step, (w, 0.0 * w), (x_batches, y_batches))[0][0]


def momentum_decays_the_weight(w, lr, momentum, x_batches, y_batches):
    def step(w, batch):
        return momentum * w - lr * grad(w, *batch), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def momentum_trace_after_use(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        new_w = w - lr * trace
        return (new_w, grad(w, *batch) + momentum * trace), None

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0][0]


def momentum_returns_carry(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + momentum * trace
        return (w - lr * trace, trace), None

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0]


def momentum_returns_history(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + momentum * trace
        return (w - lr * trace, trace), w - lr * trace

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[1]


def momentum_python_loop(w, lr, momentum, x_batches, y_batches):
    trace = jnp.zeros_like(w)
    for x, y in zip(x_batches, y_batches, strict=True):
        trace = grad(w, x, y) + momentum * trace
        w = w - lr * trace
    return w


def momentum_float_of_momentum(w, lr, momentum, x_batches, y_batches):
    decay = float(momentum)  # fine eagerly, fails under jit

    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + decay * trace
        return (w - lr * trace, trace), None

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0][0]


MOMENTUM = {
    momentum_right: set(),
    momentum_with_optax: set(),
    momentum_state_not_carried: {"state_not_carried"},
    momentum_on_the_trace_of_w: {"momentum_on_weight"},
    momentum_decays_the_weight: {"momentum_on_weight"},
    momentum_trace_after_use: {"trace_after_use"},
    momentum_returns_carry: {"returns_carry"},
    momentum_returns_history: {"returns_history"},
    momentum_python_loop: {"not_scan"},
    momentum_float_of_momentum: {"host_sync"},
}


# --- the schedule exercise ------------------------------------------------------------------------


def schedule_right(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - lr * grad(w, x, y), None

    final_w, _ = lax.scan(step, w, (lr_schedule, x_batches, y_batches))
    return final_w


def schedule_by_step_count(w, lr_schedule, x_batches, y_batches):
    def step(carry, batch):
        w, k = carry
        return (w - lr_schedule[k] * grad(w, *batch), k + 1), None

    return lax.scan(step, (w, 0), (x_batches, y_batches))[0][0]


def schedule_python_counter(w, lr_schedule, x_batches, y_batches):
    i = 0

    def step(w, batch):
        nonlocal i
        lr = lr_schedule[i]
        i += 1
        return w - lr * grad(w, *batch), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def schedule_shifted(w, lr_schedule, x_batches, y_batches):
    def step(carry, batch):
        w, k = carry
        return (w - lr_schedule[k + 1] * grad(w, *batch), k + 1), None  # clamps at the end

    return lax.scan(step, (w, 0), (x_batches, y_batches))[0][0]


def schedule_rolled(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - lr * grad(w, x, y), None

    return lax.scan(step, w, (jnp.roll(lr_schedule, 1), x_batches, y_batches))[0]


def schedule_reversed(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - lr * grad(w, x, y), None

    return lax.scan(step, w, (lr_schedule[::-1], x_batches, y_batches))[0]


def schedule_scan_backwards(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - lr * grad(w, x, y), None

    return lax.scan(step, w, (lr_schedule, x_batches, y_batches), reverse=True)[0]


def schedule_returns_scan_pair(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - lr * grad(w, x, y), None

    return lax.scan(step, w, (lr_schedule, x_batches, y_batches))


def schedule_python_loop(w, lr_schedule, x_batches, y_batches):
    for lr, x, y in zip(lr_schedule, x_batches, y_batches, strict=True):
        w = w - lr * grad(w, x, y)
    return w


SCHEDULE = {
    schedule_right: set(),
    schedule_by_step_count: set(),
    schedule_python_counter: {"schedule_closed_over"},
    schedule_shifted: {"schedule_off_by_one"},
    schedule_rolled: {"schedule_off_by_one"},
    schedule_reversed: {"schedule_wrong_order"},
    schedule_scan_backwards: {"schedule_wrong_order"},
    schedule_returns_scan_pair: {"returns_history"},
    schedule_python_loop: {"not_scan"},
}


def _assert_report(report, codes, mistakes):
    assert report.mistakes == codes, [f.message for f in report.findings if not f.passed]
    assert report.passed == (not codes)
    assert len(report.findings) == len(core.CARRY_CHECKS)
    assert all(
        f.code == check for f, check in zip(report.findings, core.CARRY_CHECKS, strict=True) if f.passed
    )
    assert codes <= set(mistakes)
    for finding in report.findings:
        if not finding.passed:
            assert finding.hint
            if finding.code in codes - {"not_scan", "host_sync", "error"}:
                assert finding.expected is not None and finding.actual is not None, finding


@pytest.mark.parametrize("fn", list(MOMENTUM), ids=lambda fn: fn.__name__)
def test_each_momentum_step_gets_exactly_its_mistakes(fn):
    _assert_report(core.check_momentum_step(fn), MOMENTUM[fn], core.MOMENTUM_MISTAKES)


@pytest.mark.parametrize("fn", list(SCHEDULE), ids=lambda fn: fn.__name__)
def test_each_scheduled_step_gets_exactly_its_mistakes(fn):
    _assert_report(core.check_scheduled_step(fn), SCHEDULE[fn], core.SCHEDULE_MISTAKES)


def test_the_messages_say_what_the_mistake_did_with_the_numbers():
    finding = core.check_momentum_step(momentum_state_not_carried).findings[0]
    assert "plain gradient descent" in finding.message and "-1.24048" in finding.message
    finding = core.check_momentum_step(momentum_decays_the_weight).findings[0]
    assert "new_w = momentum * w - lr * gradient" in finding.message
    finding = core.check_scheduled_step(schedule_python_counter).findings[0]
    assert "lr 0.25 with batch 0, lr 0.25 with batch 1, lr 0.25 with batch 2" in finding.message
    finding = core.check_scheduled_step(schedule_reversed).findings[0]
    assert "lr 0.0625 with batch 0" in finding.message


def test_the_worked_examples_give_the_lessons_numbers():
    worked = carry.MOMENTUM_CASES[0].outcomes()
    assert worked["correct"][0][0] == pytest.approx(1.54)
    assert worked["state_not_carried"][0][0] == pytest.approx(0.784)
    worked = carry.SCHEDULE_CASES[0].outcomes()
    assert worked["correct"][0][0] == pytest.approx(0.52)
    assert worked["schedule_closed_over"][0][0] == pytest.approx(0.64)


@pytest.mark.parametrize("cases", ["MOMENTUM_CASES", "SCHEDULE_CASES"])
def test_the_designed_cases_tell_every_pattern_apart(cases):
    # On some case each pair of patterns' models is 2 % or more apart, so one mistake is never
    # taken for another, and every mistake moves the distinct batches' weight off the right one.
    outcomes = [case.outcomes() for case in getattr(carry, cases)]
    patterns = list(outcomes[0])
    for p in patterns:
        for q in patterns:
            if p < q:
                assert any(
                    min(abs(a - b) / max(1, abs(a), abs(b)) for a, _ in found[p] for b, _ in found[q]) > 0.02
                    for found in outcomes
                    if found[p] and found[q]
                ), (p, q)
    right = outcomes[1]["correct"][0][0]
    assert all(abs(v - right) > 0.02 for p in patterns[1:] for v, _ in outcomes[1][p])


def test_the_models_agree_with_optax_and_the_engine():
    # The float64 models written in the checker against Optax in a Python loop (momentum) and
    # core.optimizer_history (a schedule), each in float64.
    with jax.enable_x64(True):
        for case in carry.MOMENTUM_CASES:
            optimizer = optax.sgd(case.lr, momentum=case.momentum)
            w = jnp.float64(case.w)
            state = optimizer.init(w)
            for x, y in zip(case.x, case.y, strict=True):
                updates, state = optimizer.update(grad(w, x, y), state)
                w = optax.apply_updates(w, updates)
            assert float(w) == pytest.approx(case.outcomes()["correct"][0][0], rel=1e-12)
        for case in carry.SCHEDULE_CASES:
            history = core.optimizer_history(
                np.float64(case.w), 0.1, case.x, case.y, lr_schedule=np.array(case.schedule)
            )
            assert float(history.weights[-1]) == pytest.approx(case.outcomes()["correct"][0][0], rel=1e-12)


def test_bad_use_of_the_checkers():
    for check, words in ((core.check_momentum_step, "momentum"), (core.check_scheduled_step, "lr_schedule")):
        with pytest.raises(TypeError, match=f"fn must be callable.*{words}"):
            check(1.54)
        with pytest.raises(ValueError, match="timeout must be a finite positive number"):
            check(momentum_right, timeout=0)
