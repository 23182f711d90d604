"""A stored set of core's runs, to prove that a change to the engine leaves its numbers as they are.

`runs()` computes, through core's public functions only, the runs of both models (the lesson's `w`
and `w, b`) on a few data sets and settings: every optimizer and schedule, both losses, a diverging
run, the padded engine's corners, the exercise's functions, the stability maps and the theory.
`tests/test_stored_runs.py` compares them with tests/data/stored_runs.npz, bit for bit. After a
change that is meant to alter numbers, rewrite the file and say why in the commit:

    JAX_PLATFORMS=cpu .venv/bin/python -m tools.stored_runs --write
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

STORED = Path(__file__).resolve().parent.parent / "tests" / "data" / "stored_runs.npz"

# (name, n, b, w0, lr, make_batches' arguments): the default run, noisy data off centre, a diverging
# run, one of B = 1.
SETTINGS = [
    ("default", 12, 8, 0.0, 0.02, {"seed": 0}),
    ("shifted", 30, 5, -1.5, 0.05, {"seed": 3, "noise": 0.5, "x_mean": 2.0, "true_b": 1.0}),
    ("diverging", 20, 16, 0.5, 0.4, {"seed": 1}),
    ("single", 9, 1, 2.0, 0.3, {"seed": 2, "noise": 0.1}),
]


def _flat(prefix: str, value, out: dict) -> None:
    """Every array of `value` (a NamedTuple, dict, array, number or None) under prefix/... keys."""
    if value is None:
        out[prefix] = np.array(-1)
    elif hasattr(value, "_asdict"):
        for key, item in value._asdict().items():
            _flat(f"{prefix}/{key}", item, out)
    elif isinstance(value, dict):
        for key, item in value.items():
            _flat(f"{prefix}/{key}", item, out)
    elif isinstance(value, (tuple, list)) and not isinstance(value, np.ndarray):
        for i, item in enumerate(value):
            _flat(f"{prefix}/{i}", item, out)
    elif isinstance(value, str):
        out[prefix] = np.array(value)
    else:
        out[prefix] = np.asarray(value)


def runs() -> dict:
    """{key: NumPy array} of every stored run (see the module docstring)."""
    import core
    from core.contours import nearest_minimum, valley_ratio

    out: dict = {}
    engine = core.HistoryEngine(max_steps=40, max_batch=32)
    for name, n, b, w0, lr, drawn in SETTINGS:
        x, y = core.make_batches(n, b, **drawn)
        x, y = np.asarray(x), np.asarray(y)
        params = {"w": w0, "b": -0.5}
        for loss in ("sum", "mean"):
            _flat(f"{name}/training/{loss}", core.training_history(w0, lr, x, y, loss=loss), out)
        _flat(f"{name}/scan", core.scan_training_step(w0, lr, x, y), out)
        _flat(f"{name}/python_loop", core.python_loop_training_step(w0, lr, x, y), out)
        _flat(f"{name}/accumulated", core.accumulated_gradient_step(w0, lr, x, y), out)
        padded = engine.pad(x, y)
        corner = engine.corner(padded, max(1, n - 3), max(1, b // 2))
        _flat(f"{name}/engine", engine.histories(w0, lr, padded), out)
        _flat(f"{name}/corner", engine.histories(w0, lr, corner), out)
        schedule = core.lr_schedule("cosine", lr, n)
        for optimizer in core.OPTIMIZERS:
            for loss in ("sum", "mean"):
                key = f"{name}/{optimizer}/{loss}"
                _flat(f"{key}/w", core.optimizer_history(w0, lr, x, y, optimizer=optimizer, loss=loss), out)
                _flat(f"{key}/wb", core.pytree_history(params, lr, x, y, optimizer=optimizer, loss=loss), out)
            _flat(
                f"{name}/{optimizer}/cosine/w",
                core.optimizer_history(w0, lr, x, y, optimizer=optimizer, lr_schedule=schedule),
                out,
            )
            _flat(
                f"{name}/{optimizer}/cosine/wb",
                core.pytree_history(params, lr, x, y, optimizer=optimizer, lr_schedule=schedule),
                out,
            )
            _flat(
                f"{name}/{optimizer}/padded/w",
                core.optimizer_histories(w0, lr, corner, optimizer=optimizer, momentum=0.6),
                out,
            )
            _flat(
                f"{name}/{optimizer}/padded/wb",
                core.pytree_histories(params, lr, corner, optimizer=optimizer, momentum=0.6),
                out,
            )
        lrs = np.geomspace(1e-3, 1.0, 6)
        sizes = np.unique(np.clip([1, 2, 4, b], 1, b))
        momenta = np.array([0.0, 0.5, 0.9])
        _flat(f"{name}/map/w", core.stability_map(padded, lrs, sizes, w0=w0), out)
        _flat(f"{name}/map/wb", core.pytree_stability_map(padded, lrs, sizes, params0=params), out)
        _flat(f"{name}/momentum_map/w", core.momentum_map(padded, lrs, momenta, batch_size=b, w0=w0), out)
        _flat(
            f"{name}/momentum_map/wb",
            core.pytree_momentum_map(padded, lrs, momenta, batch_size=b, params0=params),
            out,
        )
        data = core.moments(x, y)
        for intercept in (False, True):
            key = f"{name}/theory/{'wb' if intercept else 'w'}"
            _flat(f"{key}/optimum", core.optimum(data, intercept=intercept), out)
            _flat(f"{key}/critical", core.critical_lrs(data, intercept=intercept), out)
            _flat(f"{key}/critical_momentum", core.critical_lrs(data, momentum=0.5, intercept=intercept), out)
            for loss in ("sum", "mean"):
                factors = core.step_factors(lr, data, loss=loss, intercept=intercept)
                _flat(f"{key}/factors/{loss}", factors, out)
                _flat(f"{key}/regime/{loss}", core.regime(lr, data, loss=loss, intercept=intercept), out)
        weights = np.linspace(-2.0, 3.0, 7)
        _flat(f"{name}/theory/w/average_loss", core.average_loss(weights, data), out)
        _flat(f"{name}/theory/wb/average_loss", core.average_loss(weights, data, b=weights[::-1]), out)
        _flat(f"{name}/theory/wb/nearest", nearest_minimum(data, (w0, -0.5)), out)
        _flat(f"{name}/theory/wb/valley", valley_ratio(data), out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {STORED.name} anew")
    args = parser.parse_args()
    computed = runs()
    if args.write:
        STORED.parent.mkdir(exist_ok=True)
        np.savez_compressed(STORED, **computed)
        print(f"wrote {len(computed)} arrays to {STORED}")
        return
    stored = dict(np.load(STORED))
    differ = [key for key in computed if key not in stored or not same_bits(stored[key], computed[key])]
    print(f"{len(computed)} arrays, {len(differ)} differ: {differ[:20]}")


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit (NaNs of the same place are equal), of the same dtype and shape."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if not np.array_equal(nan, np.isnan(b)):
            return False
        # Bits, so that -0.0 and 0.0 differ; any NaN payload is the same NaN.
        return np.array_equal(a[~nan].view(np.uint8), b[~nan].view(np.uint8))
    return np.array_equal(a, b)


if __name__ == "__main__":
    main()
