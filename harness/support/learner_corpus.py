"""Learner-style functions for the four exercises, each with the mistake codes it must get.

Written as learners write them: right answers in many styles (a tuple or dict carry, fori_loop,
Optax, value_and_grad, jax.debug.print, functools.partial, jit) and every single mistake the
checker names, one per function. A few are adapted from public JAX code; their source is in a
comment. tests/test_learner_corpus.py runs each through `exercise(fn)` as the notebook does.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax


def loss(w, x, y):
    return jnp.sum((w * x - y) ** 2)


def grad(w, x, y):
    return 2 * jnp.sum((w * x - y) * x)


# --- scan_training_step(w, lr, x_batches, y_batches) -------------------------------------------


def scan_closure(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * grad(w, x, y), None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def scan_value_and_grad(w, lr, x_batches, y_batches):
    def step(w, batch):
        value, g = jax.value_and_grad(loss)(w, *batch)
        return w - lr * g, value

    final_w, _losses = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def scan_dict_carry(w, lr, x_batches, y_batches):
    def step(state, batch):
        g = jax.grad(loss)(state["w"], batch["x"], batch["y"])
        return {"w": state["w"] - lr * g}, None

    state, _ = lax.scan(step, {"w": w}, {"x": x_batches, "y": y_batches})
    return state["w"]


def scan_tuple_carry_with_count(w, lr, x_batches, y_batches):
    def step(carry, batch):
        w, k = carry
        return (w - lr * grad(w, *batch), k + 1), None

    (final_w, _), _ = lax.scan(step, (w, 0), (x_batches, y_batches))
    return final_w


def fori_loop_indexing(w, lr, x_batches, y_batches):
    def body(i, w):
        return w - lr * grad(w, x_batches[i], y_batches[i])

    return lax.fori_loop(0, x_batches.shape[0], body, w)


def scan_with_debug_print(w, lr, x_batches, y_batches):
    def step(w, batch):
        g = grad(w, *batch)
        jax.debug.print("w = {w}, gradient = {g}", w=w, g=g)
        return w - lr * g, None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def _partial_step(lr, w, batch):
    x, y = batch
    return w - lr * grad(w, x, y), None


def scan_partial_step(w, lr, x_batches, y_batches):
    return lax.scan(partial(_partial_step, lr), w, (x_batches, y_batches))[0]


@jax.jit
def jitted_scan(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches, y_batches))[0]


def optax_sgd_in_scan(w, lr, x_batches, y_batches):
    # Adapted from Optax's getting-started loop (optax.readthedocs.io, "Basic usage"):
    # updates, opt_state = optimizer.update(grads, opt_state); params = optax.apply_updates(...).
    optimizer = optax.sgd(lr)

    def step(carry, batch):
        params, opt_state = carry
        grads = jax.grad(loss)(params, *batch)
        updates, opt_state = optimizer.update(grads, opt_state)
        return (optax.apply_updates(params, updates), opt_state), None

    (params, _), _ = lax.scan(step, (w, optimizer.init(w)), (x_batches, y_batches))
    return params


def scan_over_indices(w, lr, x_batches, y_batches):
    def step(w, i):
        return w - lr * grad(w, x_batches[i], y_batches[i]), None

    return lax.scan(step, w, jnp.arange(x_batches.shape[0]))[0]


def scan_then_list_of_weights(w, lr, x_batches, y_batches):
    # The history turned into a Python list after the scan: the step is not unrolled.
    def step(w, batch):
        w = w - lr * grad(w, *batch)
        return w, w

    _, ws = lax.scan(step, w, (x_batches, y_batches))
    history = list(ws)
    return history[-1]


def scan_dot_gradient(w, lr, x_batches, y_batches):
    def step(w, xy):
        x, y = xy
        return w - lr * 2.0 * jnp.dot(w * x - y, x), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def jax101_update_in_scan(w, lr, x_batches, y_batches):
    # Adapted from the JAX 101 tutorial's linear regression
    # (jax.readthedocs.io/en/latest/jax-101/01-jax-basics.html):
    # def update(theta, x, y, lr=0.1): return theta - lr * jax.grad(loss_fn)(theta, x, y),
    # with the exercise's sum loss in place of the tutorial's mean.
    def loss_fn(theta, x, y):
        return jnp.sum(jnp.square(theta * x - y))

    def update(theta, x, y, lr=0.1):
        return theta - lr * jax.grad(loss_fn)(theta, x, y)

    return lax.scan(lambda theta, b: (update(theta, *b, lr=lr), None), w, (x_batches, y_batches))[0]


def jax101_mean_loss(w, lr, x_batches, y_batches):
    # The same tutorial's loss as written there, jnp.mean: a mean over the batch.
    def loss_fn(theta, x, y):
        return jnp.mean(jnp.square(theta * x - y))

    def update(theta, x, y, lr=0.1):
        return theta - lr * jax.grad(loss_fn)(theta, x, y)

    return lax.scan(lambda theta, b: (update(theta, *b, lr=lr), None), w, (x_batches, y_batches))[0]


LEARNING_RATE = 0.1


def module_learning_rate(w, lr, x_batches, y_batches):
    # Adapted from maurock/2D-gaussian-splatting train.py (a Haiku-example update):
    # LEARNING_RATE = 0.005 at module level, new_params = param - g * LEARNING_RATE; lr unused.
    def update(params, x, y):
        g = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda param, g: param - g * LEARNING_RATE, params, g)

    return lax.scan(lambda p, b: (update(p, *b), None), w, (x_batches, y_batches))[0]


def lr_hard_coded_001(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - 0.01 * grad(w, *b), None), w, (x_batches, y_batches))[0]


def lr_hard_coded_0125(w, lr, x_batches, y_batches):
    # The rate of the case the learner tried by hand: right where lr is 0.125, wrong elsewhere.
    return lax.scan(lambda w, b: (w - 0.125 * grad(w, *b), None), w, (x_batches, y_batches))[0]


def optax_scan(optimizer, w, x_batches, y_batches):
    """An Optax optimizer's loop as learners write it: its state carried through the scan."""

    def step(carry, batch):
        params, opt_state = carry
        updates, opt_state = optimizer.update(jax.grad(loss)(params, *batch), opt_state)
        return (optax.apply_updates(params, updates), opt_state), None

    (params, _), _ = lax.scan(step, (w, optimizer.init(w)), (x_batches, y_batches))
    return params


