"""Seed 002: an input that does not change across scan iterations, passed three ways."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import core
from core import lesson, optimizers, strategies


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
    with pytest.raises(ValueError, match="name must be one of"):
        core.strategy_jaxpr("unrolled", np.ones(3), 1.0)


def test_the_printed_jaxprs_show_b_where_the_equations_say():
    a = jnp.arange(5.0)
    texts = {name: core.strategy_jaxpr(name, a, 2.0) for name in core.STRATEGIES}
    for name, text in texts.items():
        assert text.startswith("{ lambda") and "scan[" in text, name
        assert "num_consts=1" in text if name != "duplicate" else "num_consts=0" in text
    # duplicate builds the repeated b before the loop: a broadcast of b to the sequence's length
    assert re.search(r"f32\[5\] = broadcast_in_dim b\b", texts["duplicate"])
    assert "broadcast_in_dim" not in texts["closure"]


def test_duplication_memory_grows_with_the_sequence_and_the_others_do_not():
    lengths = [10, 1000, 100_000]
    memory = core.strategy_memory(lengths)
    np.testing.assert_array_equal(memory.lengths, lengths)
    duplicate = memory.temp_bytes["duplicate"]
    # The repeated b is one float32 per step: 4 bytes per element of the sequence, plus what XLA
    # needs anyway (the carry-only strategies' figure) and its 64-byte alignment of buffers.
    overhead = duplicate - 4 * np.asarray(lengths)
    assert np.all(overhead >= 0) and np.all(overhead <= memory.temp_bytes["closure"] + 64), duplicate
    for name in ("carry", "closure"):
        assert len(set(memory.temp_bytes[name].tolist())) == 1, name
        assert memory.temp_bytes[name][-1] < duplicate[-1] - 4 * 99_000
    # a (n floats) and b (one float) are the arguments of every strategy.
    np.testing.assert_array_equal(memory.argument_bytes, 4 * np.asarray(lengths) + 4)


def test_duplication_memory_follows_the_dtype():
    with jax.enable_x64(True):
        memory = core.strategy_memory([100, 200], dtype=np.float64)
    overhead = memory.temp_bytes["duplicate"] - 8 * np.array([100, 200])
    assert np.all(overhead >= 0) and np.all(overhead <= memory.temp_bytes["closure"] + 64)


@pytest.mark.parametrize(
    ("lengths", "dtype", "error", "message"),
    [
        ([], np.float32, TypeError, "lengths must be whole numbers"),
        ([1.5], np.float32, TypeError, "lengths must be whole numbers"),
        ([True], np.float32, TypeError, "lengths must be whole numbers"),
        ([0], np.float32, ValueError, "lengths must be from 1"),
        ([10**8], np.float32, ValueError, "lengths must be from 1"),
        ([10], np.int32, TypeError, "dtype must be a floating dtype"),
        ([10], "nonsense", TypeError, "dtype must be a floating dtype"),
    ],
)
def test_strategy_memory_bad_input_names_the_argument(lengths, dtype, error, message):
    with pytest.raises(error, match=message):
        core.strategy_memory(lengths, dtype)


def test_a_closed_over_lr_is_traced_once_for_many_learning_rates():
    # Seed 000's example: two batches of ones, w0 = 0, lr = 0.1 gives 0.4 then 0.64.
    x = np.ones((2, 2), np.float32)
    lrs = [0.1, 0.05, 0.2, 0.01, 0.15]
    result = core.lr_traces(lrs, x, x, 0.0)
    assert result.traces_traced == 1
    assert result.traces_static == len(lrs)
    assert result.weights[0] == pytest.approx(0.64, rel=1e-6)
    # Independent float64 reference: w <- w - lr * 2 * sum((w*x - y) * x), once per row.
    for lr, got in zip(lrs, result.weights, strict=True):
        w = 0.0
        for row in np.ones((2, 2)):
            w -= lr * 2 * np.sum((w * row - row) * row)
        assert got == pytest.approx(w, rel=1e-6)


def test_lr_traces_counts_only_its_own_traces():
    x = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    y = 2 * x
    first = core.lr_traces([0.01, 0.02], x, y)
    second = core.lr_traces([0.01, 0.02, 0.03], x, y)
    assert (first.traces_traced, first.traces_static) == (1, 2)
    assert (second.traces_traced, second.traces_static) == (1, 3)
    np.testing.assert_allclose(second.weights[:2], first.weights, rtol=1e-6)


@pytest.mark.parametrize(
    ("lrs", "x", "w0", "error", "message"),
    [
        ([], np.ones((2, 2), np.float32), 0.0, ValueError, "lrs must hold 1 to 64"),
        ([[0.1]], np.ones((2, 2), np.float32), 0.0, ValueError, "lrs must hold 1 to 64"),
        ([float("nan")], np.ones((2, 2), np.float32), 0.0, ValueError, "lrs must be finite"),
        ([True], np.ones((2, 2), np.float32), 0.0, TypeError, "lrs must be a real number"),
        ([0.1], np.ones(3, np.float32), 0.0, ValueError, "x_batches and y_batches must share"),
        ([0.1], np.ones((2, 2), np.int32), 0.0, TypeError, "x_batches and y_batches must be one floating"),
        ([0.1], np.ones((2, 2), np.float32), float("inf"), ValueError, "w0 must be finite"),
    ],
)
def test_lr_traces_bad_input_names_the_argument(lrs, x, w0, error, message):
    with pytest.raises(error, match=message):
        core.lr_traces(lrs, x, x, w0)


def test_the_learning_rate_in_each_place():
    # Closed over: the lesson's loop at a constant lr. Scanned and in the carry: the same decay,
    # against a float64 loop of lr * EXPONENTIAL_DECAY ** (k / N); the two agree to float32 rounding.
    rng = np.random.default_rng(21)
    for _ in range(20):
        n, b = int(rng.integers(2, 12)), int(rng.integers(1, 6))
        x = rng.normal(size=(n, b)).astype(np.float32)
        y = (1.5 * x + 0.1 * rng.normal(size=(n, b))).astype(np.float32)
        lr = float(core.critical_lr(x) * rng.uniform(0.05, 0.9))
        w0 = float(rng.normal())
        places = core.lr_places(w0, lr, x, y)
        weights, _ = lesson.lesson_history(np.float32(w0), np.float32(lr), x, y)
        np.testing.assert_array_equal(places["closed over"].weights, np.asarray(weights)[1:])
        w, want = w0, []
        for k in range(n):
            rate = lr * optimizers.EXPONENTIAL_DECAY ** (k / n)
            w = w - rate * 2 * np.sum((w * x[k].astype(np.float64) - y[k]) * x[k])
            want.append(w)
        scale = max(1.0, np.max(np.abs(want)))
        for name in ("scanned", "carry"):
            np.testing.assert_allclose(places[name].weights, want, rtol=0, atol=1e-5 * scale)
            assert places[name].final_w == float(places[name].weights[-1])
        np.testing.assert_allclose(
            places["scanned"].weights, places["carry"].weights, rtol=0, atol=1e-6 * scale
        )


def test_where_the_learning_rate_lives_is_read_from_each_jaxpr():
    x = np.ones((5, 2), np.float32)
    places = core.lr_places(0.0, 0.1, x, x)
    assert {name: place.where for name, place in places.items()} == {
        "closed over": "constant",
        "scanned": "scanned input",
        "carry": "carry",
    }
    assert "num_consts=1" in places["closed over"].jaxpr
    assert "i32[]" in places["carry"].jaxpr  # Optax's step count
    assert "i32[]" not in places["scanned"].jaxpr


def test_a_learning_rate_move_does_not_compile_the_places_again(count_compiles):
    x = np.ones((5, 2), np.float32)
    core.lr_places(0.0, 0.1, x, x)
    with count_compiles() as compiles:
        finals = {core.lr_places(0.0, lr, x, x)["carry"].final_w for lr in (0.05, 0.2, 0.3)}
    assert compiles == [] and len(finals) == 3


@pytest.mark.parametrize(
    "args, error, words",
    [
        ((0.0, float("nan"), np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)), ValueError, "lr"),
        ((True, 0.1, np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)), TypeError, "w must"),
        ((0.0, 0.1, np.ones(2, np.float32), np.ones(2, np.float32)), ValueError, "x_batches"),
        ((0.0, 0.1, np.ones((2, 2), np.int32), np.ones((2, 2), np.int32)), TypeError, "floating"),
    ],
)
def test_lr_places_bad_arguments_name_themselves(args, error, words):
    with pytest.raises(error, match=words):
        core.lr_places(*args)
