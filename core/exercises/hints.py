"""Every hint and explanation the checker gives a learner, in one file a teacher can edit.

For each exercise: HINTS maps a mistake code to the rule of the exercise it breaks ("traced values"
says what a host_sync message calls traced, and WRONG_RESULT is the rule for numbers no known mistake
explains); EXPLANATIONS maps a pattern to what its model did, a format string completed with the
case's numbers (`{w}`, `{rows}`, ...). Every mistake code of an exercise has a hint here
(tests/test_core_exercise.py, tests/test_core_carry_exercises.py and
tests/test_core_pytree_exercise.py run each one).

A passage in double quotes is exercise.ipynb's own words, as its page shows them (code marks aside):
a learner looks for it there, so tests/test_exercise_words.py fails on a quote the notebook does not
have. Say a rule the notebook does not state in words of your own, without quotes.
"""

from __future__ import annotations

from core.exercises.report import WRONG_RESULT

# --- the first exercise: scan_training_step(w, lr, x_batches, y_batches) ---------------------------

SCAN_STEP_HINTS = {
    "accumulated_gradients": (
        "The exercise's worked example: \"The first step's gradient is -4 and gives 0.4; the second, "
        'taken at 0.4, is -2.4 and gives 0.64. Adding both gradients at w = 0 would give 0.8 instead." '
        "Make the weight the scan's carry: the body takes the gradient at the carry it receives and "
        "returns the updated weight as the next carry."
    ),
    "reused_first_row": (
        'The exercise: "Use each paired row (x_batches[i], y_batches[i]) exactly once, in order." Pass '
        "(x_batches, y_batches) as the scan's xs: the body receives (x_batches[i], y_batches[i]) at "
        "step i."
    ),
    "wrong_order": (
        'The exercise: "Use each paired row (x_batches[i], y_batches[i]) exactly once, in order." With '
        "different batches, another order gives another final weight. Scan forward over the rows as "
        "they are: no reverse=True, no reversed or shuffled rows."
    ),
    "off_by_one": (
        'The exercise: "Starting from w, take one gradient-descent step per batch" and "Return only the '
        'scalar final weight after all N updates." N rows, N steps: scan over the whole arrays, with no '
        "extra step before or after and no row left out."
    ),
    "returns_history": (
        'The exercise: "Return only the scalar final weight after all N updates." Return None as the '
        "body's per-step output and unpack the scan: final_w, _ = lax.scan(step, w, (x_batches, "
        "y_batches)); return final_w."
    ),
    "mean_not_sum": (
        'The exercise: "take one gradient-descent step per batch using the loss sum((w*x - y)**2)", a sum '
        "over the batch, whose gradient is 2 * sum((w*x - y) * x). A mean divides that gradient by the "
        "batch size B."
    ),
    "missing_factor_two": (
        "The exercise: gradient = 2 * sum((w*x - y) * x), the derivative of sum((w*x - y)**2); or let "
        "jax.grad differentiate the loss."
    ),
    "wrong_sign": (
        "The exercise: new_w = w - lr * gradient. Gradient descent steps against the gradient; adding it "
        "climbs the loss."
    ),
    "dtype_changed": (
        'The exercise: "Inputs are real floating-point values; use matching dtypes so each update '
        "preserves the scalar carry's dtype.\" lax.scan needs a carry of the same dtype at every step: "
        "start the carry from w as given (no float(), .item() or dtype=float) and return the jax array "
        "the scan gives."
    ),
    "static_lr": (
        'The exercise: "The scalar lr is the learning rate and stays fixed throughout the scan. It need '
        'not be a static argument when you JIT the enclosing function." Fixed is not static: the scan '
        "body may close over lr as a traced array. No static_argnums for it, no float(lr), no Python "
        "if on its value."
    ),
    "not_scan": (
        'The exercise: "Implement scan_training_step(w, lr, x_batches, y_batches) with lax.scan." A scan '
        "is one compiled loop operation, whatever N; a Python for loop inside jit is unrolled into one "
        "copy of the step per batch, a program that grows with N."
    ),
    "host_sync": (
        'The exercise runs your function "also under jax.jit with a traced learning rate", and lax.scan '
        "traces its body once to compile the loop: there the weight is a traced value with no number "
        "yet. float(), .item(), int(), np.asarray and a Python if or break on it need one: keep the step "
        "in jax.numpy operations, and use jax.debug.print to look at values."
    ),
    "error": (
        "The exercise's signature: scan_training_step(w, lr, x_batches, y_batches), where x_batches and "
        "y_batches have shape (N, B). Inside the body, unpack the batch with x, y = batch, and return "
        "the 2-tuple (new_w, None)."
    ),
    "lr_twice": (
        'The exercise: "new_w = w - lr * gradient": lr multiplies the gradient once. If the gradient '
        "your body computes already includes lr (a loss or helper scaled by it), do not multiply by lr "
        "again."
    ),
    "wrong_axis": (
        'The exercise: "The two batch arrays have the same shape (N, B)" and "Use each paired row '
        '(x_batches[i], y_batches[i]) exactly once, in order." lax.scan steps along the first axis: '
        "pass (x_batches, y_batches) as they are (no .T, no x_batches[:, i]), and sum the loss over the "
        "B examples of the row the body receives."
    ),
    "full_batch": (
        'The exercise: "Starting from w, take one gradient-descent step per batch" and "Use each paired '
        'row (x_batches[i], y_batches[i]) exactly once, in order." Step i takes its gradient on the row '
        "the scan hands the body, not on the whole x_batches and y_batches."
    ),
    "stale_gradient": (
        "The exercise's worked example: \"The first step's gradient is -4 and gives 0.4; the second, "
        'taken at 0.4, is -2.4 and gives 0.64." Each step takes its gradient at the weight it receives, '
        "on its own batch, and applies it at once: no gradient kept in the carry for the next step."
    ),
    "carry_from_constant": (
        'The exercise: "Starting from w, take one gradient-descent step per batch". The scan\'s initial '
        "carry is the w your function receives: lax.scan(step, w, (x_batches, y_batches)), not a number "
        "such as 0.0 or 1.0, nor jnp.zeros(()) or jnp.ones(())."
    ),
    "lr_ignored": (
        'The exercise: "The scalar lr is the learning rate and stays fixed throughout the scan." Use the '
        "lr your function receives, not a number written in the body: the checker calls it with other "
        "rates."
    ),
    # Not a hint: what a host_sync message says was traced.
    "traced values": "the weight or a batch, not lr",
    WRONG_RESULT: (
        "The exercise: starting from w, one step per row (x_batches[i], y_batches[i]) in order, each "
        "from the weight the previous step produced: gradient = 2 * sum((w*x - y) * x); new_w = "
        "w - lr * gradient. Return the final weight."
    ),
}


