"""The learners' pytree_training_step(params, lr, x_batches, y_batches) that check_pytree_step is
run on, right and wrong, each with the codes it must get (PYTREE). tests/test_core_pytree_exercise.py
runs them; harness/support/catalogues.py gathers them.
"""

import jax
import jax.numpy as jnp
import optax
from jax import lax


def loss(params, x, y):
    return jnp.sum((params["w"] * x + params["b"] - y) ** 2)


def update(params, grads, lr):
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


# --- right ------------------------------------------------------------------------------------


def pytree_right(params, lr, x_batches, y_batches):
    def step(params, batch):
        x, y = batch
        return update(params, jax.grad(loss)(params, x, y), lr), None

    final_params, _ = lax.scan(step, params, (x_batches, y_batches))
    return final_params


def pytree_over_indices(params, lr, x_batches, y_batches):
    def step(params, i):
        return update(params, jax.grad(loss)(params, x_batches[i], y_batches[i]), lr), None

    return lax.scan(step, params, jnp.arange(x_batches.shape[0]))[0]


# --- wrong --------------------------------------------------------------------------------------


def pytree_b_frozen(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(loss)(params, *batch)
        return update(params, {"w": grads["w"], "b": jnp.zeros_like(grads["b"])}, lr), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_in_turn(params, lr, x_batches, y_batches):
    def step(params, batch):
        params = {**params, "w": params["w"] - lr * jax.grad(loss)(params, *batch)["w"]}
        return {**params, "b": params["b"] - lr * jax.grad(loss)(params, *batch)["b"]}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_list_out(params, lr, x_batches, y_batches):
    final_params = pytree_right(params, lr, x_batches, y_batches)
    return [final_params["w"], final_params["b"]]


def pytree_ascent(params, lr, x_batches, y_batches):
    return pytree_right(params, -lr, x_batches, y_batches)


def pytree_grads_first(params, lr, x_batches, y_batches):
    def step(params, batch):
        return jax.tree.map(lambda p, g: p - lr * g, jax.grad(loss)(params, *batch), params), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_mean(params, lr, x_batches, y_batches):
    return pytree_right(params, lr / x_batches.shape[1], x_batches, y_batches)


def pytree_half_loss(params, lr, x_batches, y_batches):  # 1/2 * sum(...): no factor 2
    def step(params, batch):
        x, y = batch
        grads = jax.grad(lambda p: 0.5 * jnp.sum((p["w"] * x + p["b"] - y) ** 2))(params)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_lr_squared(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.tree.map(lambda g: lr * g, jax.grad(loss)(params, *batch))
        return update(params, grads, lr), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_all_batches(params, lr, x_batches, y_batches):
    def step(params, batch):
        return update(params, jax.grad(loss)(params, x_batches, y_batches), lr), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_previous_grads(params, lr, x_batches, y_batches):
    def step(carry, batch):
        params, previous = carry
        grads = jax.grad(loss)(params, *batch)
        return (update(params, previous, lr), grads), None

    zeros = jax.tree.map(jnp.zeros_like, params)
    return lax.scan(step, (params, zeros), (x_batches, y_batches))[0][0]


def pytree_outer_params(params, lr, x_batches, y_batches):
    def step(carry, batch):  # reads the function's params, not its carry
        return update(params, jax.grad(loss)(params, *batch), lr), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_y_x(params, lr, x_batches, y_batches):
    def step(params, batch):
        y, x = batch
        return update(params, jax.grad(loss)(params, x, y), lr), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_b_with_w_gradient(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(loss)(params, *batch)
        return {"w": params["w"] - lr * grads["w"], "b": params["b"] - lr * grads["w"]}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_values(params, lr, x_batches, y_batches):
    def step(params, batch):
        w, b = params.values()
        x, y = batch
        gw, gb = jax.grad(lambda w, b: jnp.sum((w * x + b - y) ** 2), argnums=(0, 1))(w, b)
        return {"w": w - lr * gw, "b": b - lr * gb}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_columns(params, lr, x_batches, y_batches):
    return pytree_right(params, lr, x_batches.T, y_batches.T)


def pytree_fixed_rate(params, lr, x_batches, y_batches):
    return pytree_right(params, 0.01, x_batches, y_batches)


def pytree_named_keys(params, lr, x_batches, y_batches):
    final = pytree_right(params, lr, x_batches, y_batches)
    return {"weight": final["w"], "bias": final["b"]}


def pytree_every_step(params, lr, x_batches, y_batches):
    def step(params, batch):
        new_params = update(params, jax.grad(loss)(params, *batch), lr)
        return new_params, new_params

    return lax.scan(step, params, (x_batches, y_batches))[1]


@jax.jit
def pytree_unrolled(params, lr, x_batches, y_batches):
    for i in range(x_batches.shape[0]):
        params = update(params, jax.grad(loss)(params, x_batches[i], y_batches[i]), lr)
    return params


def pytree_item_in_body(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(loss)(params, *batch)
        return {key: params[key] - lr * grads[key].item() for key in params}, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_two_scalars(w, b, lr, x_batches, y_batches):  # the dict split into two arguments
    return {"w": w, "b": b}


def pytree_updates_not_applied(params, lr, x_batches, y_batches):  # optax.apply_updates left out
    optimizer = optax.sgd(lr)

    def step(carry, batch):
        params, opt_state = carry
        grads = jax.grad(loss)(params, *batch)
        updates, opt_state = optimizer.update(grads, opt_state)
        return (params, opt_state), None

    (final_params, _), _ = lax.scan(step, (params, optimizer.init(params)), (x_batches, y_batches))
    return final_params


def pytree_scan_result_dropped(params, lr, x_batches, y_batches):
    lax.scan(
        lambda p, batch: (update(p, jax.grad(loss)(p, *batch), lr), None), params, (x_batches, y_batches)
    )
    return params


def pytree_updated_in_place(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(loss)(params, *batch)
        new_params = params.update({k: params[k] - lr * grads[k] for k in params})  # None
        return new_params, None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_gradient_of_x(params, lr, x_batches, y_batches):
    def step(params, batch):
        grads = jax.grad(loss, argnums=1)(params, *batch)  # the gradient in x, an array like x
        return update(params, grads, lr), None

    return lax.scan(step, params, (x_batches, y_batches))[0]


def pytree_from_zeros(params, lr, x_batches, y_batches):
    return pytree_right({"w": jnp.float32(0.0), "b": jnp.float32(0.0)}, lr, x_batches, y_batches)


PYTREE = {
    pytree_right: set(),
    pytree_over_indices: set(),
    pytree_b_frozen: {"b_not_updated"},
    pytree_in_turn: {"sequential_update"},
    pytree_list_out: {"returns_tuple"},
    pytree_ascent: {"gradient_ascent"},
    pytree_grads_first: {"tree_map_swapped"},
    pytree_mean: {"mean_not_sum"},
    pytree_half_loss: {"missing_factor_two"},
    pytree_lr_squared: {"lr_twice"},
    pytree_all_batches: {"full_batch"},
    pytree_previous_grads: {"stale_gradient"},
    pytree_outer_params: {"each_step_from_initial"},
    pytree_y_x: {"xy_swapped"},
    pytree_b_with_w_gradient: {"wrong_leaf_gradient"},
    pytree_values: {"values_order"},
    pytree_columns: {"wrong_axis"},
    pytree_fixed_rate: {"lr_ignored"},
    pytree_named_keys: {"keys_renamed"},
    pytree_every_step: {"returns_history"},
    pytree_unrolled: {"not_scan"},
    pytree_item_in_body: {"host_sync"},
    pytree_two_scalars: {"error"},
    pytree_updates_not_applied: {"params_unchanged"},
    pytree_scan_result_dropped: {"params_unchanged"},
    pytree_from_zeros: {"from_zeros"},
    pytree_updated_in_place: {"error"},
    pytree_gradient_of_x: {"error"},
}
