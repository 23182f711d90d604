"""Every exercise's catalogue of learners' functions, each with the mistakes the checker must name
(each mistake at least once, right answers, wrong signatures): CATALOGUES[check] = {fn: codes},
MISTAKES[check] (what the exercise can name) and CASES, every (check, fn).

Each exercise's own catalogue is in scan_step_learners.py, carry_learners.py and pytree_learners.py
(the test_core_* module of each exercise runs it); the later issues' mistakes are in
learner_corpus.py, and the wrong signatures below.
"""

import jax.numpy as jnp
from jax import lax

import core
import harness.support.learner_corpus as corpus
from core.exercises import PYTREE_MISTAKES, check_pytree_step
from harness.support.carry_learners import MOMENTUM, SCHEDULE
from harness.support.pytree_learners import PYTREE
from harness.support.scan_step_learners import RIGHT, WRONG, forgets_to_count

__all__ = ["CASES", "CATALOGUES", "MISTAKES", "forgets_to_count"]


def step_without_momentum(w, lr, x_batches, y_batches):  # the momentum argument forgotten
    return w


def step_with_extra_argument(w, lr, momentum, x_batches, y_batches):  # one argument too many
    return w


def step_taking_one_batch(w, lr, x, y, extra):
    return w - lr * jnp.sum(x * y) * extra


def _grad(w, x, y):
    return 2 * jnp.sum((w * x - y) * x)


def schedule_returns_carry(w, lr_schedule, x_batches, y_batches):
    def step(carry, inputs):
        w, k = carry
        lr, x, y = inputs
        return (w - lr * _grad(w, x, y), k + 1), None

    return lax.scan(step, (w, 0), (lr_schedule, x_batches, y_batches))[0]


def schedule_float_of_lr(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - float(lr) * _grad(w, x, y), None

    return lax.scan(step, w, (lr_schedule, x_batches, y_batches))[0]


# Each exercise's catalogue, with the mistakes they are made to show.
CATALOGUES = {
    core.check_training_step: {
        **{fn: set() for fn in RIGHT.values()},
        **dict(WRONG.values()),
        step_with_extra_argument: {"error"},
        step_taking_one_batch: {"error"},
        # The mistakes a later issue named, one learner's function each (tests/learner_corpus.py).
        corpus.lr_applied_twice: {"lr_twice"},
        corpus.batches_transposed: {"wrong_axis"},
        corpus.full_batch_every_step: {"full_batch"},
        corpus.previous_gradient: {"stale_gradient"},
        corpus.carry_from_zero: {"carry_from_constant"},
        corpus.carry_from_literal_one: {"carry_from_constant"},
        corpus.module_learning_rate: {"lr_ignored"},
        corpus.lr_hard_coded_0125: {"lr_ignored"},
    },
    core.check_momentum_step: {
        **MOMENTUM,
        step_without_momentum: {"error"},
        corpus.momentum_as_average: {"trace_as_average"},
        corpus.momentum_optax_nesterov: {"nesterov"},
    },
    core.check_scheduled_step: {
        **SCHEDULE,
        corpus.schedule_mean_rate: {"schedule_one_rate"},
        schedule_returns_carry: {"returns_carry"},
        schedule_float_of_lr: {"host_sync"},
        step_with_extra_argument: {"error"},
    },
    check_pytree_step: {
        **PYTREE,
        corpus.pytree_returns_values: {"returns_tuple"},
        corpus.pytree_first_exercise_loss: {"b_not_updated"},
        corpus.pytree_unpacks_the_dict: {"error"},
        step_with_extra_argument: {"error"},
    },
}
MISTAKES = {
    core.check_training_step: core.MISTAKES,
    core.check_momentum_step: core.MOMENTUM_MISTAKES,
    core.check_scheduled_step: core.SCHEDULE_MISTAKES,
    check_pytree_step: PYTREE_MISTAKES,
}
CASES = [(check, fn) for check, catalogue in CATALOGUES.items() for fn in catalogue]
