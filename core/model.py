"""The linear model over features, y = sum_i params[i] * phi_i(x), and the arithmetic of its loss.

phi(x) = (x) for the lesson's model, whose params are {"w": w}; phi(x) = (x, 1) for y = w*x + b,
params {"w": w, "b": b}. The params are a pytree over the features, as Optax treats any pytree:
every run (`core.engine`) is one program over them, and a model is the set of its leaves, not a
flag. The loss of a batch is the lesson's, sum((prediction - y)**2), and its gradient is
`jax.value_and_grad` over the params dict.

Every product of a step passes through a run-time select (`rounded`) and every sum is a pairwise
tree (`pairwise_sum`): that is what makes zero padding drop out of a run's numbers bit for bit, so
that one compiled program serves every N and B.
"""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
from jax import lax

FEATURES = {"w": "x", "b": "1"}
"""Each leaf's feature, in the order a model lists them: w multiplies x, b the constant 1."""


def leaves(params) -> tuple:
    """The model's leaves, in FEATURES' order: ("w",) or ("w", "b")."""
    return tuple(name for name in FEATURES if name in params)


def rounded(value, keep):
    """`value` where `keep` holds, else 0: a select that also rounds `value` on its own.

    A compiler may fuse a product and the addition or subtraction that consumes it into one
    multiply-add, which rounds once instead of twice, and XLA decides that per fused loop (even per
    loop remainder), so the same arithmetic can give different last bits in differently shaped
    programs. Nothing fuses across a select whose condition is only known at run time, so every
    product in a step passes through one before it is added: that is what makes padding drop out of
    the engine's results. (LLVM can still hoist a loop-invariant condition out of a loop and drop
    the select in one copy of it, which is why other programs can differ in the last bit.)
    """
    return jnp.where(keep, value, jnp.zeros((), value.dtype))


def pad_to_power_of_two(values):
    """Zero-pad the last axis to a power of two (a no-op when it is one)."""
    length = values.shape[-1]
    width = 1 << max(length - 1, 0).bit_length()
    if width == length:
        return values
    return jnp.pad(values, [(0, 0)] * (values.ndim - 1) + [(0, width - length)])


def pairwise_sum(values):
    """Sum over the last axis as a tree: zero-pad it to a power of two, then add the two halves,
    level by level.

    Zeros appended to the axis drop out exactly (v + 0 is v), so the same data padded with zeros to
    any longer power of two gives the same bits, which a library reduction does not promise.
    """
    values = pad_to_power_of_two(values)
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = values[..., :half] + values[..., half:]
    return values[..., 0]


def wide(dtype):
    """The dtype sums over many examples are taken in: `dtype`, or float32 if narrower (sums of
    x*x over N*B examples overflow float16, and bfloat16 holds 257 as 256)."""
    return dtype if jnp.finfo(dtype).bits >= 32 else jnp.dtype(jnp.float32)


def mean_of(total, b):
    """total / b, divided in at least float32 so that B is exact."""
    dtype = wide(total.dtype)
    return (total.astype(dtype) / b.astype(dtype)).astype(total.dtype)


def example_loss(params, x, y, keep):
    """(prediction - y)**2 for one example, prediction = sum_i params[i] * phi_i(x); 0 where keep
    is False. A leaf of the constant feature is added as it is (times 1 is no rounding)."""
    terms = [
        rounded(params[name] * x, keep) if FEATURES[name] == "x" else params[name] for name in leaves(params)
    ]
    error = functools.reduce(operator.add, terms) - y
    return rounded(error * error, keep)


# Per-example loss and gradients: the params shared (in_axes None), each example mapped.
_example_value_and_grads = jax.vmap(jax.value_and_grad(example_loss), in_axes=(None, 0, 0, 0))


def batch_loss_and_grads(params, x, y, b):
    """The sum loss of the first b examples of one batch (x, y: (width,)) and its gradients, a dict
    like params: {"w": 2*sum(e*x)} and, with an intercept, "b": 2*sum(e), e = prediction - y.

    b is a traced int32: examples past it count as exact zeros whatever they hold (pairwise sums
    over a masked batch), and it keeps the selects of `rounded` from being folded at compile time.
    """
    valid = lax.iota(jnp.int32, x.shape[-1]) < b
    losses, grads = _example_value_and_grads(params, x, y, valid)
    # Past b a gradient is 0 * x, which is NaN where x is: select it away too.
    return pairwise_sum(losses), jax.tree.map(lambda g: pairwise_sum(rounded(g, valid)), grads)
