"""Seed 002: three ways to give a `lax.scan` body an input that does not change across iterations.

The computation is the seed's: scan over `a`, multiply each element by the same `b`, and keep a
running total. `b` reaches the body

- "duplicate": as a scanned input, `b` repeated along the sequence (`jnp.full_like(a, b)`); memory
  grows with the sequence;
- "carry": in the carry, handed back unchanged at every step. JAX notices that this part of the
  carry never changes and hands it to the loop as a constant instead: in the jaxpr (jax 0.10) it
  is one of the scan's `num_consts` inputs, exactly as with the closure;
- "closure": closed over by the body, so the scan receives it as a constant operand (under
  `jax.make_jaxpr` it is one of the scan's `num_consts` inputs, not a scanned one).

All three compute the same numbers; seed 002 finds the closure the cleanest. The same rule holds
for a learning rate closed over by a training step's scan body: it is still a traced argument of
the jitted outer function, not a static one (seed 000).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from core._checks import check_scalar, reject_traced

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
    """Seed 002's computation three ways: {strategy: (total, per-step outputs)} for each of
    "duplicate", "carry" and "closure" (`STRATEGIES`), as jax arrays.

    Args:
      a: the sequence, a non-empty 1-D array of real numbers (seed 002: `jnp.arange(5)`).
      b: the input that does not change across iterations, a real scalar (seed 002: 2); it takes
        a's dtype.

    Returns:
      A dict of (total, per_step): total = sum(a * b), per_step = a * b. Seed 002's example gives
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


def where_b_lives(name: str, a, b) -> str:
    """Where `b` reaches the scan in strategy `name`'s jaxpr: "scanned input", "carry" or
    "constant", read from the scan equation's parameters, not assumed ("carry" comes out as
    "constant": JAX forwards a carry that never changes as a constant of the loop)."""
    if name not in FUNCTIONS:
        raise ValueError(f"name must be one of {STRATEGIES}, got {name!r}"[:200])
    jaxpr = jax.make_jaxpr(FUNCTIONS[name])(jnp.asarray(a), jnp.asarray(b, jnp.asarray(a).dtype))
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


__all__ = ["FUNCTIONS", "STRATEGIES", "invariant_strategies", "where_b_lives"]