def optax_sgd_default_rate(w, lr, x_batches, y_batches):
    # Optax with a rate copied from a tutorial, optax.sgd(1e-3), the lr argument unused.
    return optax_scan(optax.sgd(1e-3), w, x_batches, y_batches)


def lr_applied_twice(w, lr, x_batches, y_batches):
    def step(w, batch):
        g = lr * grad(w, *batch)
        return w - lr * g, None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def lr_twice_in_helper(w, lr, x_batches, y_batches):
    def sgd_update(w, g, lr):
        return w - lr * g

    def step(w, batch):
        return sgd_update(w, lr * jax.grad(loss)(w, *batch), lr), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def batches_transposed(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches.T, y_batches.T))[0]


def columns_by_index(w, lr, x_batches, y_batches):
    def step(w, i):
        return w - lr * grad(w, x_batches[:, i], y_batches[:, i]), None

    return lax.scan(step, w, jnp.arange(min(x_batches.shape)))[0]


def full_batch_every_step(w, lr, x_batches, y_batches):
    def step(w, _):
        return w - lr * grad(w, x_batches, y_batches), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def full_batch_mean_of_batches(w, lr, x_batches, y_batches):
    def step(w, _):
        grads = jax.vmap(grad, in_axes=(None, 0, 0))(w, x_batches, y_batches)
        return w - lr * jnp.mean(grads), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def previous_gradient(w, lr, x_batches, y_batches):
    def step(carry, batch):
        w, g_previous = carry
        g = grad(w, *batch)
        return (w - lr * g_previous, g), None

    (final_w, _), _ = lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))
    return final_w


def carry_from_zero(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), jnp.zeros_like(w), (x_batches, y_batches))[0]


def carry_from_literal_zero(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), jnp.float32(0.0), (x_batches, y_batches))[0]


def carry_from_literal_one(w, lr, x_batches, y_batches):
    # lax.scan(step, 1.0, ...): a Python number as the initial carry, right only where w is 1.
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), 1.0, (x_batches, y_batches))[0]


def carry_from_ones(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), jnp.ones_like(w), (x_batches, y_batches))[0]


def carry_from_half(w, lr, x_batches, y_batches):
    def step(w, batch):
        return w - lr * jax.grad(loss)(w, *batch), None

    return lax.scan(step, jnp.full_like(w, 0.5), (x_batches, y_batches))[0]


def carry_from_minus_one(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), -jnp.ones_like(w), (x_batches, y_batches))[0]


def carry_from_two(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), jnp.float32(2.0), (x_batches, y_batches))[0]


def accumulated(w, lr, x_batches, y_batches):
    return w - lr * jnp.sum(jax.vmap(grad, in_axes=(None, 0, 0))(w, x_batches, y_batches))


def first_row_every_step(w, lr, x_batches, y_batches):
    return lax.scan(
        lambda w, _: (w - lr * grad(w, x_batches[0], y_batches[0]), None), w, None, length=len(x_batches)
    )[0]


def reverse_scan(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches, y_batches), reverse=True)[0]


def skips_first_row(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches[1:], y_batches[1:]))[0]


def returns_all_weights(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b),) * 2, w, (x_batches, y_batches))[1]


