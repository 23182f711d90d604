"""The learners' functions of the two carry exercises, each with the codes it must get: MOMENTUM,
momentum_training_step(w, lr, momentum, x_batches, y_batches), and SCHEDULE,
scheduled_training_step(w, lr_schedule, x_batches, y_batches), right and wrong; and
assert_carry_report, what a report of the carry checks (core.CARRY_CHECKS, the pytree exercise's too)
must say of a function. tests/test_core_carry_exercises.py runs them; harness/support/catalogues.py
gathers them.
"""

import jax
import jax.numpy as jnp
import optax
from jax import lax

import core


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


def assert_carry_report(report, codes, mistakes):
    """A carry check's report (the momentum, schedule or pytree exercise's) names exactly `codes`,
    each one of `mistakes`, and every failed finding has a hint and, for a mistake in the numbers,
    the numbers it compares."""
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
