"""Argument checks shared by the core functions.

Shape and dtype checks read only an array's abstract value, so they also run on tracers under
`jax.jit`. Value checks (a finite `w` or `lr`) need a concrete number and are skipped for traced
arguments. Every error names the argument and says what was expected.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp
import numpy as np

LOSSES = ("sum", "mean")


def check_loss(loss) -> bool:
    """Return True for the mean loss, False for the sum loss."""
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"loss must be 'sum' or 'mean', got {loss!r}")
    return loss == "mean"


def is_traced(value) -> bool:
    return isinstance(value, jax.core.Tracer)


SUPPORTED_FLOATS = tuple(jnp.dtype(t) for t in ("float16", "bfloat16", "float32", "float64"))


def _as_array(name: str, value):
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array; its mask would be lost: fill or drop the masked values")
    if isinstance(value, (jax.Array, np.ndarray)):
        return value
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as err:
        raise TypeError(f"{name} must be an array of real floating-point numbers; {err}") from None


def _describe_dtype_problem(name: str, dtype) -> str | None:
    if jnp.dtype(dtype) in SUPPORTED_FLOATS:
        return None
    if jnp.issubdtype(dtype, jnp.floating):
        kind = "unsupported floating"
    elif jnp.issubdtype(dtype, jnp.complexfloating):
        kind = "complex"
    elif jnp.issubdtype(dtype, jnp.bool_):
        kind = "boolean"
    elif jnp.issubdtype(dtype, jnp.integer):
        kind = "integer"
    else:
        kind = "non-numeric"
    return (
        f"{name} must hold real floating-point values (float32, float64, bfloat16 or float16), "
        f"got {kind} dtype {dtype}; convert it, e.g. {name}.astype('float32')"
    )


def check_batch_array(name: str, value):
    """A real floating (N, B) array with N >= 1 and B >= 1; returned unconverted."""
    array = _as_array(name, value)
    problem = _describe_dtype_problem(name, array.dtype)
    if problem:
        raise TypeError(problem)
    if array.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D with shape (N, B): N batches of B examples; got shape {tuple(array.shape)}"
        )
    n, b = array.shape
    if n == 0:
        raise ValueError(f"{name} must hold at least one batch (N >= 1); got shape {tuple(array.shape)}")
    if b == 0:
        raise ValueError(
            f"{name} must hold at least one example per batch (B >= 1); got shape {tuple(array.shape)}"
        )
    return array


def check_batches(x_batches, y_batches):
    """Both batch arrays, checked and of one shape (N, B)."""
    x = check_batch_array("x_batches", x_batches)
    y = check_batch_array("y_batches", y_batches)
    if x.shape != y.shape:
        raise ValueError(
            "x_batches and y_batches must have the same shape (N, B); "
            f"got x_batches {tuple(x.shape)} and y_batches {tuple(y.shape)}"
        )
    return x, y


def check_scalar(name: str, value):
    """A real scalar: a Python int or float, or an array of shape () and real dtype.

    Returns the value unconverted. A concrete value must be finite; a traced one is not inspected.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got a boolean {value!r}")
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got complex {value!r}")
    if isinstance(value, numbers.Number) and not hasattr(value, "dtype"):  # int, float, Fraction, Decimal
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(f"{name} must be finite, got {value!r}"[:200]) from None
    elif hasattr(value, "dtype") and hasattr(value, "shape"):
        dtype = value.dtype
        if not (jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer)):
            raise TypeError(f"{name} must be a real number, got an array of dtype {dtype}")
        if tuple(value.shape) != ():
            raise ValueError(f"{name} must be a scalar (shape ()), got shape {tuple(value.shape)}")
        if is_traced(value):
            return value
        number = float(np.asarray(value, dtype=np.float64))
    else:
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}"[:200])
    if not np.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number}")
    return value


def data_dtype(x, y):
    """The dtype the batches compute in: both promoted, then canonicalized (float64 -> float32
    unless `jax_enable_x64` is on)."""
    with jax.numpy_dtype_promotion("standard"):  # mixed batch dtypes promote even under "strict"
        return jax.dtypes.canonicalize_dtype(jnp.promote_types(x.dtype, y.dtype))