# What a model of each mistake did, said after "<the learner's number> is ...".

SCAN_STEP_EXPLANATIONS = {
    "accumulated_gradients": "what every batch's gradient taken at the initial weight w = {w}, summed "
    "and applied once, gives: each step must take its gradient at the weight the previous step produced",
    "reused_first_row": "what the first batch (x_batches[0], y_batches[0]) used at every step gives",
    "wrong_order": "what the same batches in another order (rows {rows}) give",
    "off_by_one": "what {k} steps on rows {rows} give, instead of {n} steps on rows 0 to {last}",
    "mean_not_sum": "what the mean loss gives: each batch's gradient divided by B = {b}",
    "missing_factor_two": "what the gradient without its factor 2, sum((w*x - y) * x), gives",
    "wrong_sign": "what stepping up the gradient, w + lr * gradient, gives",
    "unchanged": "the initial weight w = {w}: the updates are not returned (is the final carry of "
    "lax.scan what the function returns?)",
    "each_step_from_initial_w": "what one step from the initial weight on the last batch gives: every "
    "step starts from the initial w instead of the carry",
    "lr_twice": "what lr applied twice, new_w = w - lr * lr * gradient, gives",
    "wrong_axis": "what the batches scanned along the wrong axis ({rows}) give: one step per column "
    "instead of one per row",
    "full_batch": "what every batch's gradient at every step ({rows}) gives: each step must use its own "
    "batch only",
    "stale_gradient": "what applying at each step the gradient the previous step took (0 at the first "
    "step) gives",
    "carry_from_constant": "what the scan started from w = {rows} instead of the given w = {w} gives",
    "lr_ignored": "what a learning rate of {rows} in place of lr = {lr} gives: the lr argument is not used",
}

