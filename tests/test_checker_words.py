"""No finding a learner reads names a file of the checker.

The checker tells a learner where their own code went wrong ("at line 3 of step() in
answer.py"); a frame of the checker's own code is not the learner's. This runs every exercise on
every function of its catalogue (each named mistake at least once) and on a function with the wrong
number of arguments, the case that once blamed "<lambda>() in carry_exercises.py".
"""

import inspect
import re
from pathlib import Path

import jax.numpy as jnp
import learner_corpus as corpus
import pytest
from jax import lax
from test_core_carry_exercises import MOMENTUM, SCHEDULE
from test_core_exercise import RIGHT, WRONG
from test_core_pytree_exercise import PYTREE

import core
from core.exercises import PYTREE_MISTAKES, check_pytree_step


def _checker_files() -> set[str]:
    """The names of every Python file the checker runs: the functions below and what they import
    from `core` to check (the package, the modules it uses)."""
    files = set()
    checks = (
        core.check_training_step,
        core.check_momentum_step,
        core.check_scheduled_step,
        check_pytree_step,
    )
    for check in checks:
        module = Path(inspect.getfile(inspect.unwrap(check)))
        files |= {path.name for path in module.parent.glob("*.py") if path.name != "__init__.py"}
    return files


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


@pytest.mark.parametrize("check", list(CATALOGUES), ids=lambda check: check.__name__)
def test_the_catalogues_name_every_mistake_of_every_exercise(check):
    named = {code for codes in CATALOGUES[check].values() for code in codes}
    assert named == set(MISTAKES[check])


@pytest.mark.parametrize(("check", "fn"), CASES, ids=[f"{c.__name__}-{f.__name__}" for c, f in CASES])
def test_no_finding_names_a_file_of_the_checker(check, fn):
    # A name on its own: this test's catalogues live in test_core_exercise.py, the learner's file.
    names = re.compile(r"(?<![\w/.])(" + "|".join(map(re.escape, _checker_files())) + r")\b")
    report = check(fn)
    assert report.mistakes == CATALOGUES[check][fn], report
    for finding in report.findings:
        text = " ".join(str(part) for part in finding if part is not None)
        assert not names.search(text), finding