def carry_dtype(w, fallback):
    """The scan carry's dtype: `w`'s own floating dtype; a Python number, a weakly typed scalar or
    an integer takes `fallback` (the data's dtype)."""
    dtype = getattr(w, "dtype", None)
    if dtype is None or getattr(w, "weak_type", False) or not jnp.issubdtype(dtype, jnp.floating):
        return jnp.dtype(fallback)
    return jax.dtypes.canonicalize_dtype(dtype)


def reject_traced(function: str, *values) -> None:
    if any(is_traced(v) for v in values):
        raise TypeError(
            f"{function} returns NumPy arrays and a Python diverged_at, so it cannot run under jax.jit "
            "or another transformation; call it on concrete arrays, or jit scan_training_step instead"
        )


def check_fits(name: str, value, dtype) -> None:
    """A concrete finite value must also be finite once cast to the carry dtype."""
    if is_traced(value):
        return
    if abs(float(np.asarray(value, dtype=np.float64))) > float(jnp.finfo(dtype).max):
        raise ValueError(f"{name} = {float(value):g} overflows the carry dtype {jnp.dtype(dtype)}")


def check_momentum(momentum) -> float:
    """A concrete real momentum in [0, 1), as a Python float."""
    check_scalar("momentum", momentum)
    value = float(np.asarray(momentum, dtype=np.float64))
    if not 0.0 <= value < 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {value:g}")
    return value


PARAMS = ("w", "b")
"""The keys of the parameter pytree of y = w*x + b."""

MODELS = (("w",), PARAMS)
"""The params pytrees a run takes, by their keys: y = w*x and y = w*x + b (`core.model`)."""


def check_params(params, name: str = "params", models=MODELS) -> tuple:
    """A dict whose keys are exactly one of `models`' (each a tuple of keys), each value a real
    scalar as `check_scalar` takes it (finite when concrete). Returns that model's keys. Errors
    name the argument (`name`) and the key."""
    shapes = " or ".join("{" + ", ".join(f'"{key}": {key}0' for key in keys) + "}" for keys in models)
    if not isinstance(params, dict):
        raise TypeError(f"{name} must be a dict {shapes}, got {type(params).__name__}"[:200])
    model = next((keys for keys in models if set(params) == set(keys)), None)
    if model is None:
        widest = models[-1]
        missing = [key for key in widest if key not in params]
        extra = [key for key in params if key not in widest]
        names = " or ".join(" and ".join(f'"{key}"' for key in keys) for keys in models)
        raise ValueError(
            f"{name} must have exactly the keys {names}; missing {missing}, unexpected {extra}"[:200]
        )
    for key in model:
        check_scalar(f'{name}["{key}"]', params[key])
    return model


def check_schedule(lr_schedule, n: int) -> np.ndarray:
    """lr_schedule as a float64 array of shape (n,): real floating, finite."""
    if isinstance(lr_schedule, (bool, np.bool_, str, bytes)) or np.ndim(lr_schedule) != 1:
        shape = np.shape(lr_schedule) if not isinstance(lr_schedule, (str, bytes)) else "a string"
        raise ValueError(f"lr_schedule must be a 1-D array of N = {n} learning rates, got {shape}")
    values = np.asarray(lr_schedule)
    if not np.issubdtype(values.dtype, np.floating):
        raise TypeError(
            f"lr_schedule must hold real floating-point learning rates, got dtype {values.dtype}; "
            "convert it, e.g. lr_schedule.astype('float32')"
        )
    if values.shape != (n,):
        raise ValueError(f"lr_schedule must have one learning rate per step, N = {n}, got {values.shape[0]}")
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"lr_schedule must be finite, got {values[k]} at step {k}")
    return values.astype(np.float64)


def check_positive_int(name: str, value) -> int:
    """A whole number >= 1 (not a bool), as an int; errors name the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}"[:200])
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return int(value)