# --- momentum_training_step(w, lr, momentum, x_batches, y_batches) -------------------------------

MOMENTUM_HINTS = {
    "state_not_carried": (
        "The exercise: \"The trace is the optimizer's state: it must survive from one step to the next, so "
        'it belongs in the carry with the weight. The carry is the pair (w, trace)." Start the scan from '
        "(w, jnp.zeros_like(w)), unpack w, trace = carry in the body and return (new_w, new_trace) as "
        "the next carry."
    ),
    "momentum_on_weight": (
        "The exercise: trace = gradient + momentum * trace; new_w = w - lr * trace. Momentum decays "
        "the trace, the running sum of gradients, never the weight itself."
    ),
    "trace_after_use": (
        "The exercise: update the trace first, then step with the new one: trace = gradient + "
        "momentum * trace, then new_w = w - lr * trace (the order Optax uses)."
    ),
    "returns_history": (
        'The exercise: "Return only the final weight." Return None as the body\'s per-step output and '
        "take the weight from the final carry: (final_w, _), _ = lax.scan(step, (w, trace), "
        "(x_batches, y_batches)); return final_w."
    ),
    "returns_carry": (
        'The exercise: "Return only the final weight." The final carry is the pair (w, trace): '
        "(final_w, _), _ = lax.scan(...); return final_w."
    ),
    "not_scan": (
        "The exercise asks for lax.scan: one compiled loop whose carry is (w, trace), not a Python "
        "loop that jit unrolls into one copy of the step per batch."
    ),
    "host_sync": (
        'The exercise: "lr and momentum stay fixed, as lr did in the first exercise, and may be traced '
        'under jax.jit." There the weight, the trace, lr and momentum are traced values with no number '
        "yet: float(), .item(), np.asarray or a Python if on them fails. Keep the step in jax.numpy "
        "operations."
    ),
    "error": (
        "The exercise's signature: momentum_training_step(w, lr, momentum, x_batches, y_batches), where "
        "x_batches and y_batches have shape (N, B). The body takes the carry (w, trace) and a batch "
        "(x, y), and returns ((new_w, new_trace), None)."
    ),
    "trace_as_average": (
        "The exercise: trace = gradient + momentum * trace, heavy-ball momentum \"as Optax's "
        'optax.sgd(lr, momentum=momentum) does it". The gradient enters the trace whole: the average '
        "momentum * trace + (1 - momentum) * gradient, which some libraries call momentum, takes "
        "steps 1 - momentum times as long at first."
    ),
    "nesterov": (
        'The exercise: "heavy-ball momentum, as Optax\'s optax.sgd(lr, momentum=momentum) does it": '
        "the gradient at the weight w itself, trace = gradient + momentum * trace, then new_w = "
        "w - lr * trace. Nesterov's variant (nesterov=True, or the gradient at a look-ahead weight) is "
        "another optimizer."
    ),
    "traced values": "the weight, the trace, lr or momentum",
    WRONG_RESULT: (
        "The exercise: starting from w and a trace of 0, for each batch in order: gradient = "
        "2 * sum((w*x - y) * x); trace = gradient + momentum * trace; new_w = w - lr * trace. Return "
        "the final weight."
    ),
}

