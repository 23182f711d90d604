"""Deterministic microbatches for the 1-D problem y = w*x, and for y = w*x + b."""

from __future__ import annotations

import numbers
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from core._checks import check_positive_int

KINDS = ("gaussian", "ones")


def _finite(name: str, value, minimum=None) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}"[:200])
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def _row_normals(seed: int, stream: int, n: int, b: int) -> np.ndarray:
    # One generator per (stream, row): row i never depends on n, and its first b values never on b.
    # Each row is drawn into its place: stacking the rows copied all of them once more.
    out = np.empty((n, b))
    for i in range(n):
        np.random.default_rng([seed, stream, i]).standard_normal(out=out[i])
    return out


class Draws(NamedTuple):
    """The float64 random draws behind `make_batches`, shape (n, b): x, and the unit noise eps
    (None when drawn with `with_eps=False`)."""

    x: np.ndarray
    eps: np.ndarray | None
    kind: str


def draw_batches(n, b, *, seed, kind="gaussian", with_eps=True) -> Draws:
    """The draws `make_batches(n, b, seed=seed, kind=kind, ...)` is made of.

    Draw once at the largest (n, b) you need and take smaller batches from it with
    `batches_from_draws`: since every value depends on (seed, row, column) only, those equal
    `make_batches` at the smaller size exactly. `with_eps=False` leaves the noise out (eps None),
    for data of noise 0 only: half of a gaussian draw's time, and all of a "ones" draw's.
    """
    n = check_positive_int("n", n)
    b = check_positive_int("b", b)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}"[:200])
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}"[:200])
    if not isinstance(with_eps, (bool, np.bool_)):
        raise TypeError(f"with_eps must be True or False, got {type(with_eps).__name__} {with_eps!r}"[:200])
    x = _row_normals(int(seed), 0, n, b) if kind == "gaussian" else np.ones((n, b))
    return Draws(x, _row_normals(int(seed), 1, n, b) if with_eps else None, kind)


def batches_from_draws(
    draws: Draws, n, b, *, true_w=None, noise=0.0, dtype=np.float32, x_mean=0.0, true_b=0.0
):
    """(x_batches, y_batches) of shape (n, b) from the top-left corner of `draws`; see `make_batches`.

    x_mean and true_b are applied here, not drawn: moving either needs no new draw."""
    n = check_positive_int("n", n)
    b = check_positive_int("b", b)
    if n > draws.x.shape[0] or b > draws.x.shape[1]:
        raise ValueError(f"(n, b) = ({n}, {b}) is larger than the draws, {draws.x.shape}")
    if true_w is None:
        true_w = 2.0 if draws.kind == "gaussian" else 1.0
    true_w = _finite("true_w", true_w)
    noise = _finite("noise", noise, minimum=0.0)
    x_mean = _finite("x_mean", x_mean)
    true_b = _finite("true_b", true_b)
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating dtype, got {dtype!r}") from None
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    x = draws.x[:n, :b]
    # Skipped at 0 rather than added: the defaults then give the 1-D data bit for bit (x + 0.0
    # would turn a -0.0 into 0.0).
    if x_mean:
        x = x + x_mean
    y = true_w * x
    if true_b:
        y = y + true_b
    if noise:
        if draws.eps is None:
            raise ValueError(f"noise must be 0 for draws made with with_eps=False, got {noise}")
        y = y + noise * draws.eps[:n, :b]
    return x.astype(dtype), y.astype(dtype)


def make_batches(
    n, b, *, seed, kind="gaussian", true_w=None, noise=0.0, dtype=np.float32, x_mean=0.0, true_b=0.0
):
    """N microbatches of B examples each, as two (n, b) NumPy arrays (x_batches, y_batches).

    kind="gaussian": x ~ N(x_mean, 1) and y = true_w*x + true_b + noise*eps with eps ~ N(0, 1);
      true_w defaults to 2.0.
    kind="ones": x = 1 + x_mean and y = true_w*x + true_b + noise*eps; true_w defaults to 1.0, so
      the defaults give the worked example (make_batches(2, 2, seed=0, kind="ones") is its
      xs = ys = ones((2, 2))).

    x_mean and true_b (finite reals, default 0) are for the model y = w*x + b: x_mean = 0 makes w
    and b independent, a larger |x_mean| couples them (the valley of the loss over (w, b) grows
    long and narrow). At their defaults the data is the 1-D problem's, bit for bit.

    The draw is a function of (seed, row, column) only: growing n appends batches and growing b
    appends examples to every batch, leaving the others as they were, so a slider on N or B changes
    just what it names. Values are drawn in float64 and rounded once to `dtype`.
    """
    # Anything but a real 0 draws eps, and batches_from_draws then says what is wrong with it.
    with_eps = not (isinstance(noise, numbers.Real) and noise == 0)
    return batches_from_draws(
        draw_batches(n, b, seed=seed, kind=kind, with_eps=with_eps),
        n,
        b,
        true_w=true_w,
        noise=noise,
        dtype=dtype,
        x_mean=x_mean,
        true_b=true_b,
    )