def mean_over_batch(w, lr, x_batches, y_batches):
    return lax.scan(
        lambda w, b: (w - lr * 2 * jnp.mean((w * b[0] - b[1]) * b[0]), None), w, (x_batches, y_batches)
    )[0]


def no_factor_two(w, lr, x_batches, y_batches):
    return lax.scan(
        lambda w, b: (w - lr * jnp.sum((w * b[0] - b[1]) * b[0]), None), w, (x_batches, y_batches)
    )[0]


def plus_gradient(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w + lr * grad(w, *b), None), w, (x_batches, y_batches))[0]


def float64_carry(w, lr, x_batches, y_batches):
    final_w, _ = lax.scan(
        lambda w, b: (w - lr * grad(w, *b), None), jnp.asarray(w, dtype=float), (x_batches, y_batches)
    )
    return final_w


def lr_static(w, lr, x_batches, y_batches):
    return _static_lr_scan(w, lr, x_batches, y_batches)


@partial(jax.jit, static_argnums=1)
def _static_lr_scan(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches, y_batches))[0]


@jax.jit
def python_loop_jitted(w, lr, x_batches, y_batches):
    for x, y in zip(x_batches, y_batches, strict=True):
        w = w - lr * grad(w, x, y)
    return w


def numpy_history_in_place(w, lr, x_batches, y_batches):
    weights = np.zeros(len(x_batches))
    i = 0

    def step(w, batch):
        nonlocal i
        w = w - lr * grad(w, *batch)
        weights[i] = w  # a NumPy array cannot hold a traced value
        i += 1
        return w, None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def item_in_body(w, lr, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr * grad(w, *b).item(), None), w, (x_batches, y_batches))[0]


def keepdims_gradient(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * jnp.sum(2 * (w * x - y) * x, keepdims=True), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def gradient_wrt_batch(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * jax.grad(lambda x, w: loss(w, x, y))(x, w), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def never_returns(w, lr, x_batches, y_batches):
    i = 0
    while i < len(x_batches):
        w = w - lr * grad(w, x_batches[i], y_batches[i])
    return w


SCAN_STEP = {
    scan_closure: set(),
    scan_value_and_grad: set(),
    scan_dict_carry: set(),
    scan_tuple_carry_with_count: set(),
    fori_loop_indexing: set(),
    scan_with_debug_print: set(),
    scan_partial_step: set(),
    jitted_scan: set(),
    optax_sgd_in_scan: set(),
    scan_over_indices: set(),
    scan_then_list_of_weights: set(),
    scan_dot_gradient: set(),
    jax101_update_in_scan: set(),
    jax101_mean_loss: {"mean_not_sum"},
    module_learning_rate: {"lr_ignored"},
    lr_hard_coded_001: {"lr_ignored"},
    lr_hard_coded_0125: {"lr_ignored"},
    optax_sgd_default_rate: {"lr_ignored"},
    lr_applied_twice: {"lr_twice"},
    lr_twice_in_helper: {"lr_twice"},
    batches_transposed: {"wrong_axis"},
    columns_by_index: {"wrong_axis"},
    full_batch_every_step: {"full_batch"},
    full_batch_mean_of_batches: {"full_batch"},
    previous_gradient: {"stale_gradient"},
    carry_from_zero: {"carry_from_constant"},
    carry_from_literal_zero: {"carry_from_constant"},
    carry_from_literal_one: {"carry_from_constant"},
    carry_from_ones: {"carry_from_constant"},
    carry_from_half: {"carry_from_constant"},
    carry_from_minus_one: {"carry_from_constant"},
    carry_from_two: {"carry_from_constant"},
    accumulated: {"accumulated_gradients"},
    first_row_every_step: {"reused_first_row"},
    reverse_scan: {"wrong_order"},
    skips_first_row: {"off_by_one"},
    returns_all_weights: {"returns_history"},
    mean_over_batch: {"mean_not_sum"},
    no_factor_two: {"missing_factor_two"},
    plus_gradient: {"wrong_sign"},
    float64_carry: {"dtype_changed"},
    lr_static: {"static_lr"},
    python_loop_jitted: {"not_scan"},
    numpy_history_in_place: {"host_sync"},
    item_in_body: {"host_sync"},
    keepdims_gradient: {"error"},
    gradient_wrt_batch: {"error"},
    never_returns: {"error"},
}


# --- momentum_training_step(w, lr, momentum, x_batches, y_batches) ------------------------------


def momentum_tuple_carry(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + momentum * trace
        return (w - lr * trace, trace), None

    (final_w, _), _ = lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))
    return final_w


def momentum_dict_carry(w, lr, momentum, x_batches, y_batches):
    def step(state, batch):
        g = jax.grad(loss)(state["w"], batch[0], batch[1])
        trace = g + momentum * state["trace"]
        return {"w": state["w"] - lr * trace, "trace": trace}, None

    state, _ = lax.scan(step, {"w": w, "trace": jnp.zeros_like(w)}, (x_batches, y_batches))
    return state["w"]


def momentum_optax(w, lr, momentum, x_batches, y_batches):
    # Optax's own heavy-ball momentum, its state carried through the scan.
    return optax_scan(optax.sgd(lr, momentum=momentum), w, x_batches, y_batches)


def momentum_fori_loop(w, lr, momentum, x_batches, y_batches):
    def body(i, carry):
        w, v = carry
        v = momentum * v + grad(w, x_batches[i], y_batches[i])
        return w - lr * v, v

    return lax.fori_loop(0, len(x_batches), body, (w, jnp.zeros_like(w)))[0]


@jax.jit
def momentum_jitted_value_and_grad(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        _, g = jax.value_and_grad(loss)(w, *batch)
        trace = g + momentum * trace
        return (w - lr * trace, trace), None

    return lax.scan(step, (w, 0.0 * w), (x_batches, y_batches))[0][0]


def _momentum_step(lr, momentum, carry, batch):
    w, trace = carry
    trace = grad(w, *batch) + momentum * trace
    jax.debug.print("trace {t}", t=trace)
    return (w - lr * trace, trace), None


def momentum_partial_debug(w, lr, momentum, x_batches, y_batches):
    step = partial(_momentum_step, lr, momentum)
    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0][0]


def momentum_trace_reset(w, lr, momentum, x_batches, y_batches):
    def step(w, batch):
        trace = jnp.zeros_like(w)
        trace = grad(w, *batch) + momentum * trace
        return w - lr * trace, None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def momentum_decays_weight(w, lr, momentum, x_batches, y_batches):
    return lax.scan(lambda w, b: (momentum * w - lr * grad(w, *b), None), w, (x_batches, y_batches))[0]


def momentum_steps_before_update(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        new_w = w - lr * trace
        return (new_w, grad(w, *batch) + momentum * trace), None

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0][0]


def momentum_as_average(w, lr, momentum, x_batches, y_batches):
    # The exponential moving average some libraries call momentum (and optax.ema computes).
    def step(carry, batch):
        w, m = carry
        m = momentum * m + (1 - momentum) * grad(w, *batch)
        return (w - lr * m, m), None

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0][0]