MOMENTUM_EXPLANATIONS = {
    "state_not_carried": "what plain gradient descent gives: the trace starts again from 0 at every "
    "step, so it never holds the earlier gradients",
    "momentum_on_weight": "what momentum applied to the weight gives ({rows})",
    "trace_after_use": "what stepping with the previous step's trace and updating it afterwards gives "
    "(the first step then moves by lr * 0)",
    "trace_as_average": "what the trace as an average, trace = momentum * trace + (1 - momentum) * "
    "gradient, gives",
    "nesterov": "what Nesterov's momentum ({rows}) gives, instead of heavy-ball",
}

# --- scheduled_training_step(w, lr_schedule, x_batches, y_batches) --------------------------------

SCHEDULE_HINTS = {
    "schedule_closed_over": (
        'The exercise: "a schedule changes from step to step, so it is an input of the scan, like the '
        'batches: scan over (lr_schedule, x_batches, y_batches) together." lax.scan traces the body '
        "once, so a Python counter (i += 1) or a fixed index into the schedule gives every step the "
        "same lr: lax.scan(step, w, (lr_schedule, x_batches, y_batches)), and unpack lr, x, y in the "
        "body."
    ),
    "schedule_off_by_one": (
        'The exercise: "step i uses lr_schedule[i] with the batch (x_batches[i], y_batches[i])." Scan '
        "the schedule and the batches together as they are: no shift, roll or slice of either."
    ),
    "schedule_wrong_order": (
        'The exercise: "step i uses lr_schedule[i] with the batch (x_batches[i], y_batches[i])", '
        "forward from step 0. Scan (lr_schedule, x_batches, y_batches) together: no reverse=True, no "
        "reversed schedule or batches."
    ),
    "returns_history": (
        'The exercise: "Return only the final weight." Return None as the body\'s per-step output: '
        "final_w, _ = lax.scan(step, w, (lr_schedule, x_batches, y_batches)); return final_w."
    ),
    "returns_carry": (
        'The exercise: "Return only the final weight." If the carry holds more than the weight, '
        "return the weight alone from the final carry."
    ),
    "not_scan": (
        "The exercise asks for lax.scan: one compiled loop over the schedule and the batches "
        "together, not a Python loop that jit unrolls into one copy of the step per batch."
    ),
    "host_sync": (
        "Under jax.jit the weight, the schedule and the batches are traced values with no number "
        "yet: float(), .item(), np.asarray or a Python if on them fails. Keep the step in jax.numpy "
        "operations."
    ),
    "error": (
        "The exercise's signature: scheduled_training_step(w, lr_schedule, x_batches, y_batches), "
        "with lr_schedule of shape (N,) and the batches (N, B). The body takes the carry w and the "
        "inputs (lr, x, y) and returns (new_w, None)."
    ),
    "schedule_one_rate": (
        'The exercise: "step i uses lr_schedule[i] with the batch (x_batches[i], y_batches[i])": each '
        "step its own entry, scanned with its batch, not one rate (the schedule's mean or its last "
        "entry) for every step."
    ),
    "traced values": "the weight, the schedule or a batch",
    WRONG_RESULT: (
        "The exercise: starting from w, for each step i in order: gradient = 2 * sum((w*x - y) * x) "
        "on batch i; new_w = w - lr_schedule[i] * gradient. Return the final weight."
    ),
}

SCHEDULE_EXPLANATIONS = {
    "schedule_closed_over": "what one entry of the schedule at every step gives ({rows}): a Python "
    "counter or index in the body is read once, when lax.scan traces it",
    "schedule_off_by_one": "what the schedule shifted by one step gives ({rows})",
    "schedule_wrong_order": "what the schedule and the batches paired in another order give ({rows})",
    "schedule_one_rate": "what one rate for every step gives ({rows})",
}

# --- pytree_training_step(params, lr, x_batches, y_batches) ---------------------------------------

