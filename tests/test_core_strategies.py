"""Seed 002: an input that does not change across scan iterations, passed three ways."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import core
from core import strategies


def _scan_eqn(name, a, b):
    jaxpr = jax.make_jaxpr(strategies.FUNCTIONS[name])(a, jnp.asarray(b, a.dtype))
    (scan,) = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    return scan


def test_seed_002_numbers_hold_for_all_three():
    results = core.invariant_strategies(jnp.arange(5), 2)
    assert tuple(results) == core.STRATEGIES == ("duplicate", "carry", "closure")
    for total, per_step in results.values():
        assert int(total) == 20
        np.testing.assert_array_equal(per_step, [0, 2, 4, 6, 8])


def test_all_three_agree_on_random_inputs():
    rng = np.random.default_rng(0)
    for _ in range(10):
        a = jnp.asarray(rng.normal(size=int(rng.integers(1, 50))), jnp.float32)
        b = float(rng.normal())
        results = core.invariant_strategies(a, b)
        reference_total, reference_steps = results["closure"]
        np.testing.assert_allclose(reference_steps, np.asarray(a, np.float64) * np.float32(b), rtol=1e-6)
        for total, per_step in results.values():
            np.testing.assert_array_equal(per_step, reference_steps)
            np.testing.assert_array_equal(total, reference_total)


def test_the_jaxprs_show_where_b_lives():
    a, b = jnp.arange(6.0), 3.0
    duplicate, carry, closure = (_scan_eqn(name, a, b) for name in core.STRATEGIES)
    # duplicate: no constants, one carry (the total), two scanned inputs (a and the repeated b)
    assert duplicate.params["num_consts"] == 0 and duplicate.params["num_carry"] == 1
    assert len(duplicate.invars) == 3
    # carry: written in the carry, but JAX forwards a carry that never changes as a loop constant
    assert carry.params["num_consts"] == 1 and carry.params["num_carry"] == 1 and len(carry.invars) == 3
    # closure: b is a constant operand of the scan body, a the only scanned input
    assert closure.params["num_consts"] == 1 and closure.params["num_carry"] == 1
    assert len(closure.invars) == 3
    assert [core.where_b_lives(name, a, b) for name in core.STRATEGIES] == [
        "scanned input",
        "constant",
        "constant",
    ]


@pytest.mark.parametrize(
    ("a", "b", "error", "message"),
    [
        (np.ones((2, 2)), 1.0, ValueError, "a must be a non-empty 1-D array"),
        (np.ones(0), 1.0, ValueError, "a must be a non-empty 1-D array"),
        (np.array([True, False]), 1.0, TypeError, "a must be a 1-D array of real numbers"),
        (np.ones(3), np.ones(2), ValueError, "b"),
        (np.ones(3), float("nan"), ValueError, "b must be finite"),
        (np.ones(3), True, TypeError, "b must be a real number"),
        (np.arange(3), 0.5, TypeError, "b = 0.5 is not a whole number"),
    ],
)
def test_bad_input_names_the_argument(a, b, error, message):
    with pytest.raises(error, match=message):
        core.invariant_strategies(a, b)
    if message.startswith("a"):
        return
    with pytest.raises(ValueError, match="name must be one of"):
        core.where_b_lives("unrolled", np.ones(3), 1.0)
