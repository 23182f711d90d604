"""The compiled engine against the ways a learner would first write the same thing, on the same data.
Prints figures and an agreement check; asserts nothing (timings are not tests).

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.naive [--json PATH]

Data: core.make_batches(1000, 512, seed=0), lr = 1e-3, w0 = 0.5, the sum loss, float32. Rows:

  engine      core.HistoryEngine(1000, 512) after warm_up(): engine.run, the full per-step history.
  (a)         a NumPy Python loop computing the same history (weights, losses, gradients).
  (b)         a Python loop over a jitted step with float() every step (seed 004's pattern, and the
              host sync it warns about); (b') is core.python_loop_training_step, the same loop with
              no float() per step and only the final weight.
  (c)         a plain jax.jit of a lax.scan history on exact-shape arrays, timed as a slider feels it:
              the first call at each new (N, B) of a sequence (trace + compile + run), against the
              engine (pad + run, nothing compiled) on the same sequence.
  (d)         core.stability_map on the explorer's 64 x 32 grid at n = 200, against nested Python
              loops calling one jitted cell (core.stability's own per-cell scan) for every cell.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import core
from core import stability
from harness.compiles import counting
from harness.stats import summary

N, B, LR, W0 = 1000, 512, 1e-3, 0.5
# (c): a slider walk over distinct shapes; each one is a new trace and compile for a plain jit.
SHAPES = [(1000, 512), (1000, 448), (1000, 384), (1000, 320), (1000, 256), (900, 256), (800, 256), (700, 256)]
# (d): the explorer's grid (widgets.model's MAP_LRS and MAP_BATCH_SIZES) and its n.
MAP_N, MAP_LRS, MAP_SIZES = 200, 64, 32
LOOP_BUDGET_S = 60.0  # above this, the map's Python loop is timed on a subset of rows and extrapolated


def distinct_geometric(low: int, high: int, count: int) -> np.ndarray:
    """`count` distinct integers from low to high, spaced geometrically where the integers allow
    (what widgets.model uses for the map's batch sizes)."""
    values = np.rint(np.geomspace(low, high, count)).astype(np.int64)
    for i in range(1, count):
        values[i] = max(values[i], values[i - 1] + 1)
    for i in range(count - 2, -1, -1):
        values[i] = min(values[i], values[i + 1] - 1)
    return values


def timed(call, repeats: int, warm: bool = True) -> tuple[list[float], object]:
    """Milliseconds of `repeats` calls (after one untimed call if `warm`), and the last result."""
    result = call() if warm else None
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - start) * 1e3)
    return times, result


# (a) NumPy, as a learner would write it --------------------------------------------------------------


def numpy_history(w0, lr, x_batches, y_batches):
    n = x_batches.shape[0]
    weights = np.empty(n + 1, dtype=np.float32)
    losses = np.empty(n, dtype=np.float32)
    grads = np.empty(n, dtype=np.float32)
    w, lr = np.float32(w0), np.float32(lr)
    weights[0] = w
    for k in range(n):
        x, y = x_batches[k], y_batches[k]
        error = w * x - y
        losses[k] = np.sum(error * error)
        grads[k] = 2 * np.sum(error * x)
        w = w - lr * grads[k]
        weights[k + 1] = w
    return weights, losses, grads


# (b) seed 004: a Python loop over a jitted step, float() every step ---------------------------------


def loss_fn(w, x, y):
    error = w * x - y
    return (error**2).sum()


@jax.jit
def train_step(w, x, y, lr):
    loss, grad = jax.value_and_grad(loss_fn)(w, x, y)
    return w - lr * grad, loss, grad


def jitted_step_loop(w0, lr, x_batches, y_batches):
    w, lr = jnp.float32(w0), jnp.float32(lr)
    weights, losses, grads = [float(w)], [], []
    for x, y in zip(x_batches, y_batches, strict=True):
        w, loss, grad = train_step(w, x, y, lr)
        losses.append(float(loss))  # the host sync seed 004 warns about
        grads.append(float(grad))
        weights.append(float(w))
    return np.asarray(weights, np.float32), np.asarray(losses, np.float32), np.asarray(grads, np.float32)


# (c) a plain jit of a lax.scan history: every new (N, B) is a new compile ------------------------------


