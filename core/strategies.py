"""Three ways to give a `lax.scan` body an input that does not change across iterations.

The computation is the lesson's: scan over `a`, multiply each element by the same `b`, and keep a
running total. `b` reaches the body

- "duplicate": as a scanned input, `b` repeated along the sequence (`jnp.full_like(a, b)`); memory
  grows with the sequence;
- "carry": in the carry, handed back unchanged at every step. JAX notices that this part of the
  carry never changes and hands it to the loop as a constant instead: in the jaxpr (jax 0.10) it
  is one of the scan's `num_consts` inputs, exactly as with the closure;
- "closure": closed over by the body, so the scan receives it as a constant operand (under
  `jax.make_jaxpr` it is one of the scan's `num_consts` inputs, not a scanned one).

All three compute the same numbers; the closure is the cleanest. The same rule holds
for a learning rate closed over by a training step's scan body: it is still a traced argument of
the jitted outer function, not a static one.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import check_batches, check_scalar, data_dtype, reject_traced
from core.lesson import batch_loss, train_step

STRATEGIES = ("duplicate", "carry", "closure")


def duplicate(a, b):
    """Strategy 1: b repeated along the sequence and scanned with a."""

    def body(total, inputs):
        a_k, b_k = inputs
        result = a_k * b_k
        return total + result, result

    b_seq = jnp.full_like(a, b)
    return lax.scan(body, jnp.zeros((), a.dtype), (a, b_seq))


def carry(a, b):
    """Strategy 2: b carried along unchanged, next to the running total."""

    def body(state, a_k):
        total, b_k = state
        result = a_k * b_k
        return (total + result, b_k), result

    (total, _), per_step = lax.scan(body, (jnp.zeros((), a.dtype), jnp.asarray(b, a.dtype)), a)
    return total, per_step


def closure(a, b):
    """Strategy 3: the body closes over b."""

    def body(total, a_k):
        result = a_k * b
        return total + result, result

    return lax.scan(body, jnp.zeros((), a.dtype), a)


FUNCTIONS = {"duplicate": duplicate, "carry": carry, "closure": closure}


def invariant_strategies(a, b) -> dict:
    """The computation three ways: {strategy: (total, per-step outputs)} for each of
    "duplicate", "carry" and "closure" (`STRATEGIES`), as jax arrays.

    Args:
      a: the sequence, a non-empty 1-D array of real numbers (the lesson's: `jnp.arange(5)`).
      b: the input that does not change across iterations, a real scalar (the lesson's: 2); it takes
        a's dtype.

    Returns:
      A dict of (total, per_step): total = sum(a * b), per_step = a * b. The lesson's example gives
      20 and [0, 2, 4, 6, 8] for all three.

    Raises:
      TypeError or ValueError naming `a` or `b` for a non-1-D, empty, boolean or complex `a`, and
      for a non-scalar, boolean, complex or non-finite `b`.
    """
    reject_traced("invariant_strategies", a, b)
    array = np.asarray(a)
    if array.dtype == np.bool_ or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise TypeError(f"a must be a 1-D array of real numbers, got dtype {array.dtype}")
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"a must be a non-empty 1-D array, got shape {array.shape}")
    check_scalar("b", b)
    a = jnp.asarray(a)
    if jnp.issubdtype(a.dtype, jnp.integer) and not float(b).is_integer():
        raise TypeError(f"b = {b!r} is not a whole number, but a holds integers ({a.dtype}): use float a")
    return {name: FUNCTIONS[name](a, b) for name in STRATEGIES}


def _jaxpr(name: str, a, b):
    if name not in FUNCTIONS:
        raise ValueError(f"name must be one of {STRATEGIES}, got {name!r}"[:200])
    return jax.make_jaxpr(FUNCTIONS[name])(jnp.asarray(a), jnp.asarray(b, jnp.asarray(a).dtype))


def strategy_jaxpr(name: str, a, b) -> str:
    """The jaxpr of strategy `name` on (a, b), as JAX prints it: what the scan receives as
    constants, carry and scanned inputs."""
    return str(_jaxpr(name, a, b))


def where_b_lives(name: str, a, b) -> str:
    """Where `b` reaches the scan in strategy `name`'s jaxpr: "scanned input", "carry" or
    "constant", read from the scan equation's parameters, not assumed ("carry" comes out as
    "constant": JAX forwards a carry that never changes as a constant of the loop)."""
    jaxpr = _jaxpr(name, a, b)
    (scan,) = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    consts, carries = scan.params["num_consts"], scan.params["num_carry"]
    scanned = len(scan.invars) - consts - carries
    if consts:
        return "constant"
    if carries > 1:
        return "carry"
    if scanned > 1:
        return "scanned input"
    raise RuntimeError(f"unexpected scan: {consts} constants, {carries} carries, {scanned} scanned")


class StrategyMemory(NamedTuple):
    """XLA's own account of each strategy's working memory, one compile per (strategy, length).

    lengths: (L,) the sequence lengths measured.
    temp_bytes: {strategy: (L,) int64}, the compiled program's temporary buffers in bytes
      (`memory_analysis().temp_size_in_bytes`): "duplicate" holds the repeated b, so it grows with
      the sequence; "carry" and "closure" stay constant.
    argument_bytes: (L,) int64, the inputs a and b, the same for every strategy.
    """

    lengths: np.ndarray
    temp_bytes: dict
    argument_bytes: np.ndarray


MAX_MEMORY_LENGTH = 10**7


def strategy_memory(lengths, dtype=np.float32) -> StrategyMemory:
    """What each strategy costs in memory as the sequence grows, measured from the compiled programs.

    Args:
      lengths: sequence lengths, whole numbers from 1 to MAX_MEMORY_LENGTH (the programs are
        compiled, not run, so a long sequence costs no memory here).
      dtype: the sequence's floating dtype.

    Returns:
      A `StrategyMemory`.

    Raises:
      TypeError or ValueError naming `lengths` or `dtype`.
    """
    values = list(np.atleast_1d(np.asarray(lengths, dtype=object)))
    if not values or not all(
        isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in values
    ):
        raise TypeError(f"lengths must be whole numbers, got {lengths!r}"[:200])
    if not all(1 <= v <= MAX_MEMORY_LENGTH for v in values):
        raise ValueError(f"lengths must be from 1 to {MAX_MEMORY_LENGTH}, got {lengths!r}"[:200])
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating dtype, got {dtype!r}"[:200]) from None
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    temp = {name: [] for name in STRATEGIES}
    arguments = []
    for n in values:
        a, b = jax.ShapeDtypeStruct((int(n),), dtype), jax.ShapeDtypeStruct((), dtype)
        for name in STRATEGIES:
            analysis = jax.jit(FUNCTIONS[name]).lower(a, b).compile().memory_analysis()
            temp[name].append(analysis.temp_size_in_bytes)
        arguments.append(analysis.argument_size_in_bytes)
    as_array = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return StrategyMemory(
        as_array(values), {name: as_array(v) for name, v in temp.items()}, as_array(arguments)
    )


def closed_over_lr(w, lr, x_batches, y_batches):
    """The lesson's loop with lr closed over by the scan body: lr is not in the carry, and it is not
    static either. Under `jax.jit` it stays a traced argument of this outer function."""

    def step(w, batch):
        x, y = batch
        new_w, _ = train_step(w, lr, x, y)  # lr: read from the enclosing function, a tracer under jit
        return new_w, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


class LrTraces(NamedTuple):
    """One jitted `closed_over_lr` run at many learning rates, with lr traced and with lr static.

    lrs: (K,) the learning rates, in the order run.
    weights: (K,) the final weight at each.
    traces_traced, traces_static: how many times JAX traced the function (each trace here is a
      compile too): 1 when lr is a traced argument, K when it is marked static.
    """

    lrs: np.ndarray
    weights: np.ndarray
    traces_traced: int
    traces_static: int


def lr_traces(lrs, x_batches, y_batches, w0=0.0) -> LrTraces:
    """Count the traces of `closed_over_lr` under `jax.jit` over the learning rates `lrs`, with lr
    traced (the default) and with `static_argnames="lr"`; fresh jitted functions each call, so
    the counts are this call's alone.

    Args:
      lrs: 1 to 64 finite real learning rates.
      x_batches, y_batches: float arrays of one shape (N, B).
      w0: the initial weight, a real scalar.

    Returns:
      An `LrTraces`; both ways give the same weights.
    """
    reject_traced("lr_traces", lrs, x_batches, y_batches, w0)
    values = np.atleast_1d(np.asarray(lrs))
    if values.ndim != 1 or not 1 <= values.size <= 64:
        raise ValueError(f"lrs must hold 1 to 64 learning rates, got shape {values.shape}")
    for lr in values.tolist():
        check_scalar("lrs", lr)
    x, y = np.asarray(x_batches), np.asarray(y_batches)
    if x.ndim != 2 or x.shape != y.shape or 0 in x.shape:
        raise ValueError(f"x_batches and y_batches must share one (N, B) shape, got {x.shape} and {y.shape}")
    if not (np.issubdtype(x.dtype, np.floating) and x.dtype == y.dtype):
        raise TypeError(f"x_batches and y_batches must be one floating dtype, got {x.dtype} and {y.dtype}")
    check_scalar("w0", w0)
    w0 = jnp.asarray(w0, x.dtype)
    runs = {}
    for static in (False, True):
        traces = []

        def counted(w, lr, x_batches, y_batches, traces=traces):
            traces.append(lr)  # runs once per trace, not per call
            return closed_over_lr(w, lr, x_batches, y_batches)

        f = jax.jit(counted, static_argnames=("lr",) if static else ())
        lr_values = [float(lr) for lr in values] if static else [jnp.asarray(lr, x.dtype) for lr in values]
        weights = np.array([np.asarray(f(w0, lr, x, y)) for lr in lr_values])
        runs[static] = (weights, len(traces))
    return LrTraces(values.astype(np.float64), runs[False][0], runs[False][1], runs[True][1])


# Where the learning rate lives ---------------------------------------------------------------------
# The same rule for lr, in the lesson's loop: a constant lr is closed over; per-step rates that are
# known before the loop are scanned with the batches; a rate the optimizer derives from its own step
# count lives in the carry, as Optax's state. Both schedules are `core.optimizers`' "exponential".

LR_PLACES = ("closed over", "scanned", "carry")
SCHEDULE = "exponential"


def lr_closed_over(w, lr, x_batches, y_batches):
    """A constant lr, closed over by the step: one value, a constant of the loop."""

    def step(w, batch):
        x, y = batch
        new_w, _ = train_step(w, lr, x, y)
        return new_w, new_w

    return lax.scan(step, w, (x_batches, y_batches))


def lr_scanned(w, lrs, x_batches, y_batches):
    """A schedule of N rates made before the loop, scanned with the batches: step k reads lrs[k]."""

    def step(w, inputs):
        x, y, lr_k = inputs
        new_w, _ = train_step(w, lr_k, x, y)
        return new_w, new_w

    return lax.scan(step, w, (x_batches, y_batches, lrs))


def lr_in_carry(w, lr, x_batches, y_batches):
    """Optax's sgd with the same schedule: the carry is (w, opt_state), and the state holds the step
    count from which the optimizer computes each step's rate."""
    from core.optimizers import optax, schedule_function

    optimizer = optax.sgd(schedule_function(SCHEDULE, lr, x_batches.shape[0]))

    def step(carry, batch):
        w, state = carry
        x, y = batch
        grad = jax.grad(batch_loss)(w, x, y)
        with jax.numpy_dtype_promotion("standard"):  # Optax mixes its int32 count with floats
            updates, state = optimizer.update(grad, state, w)
        new_w = optax.apply_updates(w, updates)
        return (new_w, state), new_w

    (final_w, _), weights = lax.scan(step, (w, optimizer.init(w)), (x_batches, y_batches))
    return final_w, weights


LR_FUNCTIONS = {"closed over": lr_closed_over, "scanned": lr_scanned, "carry": lr_in_carry}
# Compiled once per (place, N): a slider move of lr reruns them without tracing again.
_LR_JITTED = {name: jax.jit(function) for name, function in LR_FUNCTIONS.items()}


class LrPlace(NamedTuple):
    """One place of the learning rate, run and read.

    final_w: the weight after N steps, a scalar in the batches' dtype.
    weights: (N,) the weight after each step.
    where: "constant", "scanned input" or "carry", read from the scan equation of `jaxpr`.
    jaxpr: the loop's jaxpr as JAX prints it.
    """

    final_w: float
    weights: np.ndarray
    where: str
    jaxpr: str


def _where(jaxpr) -> str:
    """Where each step's learning rate comes from, read from the scan equation's parameters, not
    assumed: "carry" (the carry holds an int32 step count), "scanned input" (the rates are one of
    the scanned arrays) or "constant" (lr is one of the loop's constants)."""
    (scan,) = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    consts, carries = scan.params["num_consts"], scan.params["num_carry"]
    lr_var = jaxpr.jaxpr.invars[1]
    if any(v.aval.dtype == jnp.int32 for v in scan.invars[consts : consts + carries]):
        return "carry"
    if lr_var in scan.invars[consts + carries :]:
        return "scanned input"
    if lr_var in scan.invars[:consts]:
        return "constant"
    raise RuntimeError(f"unexpected scan: {consts} constants, {carries} carries")


def lr_places(w, lr, x_batches, y_batches) -> dict:
    """The lesson's loop with its learning rate in each of the three places, {place: LrPlace} for
    "closed over" (lr at every step), "scanned" (`core.lr_schedule`'s "exponential" from lr, made
    before the loop) and "carry" (the same schedule inside optax.sgd); the last two agree to float32
    rounding.

    Raises:
      TypeError or ValueError naming `w`, `lr`, `x_batches` or `y_batches`.
    """
    from core.optimizers import lr_schedule

    reject_traced("lr_places", w, lr, x_batches, y_batches)
    check_scalar("w", w)
    check_scalar("lr", lr)
    x, y = check_batches(x_batches, y_batches)
    dtype = data_dtype(x, y)
    x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
    w, rate = jnp.asarray(w, dtype), jnp.asarray(lr, dtype)
    rates = jnp.asarray(lr_schedule(SCHEDULE, float(lr), x.shape[0]), dtype)
    places = {}
    for name in LR_PLACES:
        args = (w, rates if name == "scanned" else rate, x, y)
        jaxpr = jax.make_jaxpr(LR_FUNCTIONS[name])(*args)
        final_w, weights = _LR_JITTED[name](*args)
        places[name] = LrPlace(float(final_w), np.asarray(weights), _where(jaxpr), str(jaxpr))
    return places


__all__ = [
    "FUNCTIONS",
    "STRATEGIES",
    "LrTraces",
    "StrategyMemory",
    "closed_over_lr",
    "invariant_strategies",
    "lr_traces",
    "strategy_jaxpr",
    "strategy_memory",
    "where_b_lives",
    "LR_FUNCTIONS",
    "LR_PLACES",
    "LrPlace",
    "lr_places",
]