def momentum_optax_nesterov(w, lr, momentum, x_batches, y_batches):
    optimizer = optax.sgd(lr, momentum=momentum, nesterov=True)

    def step(carry, batch):
        params, opt_state = carry
        updates, opt_state = optimizer.update(jax.grad(loss)(params, *batch), opt_state)
        return (optax.apply_updates(params, updates), opt_state), None

    return lax.scan(step, (w, optimizer.init(w)), (x_batches, y_batches))[0][0]


def momentum_look_ahead(w, lr, momentum, x_batches, y_batches):
    # Sutskever et al.'s form: the gradient at the weight the trace is about to carry it to.
    def step(carry, batch):
        w, v = carry
        v = grad(w - lr * momentum * v, *batch) + momentum * v
        return (w - lr * v, v), None

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0][0]


def momentum_final_carry(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + momentum * trace
        return (w - lr * trace, trace), None

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0]


def momentum_weights_history(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + momentum * trace
        return (w - lr * trace, trace), w - lr * trace

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[1]


@jax.jit
def momentum_unrolled(w, lr, momentum, x_batches, y_batches):
    trace = jnp.zeros_like(w)
    for i in range(x_batches.shape[0]):
        trace = grad(w, x_batches[i], y_batches[i]) + momentum * trace
        w = w - lr * trace
    return w


def momentum_float_of_lr(w, lr, momentum, x_batches, y_batches):
    lr = float(lr)
    return momentum_tuple_carry(w, lr, momentum, x_batches, y_batches)


def momentum_carry_without_trace(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        trace = grad(w, *batch) + momentum * trace
        return w - lr * trace, None  # the carry was a pair

    return lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))[0]


MOMENTUM = {
    momentum_tuple_carry: set(),
    momentum_dict_carry: set(),
    momentum_optax: set(),
    momentum_fori_loop: set(),
    momentum_jitted_value_and_grad: set(),
    momentum_partial_debug: set(),
    momentum_trace_reset: {"state_not_carried"},
    momentum_decays_weight: {"momentum_on_weight"},
    momentum_steps_before_update: {"trace_after_use"},
    momentum_as_average: {"trace_as_average"},
    momentum_optax_nesterov: {"nesterov"},
    momentum_look_ahead: {"nesterov"},
    momentum_final_carry: {"returns_carry"},
    momentum_weights_history: {"returns_history"},
    momentum_unrolled: {"not_scan"},
    momentum_float_of_lr: {"host_sync"},
    momentum_carry_without_trace: {"error"},
}


# --- scheduled_training_step(w, lr_schedule, x_batches, y_batches) ------------------------------