PYTREE_HINTS = {
    "b_not_updated": (
        'The exercise: "every leaf takes its step, b as well as w." Take the gradient of the loss '
        "sum((w*x + b - y)**2), b in it, with respect to the whole dict, jax.grad(loss)(params, x, y), "
        "and update every leaf at once: jax.tree.map(lambda p, g: p - lr * g, params, grads)."
    ),
    "sequential_update": (
        'The exercise: "Both gradients are taken at the params the step receives, before either is '
        'updated". Take grads once, from the params the body receives, then update every leaf from '
        "them in one jax.tree.map: no new w before b's gradient is taken, nor a new b before w's."
    ),
    "returns_tuple": (
        'The exercise: "Return the final params as a dict with the same keys". lax.scan gives back '
        "the carry in the shape it was given: final_params, _ = lax.scan(step, params, (x_batches, "
        "y_batches)); return final_params, the dict itself, not (w, b) or its values."
    ),
    "gradient_ascent": (
        "The exercise: params = jax.tree.map(lambda p, g: p - lr * g, params, grads). Gradient "
        "descent steps against the gradient; adding it, p + lr * g, climbs the loss."
    ),
    "tree_map_swapped": (
        "The exercise: params = jax.tree.map(lambda p, g: p - lr * g, params, grads). jax.tree.map "
        "hands the function one leaf of each tree in the order the trees are given: params first, as "
        "p, then grads, as g. Given (grads, params), it returns g - lr * p."
    ),
    "mean_not_sum": (
        "The exercise: the loss is sum((w*x + b - y)**2), a sum over the batch, whose gradients are "
        "2 * sum((w*x + b - y) * x) and 2 * sum(w*x + b - y). A mean divides both by the batch size B."
    ),
    "lr_twice": (
        "The exercise: params = jax.tree.map(lambda p, g: p - lr * g, params, grads), lr once. Scaling "
        "the gradients by lr and the update by lr again steps by lr * lr."
    ),
    "full_batch": (
        "The exercise: one gradient step per batch, each step's gradients from its own batch, the (x, y) "
        "the scan hands the body. Gradients over every batch at every step make N full-batch steps."
    ),
    "stale_gradient": (
        "The exercise: the gradients are taken at the params the step receives and applied in that "
        "step. A carry holding the previous step's gradients applies each of them a step late."
    ),
    "each_step_from_initial": (
        "The exercise: the params are the scan's carry. The body must take its gradients at the carry "
        "it receives, not at the params the function was given (a closure over them): from those, "
        "every step starts again and only the last batch's step is left."
    ),
    "xy_swapped": (
        "The exercise: the loss is sum((w*x + b - y)**2), the prediction w*x + b against the target "
        "y. The body receives the batch as (x, y), in the order the scan was given (x_batches, "
        "y_batches)."
    ),
    "wrong_leaf_gradient": (
        "The exercise: params = jax.tree.map(lambda p, g: p - lr * g, params, grads): each leaf "
        "steps with its own gradient, w with grads['w'] and b with grads['b']."
    ),
    "values_order": (
        "The exercise's params are a dict: read its leaves by key, params['w'] and params['b']. "
        "Inside lax.scan the carry comes back with its keys sorted, 'b' before 'w', so w, b = "
        "params.values() reads b as w and w as b."
    ),
    "wrong_axis": (
        "The exercise: x_batches and y_batches have shape (N, B), a batch per row. Scan them as "
        "they are: step i gets row i, (x_batches[i], y_batches[i]), not a column."
    ),
    "lr_ignored": (
        "The exercise: every step is p - lr * g with the lr the function receives. A number "
        "written into the step in its place is the same rate whatever lr the caller asks for."
    ),
    "missing_factor_two": (
        "The exercise: the loss is sum((w*x + b - y)**2), whose gradients are 2 * sum((w*x + b - y) * x) "
        "and 2 * sum(w*x + b - y), each with its factor 2 (a loss of 1/2 * sum(...) drops it); or let "
        "jax.grad differentiate the loss."
    ),
    "keys_renamed": (
        "The exercise: \"Return the final params as a dict with the same keys\": 'w' and 'b', the "
        "keys of the params the function receives. Build each new dict with those keys, or with "
        "jax.tree.map(lambda p, g: p - lr * g, params, grads), which keeps them."
    ),
    "returns_history": (
        'The exercise: "Return the final params as a dict with the same keys". Return None as the '
        "body's per-step output and unpack the scan: final_params, _ = lax.scan(step, params, "
        "(x_batches, y_batches)); return final_params."
    ),
    "not_scan": (
        "The exercise asks for lax.scan: one compiled loop whose carry is the params dict, not a "
        "Python loop that jit unrolls into one copy of the step per batch."
    ),
    "host_sync": (
        'The exercise: "lr stays fixed, as in the first exercise, and may be traced under jax.jit." '
        "There the params, lr and the batches are traced values with no number yet: float(), .item(), "
        "np.asarray or a Python if on them fails. Keep the step in jax.numpy operations."
    ),
    "error": (
        "The exercise's signature: pytree_training_step(params, lr, x_batches, y_batches), params a "
        "dict with the keys 'w' and 'b', the batches of shape (N, B). The body takes the carry (the "
        "dict: read its leaves as params['w'] and params['b'], since w, b = params unpacks its keys, "
        "the strings) and a batch (x, y), and returns (new_params, None)."
    ),
    "params_unchanged": (
        "The exercise: the body returns the new params as its carry, params = jax.tree.map(lambda p, "
        "g: p - lr * g, params, grads) (with Optax: updates, state = optimizer.update(grads, state), "
        "then params = optax.apply_updates(params, updates)), and the function returns the scan's "
        "final carry, not the params it was given."
    ),
    "from_zeros": (
        "The exercise: the scan's carry starts at the params the function receives, lax.scan(step, "
        "params, (x_batches, y_batches)), not at a dict of zeros: the caller's w and b are where the "
        "steps begin."
    ),
    "traced values": "the params, lr or a batch",
    WRONG_RESULT: (
        "The exercise: starting from params, for each batch in order: grads = the gradients of "
        "sum((w*x + b - y)**2) in w and b, both at the params the step receives; params = "
        "jax.tree.map(lambda p, g: p - lr * g, params, grads). Return the final params dict."
    ),
}

