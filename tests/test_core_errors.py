"""Bad input gets a clear error naming the argument, never a traceback from inside XLA."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import core

X, Y = core.make_batches(3, 2, seed=0)

BAD_CALLS = {
    "shapes differ": (lambda f: f(0.0, 0.1, X, Y[:, :1]), ValueError, "same shape"),
    "x not 2-D": (lambda f: f(0.0, 0.1, X[0], Y[0]), ValueError, "x_batches must be 2-D"),
    "y 3-D": (lambda f: f(0.0, 0.1, X, Y[None]), ValueError, "y_batches must be 2-D"),
    "N = 0": (lambda f: f(0.0, 0.1, X[:0], Y[:0]), ValueError, "x_batches must hold at least one batch"),
    "B = 0": (
        lambda f: f(0.0, 0.1, X[:, :0], Y[:, :0]),
        ValueError,
        "x_batches must hold at least one example",
    ),
    "integer x": (
        lambda f: f(0.0, 0.1, X.astype(np.int32), Y),
        TypeError,
        "x_batches must hold real floating",
    ),
    "boolean y": (lambda f: f(0.0, 0.1, X, Y > 0), TypeError, "y_batches must hold real floating"),
    "complex x": (lambda f: f(0.0, 0.1, X.astype(np.complex64), Y), TypeError, "x_batches .*complex"),
    "string x": (lambda f: f(0.0, 0.1, [["a", "b"]], Y), TypeError, "x_batches"),
    "vector w": (lambda f: f(np.zeros(2, np.float32), 0.1, X, Y), ValueError, "w must be a scalar"),
    "vector lr": (lambda f: f(0.0, np.array([0.1, 0.2]), X, Y), ValueError, "lr must be a scalar"),
    "NaN lr": (lambda f: f(0.0, float("nan"), X, Y), ValueError, "lr must be finite"),
    "inf lr": (lambda f: f(0.0, np.float32(np.inf), X, Y), ValueError, "lr must be finite"),
    "NaN w": (lambda f: f(jnp.float32(jnp.nan), 0.1, X, Y), ValueError, "w must be finite"),
    "-inf w": (lambda f: f(-float("inf"), 0.1, X, Y), ValueError, "w must be finite"),
    "complex lr": (lambda f: f(0.0, 0.1j, X, Y), TypeError, "lr must be a real number"),
    "boolean w": (lambda f: f(True, 0.1, X, Y), TypeError, "w must be a real number"),
    "string lr": (lambda f: f(0.0, "0.1", X, Y), TypeError, "lr must be a real number"),
    "huge int lr": (lambda f: f(0.0, 10**400, X, Y), ValueError, "lr must be finite"),
    "w overflows float32": (
        lambda f: f(1e39, 0.1, X, Y),
        ValueError,
        "w = 1e.39 overflows the carry dtype float32",
    ),
    "lr overflows float32": (lambda f: f(0.0, 1e39, X, Y), ValueError, "lr = 1e.39 overflows"),
    "w overflows float16": (
        lambda f: f(1e5, 0.1, X.astype(np.float16), Y.astype(np.float16)),
        ValueError,
        "w = 100000 overflows the carry dtype float16",
    ),
    "longdouble x": (
        lambda f: f(0.0, 0.1, X.astype(np.longdouble), Y),
        TypeError,
        "unsupported floating dtype",
    ),
    "masked x": (lambda f: f(0.0, 0.1, np.ma.masked_less(X, 0), Y), TypeError, "masked array"),
}

FUNCTIONS = {
    "scan_training_step": core.scan_training_step,
    "training_history": core.training_history,
    "accumulated_gradient_step": core.accumulated_gradient_step,
    "python_loop_training_step": core.python_loop_training_step,
    "engine": core.HistoryEngine(max_steps=8, max_batch=8).history,
}


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("case", BAD_CALLS)
def test_bad_input_names_the_argument(function, case):
    call, error, message = BAD_CALLS[case]
    with pytest.raises(error, match=message):
        call(FUNCTIONS[function])


@pytest.mark.parametrize("loss", ["Sum", "", None, "median", 1])
def test_unknown_loss(loss):
    with pytest.raises(ValueError, match="loss must be 'sum' or 'mean'"):
        core.training_history(0.0, 0.1, X, Y, loss=loss)
    with pytest.raises(ValueError, match="loss must be 'sum' or 'mean'"):
        core.critical_lr(X, loss=loss)


def test_decimal_and_fraction_are_real_numbers():
    from decimal import Decimal
    from fractions import Fraction

    expected = float(core.scan_training_step(0.5, 0.125, X, Y))
    assert float(core.scan_training_step(Decimal("0.5"), Fraction(1, 8), X, Y)) == expected


def test_shape_and_dtype_checks_run_under_jit():
    with pytest.raises(ValueError, match="same shape"):
        jax.jit(core.scan_training_step)(0.0, 0.1, X, Y[:, :1])
    with pytest.raises(ValueError, match="w must be a scalar"):
        jax.jit(core.scan_training_step)(jnp.zeros(2), 0.1, X, Y)
    with pytest.raises(TypeError, match="x_batches must hold real floating"):
        jax.jit(core.scan_training_step)(0.0, 0.1, X.astype(np.int32), Y)


def test_traced_nan_is_not_inspected_but_the_host_functions_refuse_tracers():
    # Under jit a NaN lr cannot be seen; it flows through as data.
    assert np.isnan(float(jax.jit(core.scan_training_step)(0.0, jnp.nan, X, Y)))
    with pytest.raises(TypeError, match="cannot run under jax.jit"):
        jax.jit(core.training_history)(0.0, 0.1, X, Y)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n": 0, "b": 2, "seed": 0}, ValueError, "n must be at least 1"),
        ({"n": 2, "b": -1, "seed": 0}, ValueError, "b must be at least 1"),
        ({"n": 2.5, "b": 2, "seed": 0}, TypeError, "n must be an integer"),
        ({"n": True, "b": 2, "seed": 0}, TypeError, "n must be an integer"),
        ({"n": 2, "b": 2, "seed": -1}, ValueError, "seed must be a non-negative integer"),
        ({"n": 2, "b": 2, "seed": 0, "kind": "uniform"}, ValueError, "kind must be one of"),
        ({"n": 2, "b": 2, "seed": 0, "noise": -0.1}, ValueError, "noise must be at least 0"),
        ({"n": 2, "b": 2, "seed": 0, "noise": float("nan")}, ValueError, "noise must be finite"),
        ({"n": 2, "b": 2, "seed": 0, "true_w": float("inf")}, ValueError, "true_w must be finite"),
        ({"n": 2, "b": 2, "seed": 0, "dtype": np.int32}, TypeError, "dtype must be a floating dtype"),
    ],
)
def test_make_batches_bad_input(kwargs, error, message):
    with pytest.raises(error, match=message):
        core.make_batches(**kwargs)


def test_divergence_does_not_raise_or_warn():
    # pytest turns warnings into errors for this suite, so a warning would fail here.
    history = core.training_history(0.0, 1e3, X, Y)
    assert history.diverged_at is not None
    assert abs(history.weights[history.diverged_at + 1]) > core.DIVERGENCE_RATIO
