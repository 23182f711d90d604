"""check_momentum_step and check_scheduled_step against learners' functions, right and wrong.

The functions, MOMENTUM and SCHEDULE, are in harness/support/carry_learners.py, each written as a
learner would write it; each must get exactly its codes, and every failing finding must print the
numbers it compares.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import core
from core.exercises import carry
from harness.support.carry_learners import (
    MOMENTUM,
    SCHEDULE,
    assert_carry_report,
    grad,
    momentum_decays_the_weight,
    momentum_right,
    momentum_state_not_carried,
    schedule_python_counter,
    schedule_reversed,
)


@pytest.mark.parametrize("fn", list(MOMENTUM), ids=lambda fn: fn.__name__)
def test_each_momentum_step_gets_exactly_its_mistakes(fn):
    assert_carry_report(core.check_momentum_step(fn), MOMENTUM[fn], core.MOMENTUM_MISTAKES)


@pytest.mark.parametrize("fn", list(SCHEDULE), ids=lambda fn: fn.__name__)
def test_each_scheduled_step_gets_exactly_its_mistakes(fn):
    assert_carry_report(core.check_scheduled_step(fn), SCHEDULE[fn], core.SCHEDULE_MISTAKES)


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