PYTREE_EXPLANATIONS = {
    "b_not_updated": "what b never updated gives ({rows}): only w takes its steps",
    "sequential_update": "what the two updates taken in turn give ({rows}), instead of both "
    "gradients at the params the step received",
    "gradient_ascent": "what stepping up the gradient, p + lr * g for every leaf, gives",
    "tree_map_swapped": "what jax.tree.map with the trees swapped gives: g - lr * p for every leaf, "
    "the gradient less lr times the param",
    "mean_not_sum": "what the mean loss gives: both gradients divided by the batch size, {rows}",
    "missing_factor_two": "what the gradients without their factor 2 give (the loss halved, "
    "1/2 * sum((w*x + b - y)**2))",
    "lr_twice": "what lr applied twice, p - lr * lr * g for every leaf, gives",
    "full_batch": "what every batch's gradients at every step ({rows}) give: each step must use its "
    "own batch's",
    "stale_gradient": "what applying at each step the gradients the previous step took (0 at the "
    "first) gives",
    "each_step_from_initial": "what one step from the given params on the last batch gives: every "
    "step starts from the params the function received instead of the carry",
    "xy_swapped": "what x and y swapped in the loss, sum((w*y + b - x)**2), give",
    "wrong_leaf_gradient": "what a leaf stepped with the other leaf's gradient gives ({rows})",
    "values_order": "what w and b read the other way round at every step give (w, b = "
    "params.values() with the keys sorted: b first)",
    "wrong_axis": "what the batches transposed give: a step per column of x_batches, not per row",
    "lr_ignored": "what a hard-coded lr = {rows} gives, whatever lr the function receives",
    "params_unchanged": "the initial params: no step reached the carry (are the updates applied, "
    "and is the final carry of lax.scan what the function returns?)",
    "keys_swapped": "the right values under each other's keys: the new w is returned as 'b' and the "
    "new b as 'w'",
    "from_zeros": "what the steps started from w = 0 and b = 0 give, instead of from the params the "
    "function receives",
}