def schedule_scanned_together(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - lr * grad(w, x, y), None

    return lax.scan(step, w, (lr_schedule, x_batches, y_batches))[0]


def schedule_by_index(w, lr_schedule, x_batches, y_batches):
    def step(w, i):
        return w - lr_schedule[i] * grad(w, x_batches[i], y_batches[i]), None

    return lax.scan(step, w, jnp.arange(len(lr_schedule)))[0]


def schedule_fori_loop(w, lr_schedule, x_batches, y_batches):
    return lax.fori_loop(
        0, len(lr_schedule), lambda i, w: w - lr_schedule[i] * grad(w, x_batches[i], y_batches[i]), w
    )


def schedule_dict_inputs(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        return w - inputs["lr"] * jax.grad(loss)(w, inputs["x"], inputs["y"]), None

    return lax.scan(step, w, {"lr": lr_schedule, "x": x_batches, "y": y_batches})[0]


@jax.jit
def schedule_jitted_counter_carry(w, lr_schedule, x_batches, y_batches):
    def step(carry, batch):
        w, k = carry
        return (w - lr_schedule[k] * grad(w, *batch), k + 1), None

    return lax.scan(step, (w, 0), (x_batches, y_batches))[0][0]


def schedule_python_counter(w, lr_schedule, x_batches, y_batches):
    count = 0

    def step(w, batch):
        nonlocal count
        lr = lr_schedule[count]
        count += 1
        return w - lr * grad(w, *batch), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def schedule_first_value(w, lr_schedule, x_batches, y_batches):
    lr = lr_schedule[0]
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches, y_batches))[0]


def schedule_mean_rate(w, lr_schedule, x_batches, y_batches):
    lr = jnp.mean(lr_schedule)
    return lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches, y_batches))[0]


def schedule_last_rate(w, lr_schedule, x_batches, y_batches):
    return lax.scan(lambda w, b: (w - lr_schedule[-1] * grad(w, *b), None), w, (x_batches, y_batches))[0]


def schedule_rolled(w, lr_schedule, x_batches, y_batches):
    return schedule_scanned_together(w, jnp.roll(lr_schedule, 1), x_batches, y_batches)


def schedule_reversed(w, lr_schedule, x_batches, y_batches):
    return schedule_scanned_together(w, lr_schedule[::-1], x_batches, y_batches)


