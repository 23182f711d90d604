"""The learners' scan_training_step(w, lr, x_batches, y_batches) that check_training_step is run on:
RIGHT, right answers in several styles (the seed's closure over lr, lr in the carry, fori_loop, a scan
over indices), and WRONG, one function for each mistake the checker names with the codes it must
get (a Python loop inside jit or around a jitted step, plain NumPy, ...), and forgets_to_count, which
never returns. tests/test_core_exercise.py runs them; harness/support/catalogues.py gathers them.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import core


def loss(w, x, y):
    error = w * x - y
    squares = error**2
    return squares.sum()


grad = jax.grad(loss)


# --- right --------------------------------------------------------------------------------------


def seed_closure(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        g = grad(w, x, y)
        new_w = w - lr * g
        return new_w, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def lr_in_carry(w, lr, x_batches, y_batches):
    def step(carry, batch):
        w, lr = carry
        x, y = batch
        gradient = 2 * jnp.sum((w * x - y) * x)
        return (w - lr * gradient, lr), None

    (final_w, _), _ = lax.scan(step, (w, lr), (x_batches, y_batches))
    return final_w


@jax.jit
def jitted_fori_loop(w, lr, x_batches, y_batches):
    def body(i, w):
        return w - lr * grad(w, x_batches[i], y_batches[i])

    return lax.fori_loop(0, x_batches.shape[0], body, w)


@jax.jit
def scan_over_indices(w, lr, x_batches, y_batches):
    def step(w, i):
        return w - lr * grad(w, x_batches[i], y_batches[i]), None

    w, _ = lax.scan(step, w, jnp.arange(x_batches.shape[0]))
    return w


# --- wrong: the numbers -------------------------------------------------------------------------


def accumulated_with_vmap(w, lr, x_batches, y_batches):
    grads = jax.vmap(grad, in_axes=(None, 0, 0))(w, x_batches, y_batches)
    return w - lr * grads.sum()


def accumulated_in_scan(w, lr, x_batches, y_batches):
    def step(total, batch):
        x, y = batch
        return total + grad(w, x, y), None

    total, _ = lax.scan(step, jnp.zeros_like(w), (x_batches, y_batches))
    return w - lr * total


def first_row_python_loop(w, lr, x_batches, y_batches):
    for i in range(len(x_batches)):  # noqa: B007 - the mistake: x_batches[0], not x_batches[i]
        w = w - lr * grad(w, x_batches[0], y_batches[0])
    return w


def first_row_scan_without_xs(w, lr, x_batches, y_batches):
    def step(w, _):
        x, y = x_batches[0], y_batches[0]
        return w - lr * grad(w, x, y), None

    final_w, _ = lax.scan(step, w, None, length=x_batches.shape[0])
    return final_w


def reversed_scan(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * grad(w, x, y), None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches), reverse=True)
    return final_w


def shuffled_batches(w, lr, x_batches, y_batches):
    order = jax.random.permutation(jax.random.key(1), x_batches.shape[0])

    def step(w, batch):
        x, y = batch
        return w - lr * grad(w, x, y), None

    final_w, _ = lax.scan(step, w, (x_batches[order], y_batches[order]))
    return final_w


@jax.jit
def skips_first_row_in_jit(w, lr, x_batches, y_batches):
    for i in range(1, x_batches.shape[0]):
        w = w - lr * grad(w, x_batches[i], y_batches[i])
    return w


def fori_loop_one_step_too_many(w, lr, x_batches, y_batches):
    def body(i, w):
        return w - lr * grad(w, x_batches[i], y_batches[i])

    return lax.fori_loop(0, x_batches.shape[0] + 1, body, w)


def mean_loss(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        g = jax.grad(lambda w: jnp.mean((w * x - y) ** 2))(w)
        return w - lr * g, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def no_factor_two(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        gradient = jnp.sum((w * x - y) * x)
        return w - lr * gradient, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def gradient_ascent(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w + lr * grad(w, x, y), None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


# --- wrong: what comes back ---------------------------------------------------------------------


def weights_of_every_step(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        new_w = w - lr * grad(w, x, y)
        return new_w, new_w

    _, weights = lax.scan(step, w, (x_batches, y_batches))
    return weights


def whole_scan_result(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * grad(w, x, y), None

    return lax.scan(step, w, (x_batches, y_batches))


def python_list_of_weights(w, lr, x_batches, y_batches):
    weights = [w]
    for x, y in zip(x_batches, y_batches, strict=True):
        w = w - lr * grad(w, x, y)
        weights.append(w)
    return jnp.stack(weights)


def carry_as_python_float(w, lr, x_batches, y_batches):
    w = jnp.asarray(w, dtype=float)

    def step(w, batch):
        x, y = batch
        return w - lr * grad(w, x, y), None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def returns_float(w, lr, x_batches, y_batches):
    final_w, _ = lax.scan(lambda w, b: (w - lr * grad(w, *b), None), w, (x_batches, y_batches))
    return float(final_w)


def numpy_float64_loop(w, lr, x_batches, y_batches):
    w = float(w)
    xs = np.asarray(x_batches, dtype=np.float64)
    ys = np.asarray(y_batches, dtype=np.float64)
    for x, y in zip(xs, ys, strict=True):
        gradient = 2 * np.sum((w * x - y) * x)
        w = w - lr * gradient
    return w


# --- wrong: jit, scan and the host --------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=1)
def lr_static_argnum(w, lr, x_batches, y_batches):
    return seed_closure(w, lr, x_batches, y_batches)


def checks_lr_is_positive(w, lr, x_batches, y_batches):
    if lr <= 0:
        raise ValueError("the learning rate must be positive")
    return seed_closure(w, lr, x_batches, y_batches)


def lr_made_a_float(w, lr, x_batches, y_batches):
    lr = float(lr)
    return lr_in_carry(w, lr, x_batches, y_batches)


def static_lr_for_numbers(w, lr, x_batches, y_batches):
    if isinstance(lr, (int, float)):  # a number is hashable: one compiled program per lr value
        return lr_static_argnum(w, lr, x_batches, y_batches)
    return seed_closure(w, lr, x_batches, y_batches)


@jax.jit
def python_loop_in_jit(w, lr, x_batches, y_batches):
    for i in range(x_batches.shape[0]):
        w = w - lr * grad(w, x_batches[i], y_batches[i])
    return w


@jax.jit
def jitted_step(w, lr, x, y):
    return w - lr * grad(w, x, y)


def python_loop_around_jitted_step(w, lr, x_batches, y_batches):
    for x, y in zip(x_batches, y_batches, strict=True):
        w = jitted_step(w, lr, x, y)
    return w


def while_loop(w, lr, x_batches, y_batches):
    def cond(state):
        i, _ = state
        return i < x_batches.shape[0]

    def body(state):
        i, w = state
        return i + 1, w - lr * grad(w, x_batches[i], y_batches[i])

    _, final_w = lax.while_loop(cond, body, (0, w))
    return final_w


def stops_early(w, lr, x_batches, y_batches):
    for x, y in zip(x_batches, y_batches, strict=True):
        g = grad(w, x, y)
        if abs(float(g)) < 1e-12:
            break
        w = w - lr * g
    return w


def prints_in_the_body(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        new_w = w - lr * grad(w, x, y)
        print("w =", float(new_w))
        return new_w, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


# --- wrong: raises, or never returns ------------------------------------------------------------


def forgets_to_unpack(w, lr, x_batches, y_batches):
    def step(w, batch):
        new_w = w - lr * grad(w, batch)
        return new_w, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def body_returns_only_the_weight(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * grad(w, x, y)

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def forgets_to_count(w, lr, x_batches, y_batches):
    i = 0
    while i < x_batches.shape[0]:
        w = w - lr * grad(w, x_batches[i], y_batches[i])
    return w


RIGHT = {
    "seed's closure over lr": seed_closure,
    "lr in the carry": lr_in_carry,
    "jitted fori_loop": jitted_fori_loop,
    "jitted scan over indices": scan_over_indices,
    "core.scan_training_step": core.scan_training_step,
}

WRONG = {
    "vmap of gradients at w": (accumulated_with_vmap, {"accumulated_gradients"}),
    "gradients summed in a scan": (accumulated_in_scan, {"accumulated_gradients"}),
    "x_batches[0] in a Python loop": (first_row_python_loop, {"reused_first_row"}),
    "scan without xs": (first_row_scan_without_xs, {"reused_first_row"}),
    "reverse=True": (reversed_scan, {"wrong_order"}),
    "shuffled batches": (shuffled_batches, {"wrong_order"}),
    "range(1, N) in jit": (skips_first_row_in_jit, {"off_by_one"}),
    "fori_loop to N + 1": (fori_loop_one_step_too_many, {"off_by_one"}),
    "weights of every step": (weights_of_every_step, {"returns_history"}),
    "whole scan result": (whole_scan_result, {"returns_history"}),
    "Python list of weights": (python_list_of_weights, {"returns_history", "not_scan"}),
    "mean loss": (mean_loss, {"mean_not_sum"}),
    "no factor 2": (no_factor_two, {"missing_factor_two"}),
    "gradient ascent": (gradient_ascent, {"wrong_sign"}),
    "dtype=float carry": (carry_as_python_float, {"dtype_changed"}),
    "returns float()": (returns_float, {"dtype_changed", "host_sync"}),
    "NumPy float64 loop": (numpy_float64_loop, {"dtype_changed", "host_sync"}),
    "static_argnums=1": (lr_static_argnum, {"static_lr"}),
    "if lr <= 0": (checks_lr_is_positive, {"static_lr"}),
    "float(lr)": (lr_made_a_float, {"static_lr"}),
    "static lr for numbers": (static_lr_for_numbers, {"static_lr"}),
    "Python loop in jit": (python_loop_in_jit, {"not_scan"}),
    "Python loop around a jitted step": (python_loop_around_jitted_step, {"not_scan"}),
    "while_loop": (while_loop, {"not_scan"}),
    "early stop on float(g)": (stops_early, {"host_sync"}),
    "float() in the body": (prints_in_the_body, {"host_sync"}),
    "batch not unpacked": (forgets_to_unpack, {"error"}),
    "body returns no pair": (body_returns_only_the_weight, {"error"}),
}