@jax.jit
def scan_history(w0, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        loss, grad = jax.value_and_grad(loss_fn)(w, x, y)
        new_w = w - lr * grad
        return new_w, (new_w, loss, grad)

    _, (weights, losses, grads) = lax.scan(step, w0, (x_batches, y_batches))
    return jnp.concatenate([w0[None], weights]), losses, grads


def scan_history_numpy(w0, lr, x_batches, y_batches):
    outputs = scan_history(jnp.float32(w0), jnp.float32(lr), x_batches, y_batches)
    return tuple(np.asarray(a) for a in outputs)


# (d) the stability map, one jitted cell per (B, lr, loss) ----------------------------------------------


@jax.jit
def cell_inputs(x, y, b, w0, star):
    """One batch size's row sums ((Sxx,), (Sxy,)), divergence reference and limit, as
    core.stability's kernel takes them; star (1,) the optimum w*_B."""
    sxx = jnp.cumsum(x * x, axis=1)[:, b - 1]
    sxy = jnp.cumsum(x * y, axis=1)[:, b - 1]
    start = w0.astype(x.dtype)[None]
    reference = jnp.where(jnp.isfinite(star), star, start)
    limit = core.DIVERGENCE_RATIO * jnp.maximum(1.0, jnp.abs(start - reference)[0])
    return ((sxx,), (sxy,)), reference, limit


def optima(batches, batch_sizes, n):
    """w*_B (K, 1) float32 of x[:n, :B] for each B, as stability_map takes it (float64 NumPy)."""
    x, y = np.asarray(batches.x)[:n], np.asarray(batches.y)[:n]
    return np.array([[core.optimum(x[:, :b], y[:, :b])] for b in batch_sizes], np.float32)


one_cell = jax.jit(stability._run)  # the per-cell scan that stability_map vmaps over lr, B and loss


def map_loop(batches, lrs, batch_sizes, w0, n, rows):
    """Final weights and divergence flags (2, len(rows), L) of the cells in `rows` of the grid."""
    x, y = batches.x, batches.y
    stars = optima(batches, batch_sizes, n)
    params0, n = jnp.float32([w0]), jnp.int32(n)
    momentum = jnp.float32(0)  # plain SGD, as the lr x B map
    finals = np.empty((2, len(rows), len(lrs)), np.float32)
    diverged = np.empty((2, len(rows), len(lrs)), bool)
    for i, k in enumerate(rows):
        b = int(batch_sizes[k])
        sums, reference, limit = cell_inputs(x, y, jnp.int32(b), params0[0], stars[k])
        for loss, scale in enumerate((jnp.float32(1), jnp.float32(b))):
            for j, lr in enumerate(lrs):
                w, bad = one_cell(params0, jnp.float32(lr), momentum, scale, sums, n, reference, limit)
                finals[loss, i, j], diverged[loss, i, j] = w[0], bad
    return finals, diverged


def map_kernel(batches, lrs, batch_sizes, w0, n):
    """core.stability's compiled grid alone (private): no float64 critical_lr (w*_B is computed
    first, as stability_map does). Final weights (2, K, L) and flags."""
    finals, diverged = stability._map_kernel(
        batches.x,
        batches.y,
        np.asarray(lrs, np.float32),
        np.asarray(batch_sizes, np.int32),
        np.float32([w0]),
        np.int32(n),
        optima(batches, batch_sizes, n),
        names=("w",),
    )
    return np.asarray(finals)[..., 0], np.asarray(diverged)


# -------------------------------------------------------------------------------------------------------


def row(name: str, times: list[float], reference: str, note: str = "") -> dict:
    stats = summary(times)
    return {
        "row": name,
        "n": stats["n"],
        "min_ms": stats["min"],
        "median_ms": stats["median"],
        "max_ms": stats["max"],
        "reference": reference,
        "note": note,
    }


def relative(a, b) -> float:
    return float(abs(float(a) - float(b)) / abs(float(b)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the rows and checks here")
    args = parser.parse_args(argv)

    x, y = core.make_batches(N, B, seed=0)
    engine = core.HistoryEngine(N, B)
    engine.warm_up()
    batches = engine.pad(x, y)
    rows, checks, notes = [], [], []

    def check(name: str, ok: bool, detail: str):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)

    print(f"N={N}, B={B}, lr={LR}, w0={W0}, sum loss, float32; jax {jax.__version__} on {jax.devices()[0]}")
    cache = jax.config.jax_compilation_cache_dir
    print(f"persistent compilation cache: {cache or 'off'}")
    if cache:
        notes.append(f"persistent compilation cache on ({cache}): (c)'s compiles may be cache hits")

    print("timing the engine, (a), (b), (b')", flush=True)
    times, engine_history = timed(lambda: engine.run(W0, LR, batches), 30)
    rows.append(row("engine.run, N=1000, B=512 (full history)", times, "engine"))
    times, numpy_result = timed(lambda: numpy_history(W0, LR, x, y), 15)
    rows.append(row("(a) NumPy Python loop, full history", times, "engine"))
    times, jitted_result = timed(lambda: jitted_step_loop(W0, LR, x, y), 5)
    rows.append(row("(b) Python loop over jitted step, float() each step", times, "engine"))
    times, loop_final = timed(
        lambda: core.python_loop_training_step(np.float32(W0), LR, x, y).block_until_ready(), 5
    )
    rows.append(row("(b') core.python_loop_training_step (no float(), final w only)", times, "engine"))

    print("timing (c): a new (N, B) per call", flush=True)
    first_calls, scan_finals, scan_histories = [], [], []
    with counting() as compiles:
        for n, b in SHAPES:
            xs, ys = x[:n, :b], y[:n, :b]
            start = time.perf_counter()
            weights, _, _ = scan_history_numpy(W0, LR, xs, ys)
            first_calls.append((time.perf_counter() - start) * 1e3)
            scan_finals.append(weights[-1])
            scan_histories.append(weights)
    new_compiles = len(compiles)
    engine_moves = []
    for _ in range(5):
        engine_finals, engine_histories = [], []
        for n, b in SHAPES:
            start = time.perf_counter()
            history = engine.run(W0, LR, engine.pad(x[:n, :b], y[:n, :b]))
            engine_moves.append((time.perf_counter() - start) * 1e3)
            engine_finals.append(history.weights[-1])
            engine_histories.append(history.weights)
    shapes = f"{len(SHAPES)} shapes"
    rows.append(row(f"engine.pad + run over {shapes} (no compile)", engine_moves, "engine, (c) sequence"))
    rows.append(
        row(
            f"(c) jit of lax.scan, first call at each new (N, B) ({new_compiles} XLA compiles)",
            first_calls,
            "engine, (c) sequence",
            f"one first call per shape, over {shapes}: {SHAPES}",
        )
    )
    times, _ = timed(lambda: scan_history_numpy(W0, LR, x, y), 30)
    # With the engine's rows (its reference), though timed only now: earlier, it would have compiled
    # (c)'s first shape.
    rows.insert(4, row("(c') the same jit of lax.scan, already compiled, N=1000, B=512", times, "engine"))

    print("timing (d): the stability map", flush=True)
    lrs = np.geomspace(1e-4, 10.0, MAP_LRS)
    batch_sizes = distinct_geometric(1, B, MAP_SIZES)
    cells = 2 * MAP_LRS * MAP_SIZES
    grid = f"{MAP_LRS} lrs x {MAP_SIZES} B x 2 losses, n={MAP_N}"
    times, the_map = timed(lambda: core.stability_map(batches, lrs, batch_sizes, w0=W0, n=MAP_N), 20)
    rows.append(row(f"core.stability_map, {grid}", times, "stability_map"))
    times, kernel_result = timed(lambda: map_kernel(batches, lrs, batch_sizes, W0, MAP_N), 20)
    rows.append(
        row(
            "stability_map's compiled grid alone (private _map_kernel: no critical_lr)",
            times,
            "stability_map",
        )
    )
    # One B row untimed to compile, one timed to size the loop.
    map_loop(batches, lrs, batch_sizes, W0, MAP_N, [0])
    start = time.perf_counter()
    map_loop(batches, lrs, batch_sizes, W0, MAP_N, [MAP_SIZES - 1])
    estimate = (time.perf_counter() - start) * MAP_SIZES
    if estimate <= LOOP_BUDGET_S:
        loop_rows = list(range(MAP_SIZES))
        repeats = 3 if estimate < 10 else 1
        times, (loop_finals, loop_diverged) = timed(
            lambda: map_loop(batches, lrs, batch_sizes, W0, MAP_N, loop_rows), repeats, warm=False
        )
        note = f"all {cells} cells, {repeats} runs"
    else:
        loop_rows = list(range(0, MAP_SIZES, 8))
        scale = MAP_SIZES / len(loop_rows)
        times, (loop_finals, loop_diverged) = timed(
            lambda: map_loop(batches, lrs, batch_sizes, W0, MAP_N, loop_rows), 1, warm=False
        )
        times = [t * scale for t in times]
        note = (
            f"EXTRAPOLATED: {len(loop_rows)} of {MAP_SIZES} B rows timed ({2 * MAP_LRS * len(loop_rows)} "
            f"cells), x{scale:g}; one B row estimated the whole loop at {estimate:.0f} s"
        )
        notes.append("(d) loop: " + note)
    rows.append(
        row(f"(d) nested Python loops, one jitted cell call per cell ({cells})", times, "stability_map", note)
    )

    print("agreement", flush=True)
    final = engine_history.weights[-1]
    for name, value in (
        ("(a) NumPy", numpy_result[0][-1]),
        ("(b) jitted step loop", jitted_result[0][-1]),
        ("(b') core.python_loop_training_step", loop_final),
    ):
        rel = relative(value, final)
        check(
            f"{name} final w vs engine, rtol 1e-4",
            rel <= 1e-4,
            f"{float(value)!r} vs {float(final)!r} (rel {rel:.1e})",
        )
    # The data have no noise, so every run reaches w* = 2 within a few steps: compare every step too.
    for name, result in (("(a)", numpy_result), ("(b)", jitted_result)):
        parts = zip(("weights", "losses", "grads"), result, engine_history[:3], strict=True)
        worst = {part: float(np.max(np.abs(a - e)) / np.max(np.abs(e))) for part, a, e in parts}
        check(
            f"{name} every step vs engine, max |difference| / max |engine|, 1e-4",
            max(worst.values()) <= 1e-4,
            ", ".join(f"{part} {value:.1e}" for part, value in worst.items()),
        )
    rel = max(relative(s, e) for s, e in zip(scan_finals, engine_finals, strict=True))
    check(f"(c) final w vs engine at each of the {shapes}, rtol 1e-4", rel <= 1e-4, f"max rel {rel:.1e}")
    worst = max(
        float(np.max(np.abs(s - e)) / np.max(np.abs(e)))
        for s, e in zip(scan_histories, engine_histories, strict=True)
    )
    check(f"(c) weights at every step vs engine, {shapes}, 1e-4", worst <= 1e-4, f"{worst:.1e}")
    kernel_finals, kernel_diverged = kernel_result
    expected_finals = kernel_finals[:, loop_rows]
    both = np.isfinite(loop_finals) & np.isfinite(expected_finals) & ~loop_diverged
    rel_cells = np.abs(loop_finals[both] - expected_finals[both]) / np.maximum(
        np.abs(expected_finals[both]), 1e-30
    )
    flags_equal = np.array_equal(loop_diverged, kernel_diverged[:, loop_rows])
    map_flags_equal = np.array_equal(
        np.stack([the_map.diverged["sum"], the_map.diverged["mean"]])[:, loop_rows], loop_diverged
    )
    check(
        f"(d) loop cells vs the map's cells ({loop_diverged.size}), rtol 1e-4",
        flags_equal and map_flags_equal and float(rel_cells.max(initial=0)) <= 1e-4,
        f"diverged flags equal: {flags_equal and map_flags_equal} ({int(loop_diverged.sum())} diverged); "
        f"final w of the {int(both.sum())} others: max rel {float(rel_cells.max(initial=0)):.1e}",
    )

    references = {r["reference"]: r["median_ms"] for r in reversed(rows)}
    for r in rows:
        r["ratio"] = r["median_ms"] / references[r["reference"]]
    print()
    print("ratio: median / the median of the first row of its section (engine.run at N=1000, B=512; the")
    print("engine over (c)'s shapes; core.stability_map)")
    print(f"{'row':<78}{'runs':>5}{'min':>10}{'median':>10}{'max':>10}{'ratio':>9}   (ms)")
    section = None
    for r in rows:
        if r["reference"] != section and section is not None:
            print()
        section = r["reference"]
        print(
            f"{r['row']:<78}{r['n']:>5}{r['min_ms']:>10.2f}{r['median_ms']:>10.2f}{r['max_ms']:>10.2f}"
            f"{r['ratio']:>9.2f}"
        )
    for note in notes:
        print("note:", note)
    if args.json:
        results = {
            "setup": {
                "N": N,
                "B": B,
                "lr": LR,
                "w0": W0,
                "loss": "sum",
                "dtype": "float32",
                "shapes": SHAPES,
            },
            "rows": rows,
            "checks": checks,
            "notes": notes,
        }
        args.json.write_text(json.dumps(results, indent=1, default=float) + "\n")
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