def schedule_history(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        new_w = w - lr * grad(w, x, y)
        return new_w, new_w

    return lax.scan(step, w, (lr_schedule, x_batches, y_batches))[1]


def schedule_carry_with_step(w, lr_schedule, x_batches, y_batches):
    def step(carry, inputs):
        w, k = carry
        lr, x, y = inputs
        return (w - lr * grad(w, x, y), k + 1), None

    return lax.scan(step, (w, 0), (lr_schedule, x_batches, y_batches))[0]


@jax.jit
def schedule_unrolled(w, lr_schedule, x_batches, y_batches):
    for lr, x, y in zip(lr_schedule, x_batches, y_batches, strict=True):
        w = w - lr * grad(w, x, y)
    return w


def schedule_float_in_body(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - float(lr) * grad(w, x, y), None

    return lax.scan(step, w, (lr_schedule, x_batches, y_batches))[0]


def schedule_unpacks_two(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        x, y = inputs
        return w - grad(w, x, y), None

    return lax.scan(step, w, (lr_schedule, x_batches, y_batches))[0]


SCHEDULE = {
    schedule_scanned_together: set(),
    schedule_by_index: set(),
    schedule_fori_loop: set(),
    schedule_dict_inputs: set(),
    schedule_jitted_counter_carry: set(),
    schedule_python_counter: {"schedule_closed_over"},
    schedule_first_value: {"schedule_closed_over"},
    schedule_mean_rate: {"schedule_one_rate"},
    schedule_last_rate: {"schedule_one_rate"},
    schedule_rolled: {"schedule_off_by_one"},
    schedule_reversed: {"schedule_wrong_order"},
    schedule_history: {"returns_history"},
    schedule_carry_with_step: {"returns_carry"},
    schedule_unrolled: {"not_scan"},
    schedule_float_in_body: {"host_sync"},
    schedule_unpacks_two: {"error"},
}

# --- pytree_training_step(params, lr, x_batches, y_batches) -------------------------------------


def model_loss(params, x, y):
    return jnp.sum((params["w"] * x + params["b"] - y) ** 2)


def pytree_grad_tree_map(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    final_params, _ = lax.scan(step, params, (x_batches, y_batches))
    return final_params


def pytree_value_and_grad(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        value, grads = jax.value_and_grad(model_loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), value

    final_params, _losses = lax.scan(step, params, (x_batches, y_batches))
    return final_params


def pytree_written_out(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        error = params["w"] * x + params["b"] - y
        grads = {"w": 2 * jnp.sum(error * x), "b": 2 * jnp.sum(error)}
        return {key: params[key] - lr * grads[key] for key in params}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_tree_util(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, batch[0], batch[1])
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_optax_sgd(params, lr, x_batches, y_batches):
    # Optax's own loop on the dict: optax.sgd's update is -lr * g for every leaf.
    optimizer = optax.sgd(lr)

    def step(carry, batch):
        params, opt_state = carry
        updates, opt_state = optimizer.update(jax.grad(model_loss)(params, *batch), opt_state)
        return (optax.apply_updates(params, updates), opt_state), None

    (params, _), _ = lax.scan(step, (params, optimizer.init(params)), (x_batches, y_batches))
    return params


def pytree_fori_loop(params, lr, x_batches, y_batches):
    def body(i, params):
        grads = jax.grad(model_loss)(params, x_batches[i], y_batches[i])
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    return lax.fori_loop(0, x_batches.shape[0], body, params)


@jax.jit
def pytree_jitted_tuple_inside(params, lr, x_batches, y_batches):
    # A (w, b) tuple inside the scan, the dict rebuilt at the end: what is returned is the dict.
    def step(carry, batch):
        w, b = carry
        error = w * batch[0] + b - batch[1]
        return (w - lr * 2 * jnp.sum(error * batch[0]), b - lr * 2 * jnp.sum(error)), None

    (w, b), _ = lax.scan(step, (params["w"], params["b"]), (x_batches, y_batches))
    return {"w": w, "b": b}


def pytree_only_w_updated(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return {"w": params["w"] - lr * grads["w"], "b": params["b"]}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_first_exercise_loss(params, lr, x_batches, y_batches):
    # The first exercise's gradient reused: b is neither in the loss nor updated.
    def step(params, batch):
        return {"w": params["w"] - lr * grad(params["w"], *batch), "b": params["b"]}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_w_then_b(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        w = params["w"] - lr * jax.grad(model_loss)(params, x, y)["w"]
        b = params["b"] - lr * jax.grad(model_loss)({"w": w, "b": params["b"]}, x, y)["b"]
        return {"w": w, "b": b}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_b_then_w(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        params = dict(params)
        params["b"] = params["b"] - lr * 2 * jnp.sum(params["w"] * x + params["b"] - y)
        params["w"] = params["w"] - lr * 2 * jnp.sum((params["w"] * x + params["b"] - y) * x)
        return params, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_returns_w_and_b(params, lr, x_batches, y_batches):
    final_params = pytree_grad_tree_map(params, lr, x_batches, y_batches)
    return final_params["w"], final_params["b"]


def pytree_returns_values(params, lr, x_batches, y_batches):
    # The scan rebuilds the dict with its keys sorted: its values come out as (b, w).
    return tuple(pytree_grad_tree_map(params, lr, x_batches, y_batches).values())


def pytree_plus_gradient(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return jax.tree.map(lambda p, g: p + lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_trees_swapped(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return jax.tree.map(lambda p, g: p - lr * g, grads, params), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_mean_loss(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        grads = jax.grad(lambda p: jnp.mean((p["w"] * x + p["b"] - y) ** 2))(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_half_squared_error(params, lr, x_batches, y_batches):
    # The textbook's 1/2 in front of the squared error: its gradient has no factor 2.
    def half_loss(params, x, y):
        residual = params["w"] * x + params["b"] - y
        return jnp.sum(residual**2) / 2

    def step(params, batch):
        grads = jax.grad(half_loss)(params, *batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_lr_in_grad_and_update(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        grads = jax.grad(lambda p: lr * jnp.sum((p["w"] * x + p["b"] - y) ** 2))(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_mean_of_all_batches(params, lr, x_batches, y_batches):
    def all_batches_loss(p):
        return jnp.mean(jax.vmap(lambda x, y: jnp.sum((p["w"] * x + p["b"] - y) ** 2))(x_batches, y_batches))

    def step(params, batch):
        return jax.tree.map(lambda p, g: p - lr * g, params, jax.grad(all_batches_loss)(params)), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_momentum_like_lag(params, lr, x_batches, y_batches):
    def step(carry, batch):
        params, last = carry
        x, y = batch
        grads = jax.grad(lambda p: jnp.sum((p["w"] * x + p["b"] - y) ** 2))(params)
        params = {"w": params["w"] - lr * last["w"], "b": params["b"] - lr * last["b"]}
        return (params, grads), None

    start = {"w": jnp.zeros_like(params["w"]), "b": jnp.zeros_like(params["b"])}
    (final, _), _ = lax.scan(step, (params, start), (x_batches, y_batches))
    return final


def pytree_closes_over_its_argument(params, lr, x_batches, y_batches):
    def body(_, xy):
        grads = jax.grad(lambda p: jnp.sum((p["w"] * xy[0] + p["b"] - xy[1]) ** 2))(params)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(body, params, (x_batches, y_batches))[0]


def pytree_target_as_input(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        grads = jax.grad(lambda p: jnp.sum((p["w"] * y + p["b"] - x) ** 2))(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_w_with_b_gradient(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        g = jax.grad(lambda p: jnp.sum((p["w"] * x + p["b"] - y) ** 2))(params)
        return {"w": params["w"] - lr * g["b"], "b": params["b"] - lr * g["b"]}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_unpacks_values(params, lr, x_batches, y_batches):
    def step(carry, batch):
        w, b = carry.values()
        x, y = batch
        error = w * x + b - y
        return {"w": w - lr * 2 * jnp.sum(error * x), "b": b - lr * 2 * jnp.sum(error)}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_scans_columns(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        grads = jax.grad(lambda p: jnp.sum((p["w"] * x + p["b"] - y) ** 2))(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (jnp.transpose(x_batches), jnp.transpose(y_batches)))[0]


def pytree_learning_rate_constant(params, lr, x_batches, y_batches):
    learning_rate = 0.05

    def step(params, batch):
        x, y = batch
        grads = jax.grad(lambda p: jnp.sum((p["w"] * x + p["b"] - y) ** 2))(params)
        return jax.tree.map(lambda p, g: p - learning_rate * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_theta_dict(params, lr, x_batches, y_batches):
    def step(theta, batch):
        x, y = batch
        grads = jax.grad(lambda t: jnp.sum((t["slope"] * x + t["intercept"] - y) ** 2))(theta)
        return {k: theta[k] - lr * grads[k] for k in theta}, None

    theta = {"slope": params["w"], "intercept": params["b"]}
    return lax.scan(step, theta, (x_batches, y_batches))[0]


def pytree_params_of_every_step(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        new_params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
        return new_params, new_params

    return lax.scan(step, params, (x_batches, y_batches))[1]


def pytree_returns_scan_pair(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))


def pytree_python_loop(params, lr, x_batches, y_batches):
    for x, y in zip(x_batches, y_batches, strict=True):
        grads = jax.grad(model_loss)(params, x, y)
        params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return params


def pytree_float_of_lr(params, lr, x_batches, y_batches):
    return pytree_grad_tree_map(params, float(lr), x_batches, y_batches)


def pytree_unpacks_the_dict(params, lr, x_batches, y_batches):
    def step(carry, batch):
        w, b = carry  # a dict unpacks to its keys, the strings "w" and "b"
        x, y = batch
        error = w * x + b - y
        return (w - lr * 2 * jnp.sum(error * x), b - lr * 2 * jnp.sum(error)), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_optax_update_only(params, lr, x_batches, y_batches):
    # Optax inside the scan, the updates computed and never applied: the carry keeps its params.
    tx = optax.sgd(learning_rate=lr)

    def train_step(state, batch):
        params, opt_state = state
        grads = jax.grad(model_loss)(params, batch[0], batch[1])
        updates, opt_state = tx.update(grads, opt_state, params)
        return (params, opt_state), None

    state, _ = lax.scan(train_step, (params, tx.init(params)), (x_batches, y_batches))
    return state[0]


def pytree_returns_its_argument(params, lr, x_batches, y_batches):
    def step(p, batch):
        return jax.tree.map(lambda a, g: a - lr * g, p, jax.grad(model_loss)(p, *batch)), None

    trained, _ = lax.scan(step, params, (x_batches, y_batches))
    del trained
    return params


def pytree_zeros_like_start(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    init = jax.tree.map(jnp.zeros_like, params)  # "initialise the params"
    return lax.scan(step, init, (x_batches, y_batches))[0]


def make_trainer(loss_fn):
    # A factory: the function it returns has its own name, train.
    def train(params, lr, x_batches, y_batches):
        def step(params, batch):
            return jax.tree.map(lambda p, g: p - lr * g, params, jax.grad(loss_fn)(params, *batch)), None

        return lax.scan(step, params, (x_batches, y_batches))[0]

    return train


pytree_from_a_factory = make_trainer(model_loss)


def pytree_value_and_grad_has_aux(params, lr, x_batches, y_batches):
    def loss_and_residual(params, x, y):
        residual = params["w"] * x + params["b"] - y
        return jnp.sum(residual**2), residual

    def step(params, batch):
        (_, _residual), grads = jax.value_and_grad(loss_and_residual, has_aux=True)(params, *batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_step_counter_in_carry(params, lr, x_batches, y_batches):
    def step(carry, batch):
        params, k = carry
        grads = jax.grad(model_loss)(params, *batch)
        return (jax.tree.map(lambda p, g: p - lr * g, params, grads), k + 1), None

    (params, _steps), _ = lax.scan(step, (params, 0), (x_batches, y_batches))
    return params


def pytree_fori_loop_lr_squared(params, lr, x_batches, y_batches):
    def body(i, params):
        grads = jax.grad(model_loss)(params, x_batches[i], y_batches[i])
        scaled = jax.tree.map(lambda g: lr * g, grads)
        return jax.tree.map(lambda p, g: p - lr * g, params, scaled)

    return lax.fori_loop(0, x_batches.shape[0], body, params)


def pytree_optax_mean_loss(params, lr, x_batches, y_batches):
    tx = optax.sgd(lr)

    def mse(params, x, y):
        return jnp.mean((params["w"] * x + params["b"] - y) ** 2)

    def step(carry, batch):
        params, opt_state = carry
        updates, opt_state = tx.update(jax.grad(mse)(params, *batch), opt_state)
        return (optax.apply_updates(params, updates), opt_state), None

    return lax.scan(step, (params, tx.init(params)), (x_batches, y_batches))[0][0]


def pytree_tree_util_plus(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return jax.tree_util.tree_map(lambda p, g: p + lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_last_grads_in_carry(params, lr, x_batches, y_batches):
    def step(carry, batch):
        params, last_grads = carry
        loss_value, grads = jax.value_and_grad(model_loss)(params, *batch)
        new_params = jax.tree.map(lambda p, g: p - lr * g, params, last_grads)
        return (new_params, grads), loss_value

    zeros = jax.tree.map(jnp.zeros_like, params)
    (params, _), _ = lax.scan(step, (params, zeros), (x_batches, y_batches))
    return params


def pytree_fori_loop_outer_params(params, lr, x_batches, y_batches):
    def body(i, current):
        grads = jax.grad(model_loss)(params, x_batches[i], y_batches[i])  # params, not current
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    return lax.fori_loop(0, x_batches.shape[0], body, params)


@jax.jit
def pytree_jitted_all_rows(params, lr, x_batches, y_batches):
    def step(params, _batch):
        grads = jax.grad(model_loss)(params, x_batches, y_batches)  # every row, every step
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_dict_comprehension_b_twice(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(model_loss)(params, *batch)
        return {name: params[name] - lr * grads["w"] for name in ("w", "b")}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


PYTREE = {
    pytree_grad_tree_map: set(),
    pytree_value_and_grad: set(),
    pytree_written_out: set(),
    pytree_tree_util: set(),
    pytree_optax_sgd: set(),
    pytree_fori_loop: set(),
    pytree_jitted_tuple_inside: set(),
    pytree_only_w_updated: {"b_not_updated"},
    pytree_first_exercise_loss: {"b_not_updated"},
    pytree_w_then_b: {"sequential_update"},
    pytree_b_then_w: {"sequential_update"},
    pytree_returns_w_and_b: {"returns_tuple"},
    pytree_returns_values: {"returns_tuple"},
    pytree_plus_gradient: {"gradient_ascent"},
    pytree_trees_swapped: {"tree_map_swapped"},
    pytree_mean_loss: {"mean_not_sum"},
    pytree_half_squared_error: {"missing_factor_two"},
    pytree_lr_in_grad_and_update: {"lr_twice"},
    pytree_mean_of_all_batches: {"full_batch"},
    pytree_momentum_like_lag: {"stale_gradient"},
    pytree_closes_over_its_argument: {"each_step_from_initial"},
    pytree_target_as_input: {"xy_swapped"},
    pytree_w_with_b_gradient: {"wrong_leaf_gradient"},
    pytree_unpacks_values: {"values_order"},
    pytree_scans_columns: {"wrong_axis"},
    pytree_learning_rate_constant: {"lr_ignored"},
    pytree_theta_dict: {"keys_renamed"},
    pytree_params_of_every_step: {"returns_history"},
    pytree_returns_scan_pair: {"returns_history"},
    pytree_python_loop: {"not_scan"},
    pytree_float_of_lr: {"host_sync"},
    pytree_unpacks_the_dict: {"error"},
    pytree_optax_update_only: {"params_unchanged"},
    pytree_returns_its_argument: {"params_unchanged"},
    pytree_zeros_like_start: {"from_zeros"},
    pytree_from_a_factory: set(),
    pytree_value_and_grad_has_aux: set(),
    pytree_step_counter_in_carry: set(),
    pytree_fori_loop_lr_squared: {"lr_twice"},
    pytree_optax_mean_loss: {"mean_not_sum"},
    pytree_tree_util_plus: {"gradient_ascent"},
    pytree_last_grads_in_carry: {"stale_gradient"},
    pytree_fori_loop_outer_params: {"each_step_from_initial"},
    pytree_jitted_all_rows: {"full_batch"},
    pytree_dict_comprehension_b_twice: {"wrong_leaf_gradient"},
}

CORPUS = {
    "scan_training_step": SCAN_STEP,
    "momentum_training_step": MOMENTUM,
    "scheduled_training_step": SCHEDULE,
    "pytree_training_step": PYTREE,
}
"""The exercise's function name -> {learner's function: the mistake codes it must get}."""
