"""Timings of core's compiled engine. Prints figures; asserts nothing (timings are not tests).

JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.engine [--json PATH] [--pytree]
"""

import argparse
import json
import time
from functools import partial
from pathlib import Path

import numpy as np

import core
from harness.compiles import counting
from harness.stats import summary


def _median_ms(call, repeats=30):
    """(median, p95) in ms of `repeats` calls, after one untimed call."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    stats = summary(times)
    return stats["median"], stats["p95"]


def _collected(start):
    """A call that starts a run and waits for its host arrays, as the explorer does."""
    return lambda: start()()


def pytree_moves(engine, repeats=30) -> list:
    """A move of the explorer's "w, b" model (`pytree_histories`, both losses) against the same
    move of the "w" model (`HistoryEngine.start` then collect, both losses) and against
    `optimizer_histories` (plain SGD), at the explorer's sizes: [{N, B, name: (median, p95)}]."""
    rows = []
    print(
        f"{'N':>5} {'B':>5}  median / p95 ms: pytree_histories   engine.start+collect   optimizer_histories"
    )
    for n, b in [(100, 16), (1000, 512)]:
        x, y = core.make_batches(n, b, seed=0, noise=0.3, x_mean=2.0, true_b=1.0)
        batches = engine.pad(x, y)
        lr = 0.5 * core.critical_lr(x, intercept=True)
        calls = {
            "pytree_histories": partial(core.pytree_histories, {"w": 0.0, "b": 0.0}, lr, batches),
            "engine_start_collect": _collected(partial(engine.start, 0.0, lr, batches)),
            "optimizer_histories": partial(core.optimizer_histories, 0.0, lr, batches),
        }
        times = {name: _median_ms(call, repeats) for name, call in calls.items()}
        cells = "   ".join(f"{median:8.2f} / {p95:6.2f}" for median, p95 in times.values())
        ratio = times["pytree_histories"][0] / times["engine_start_collect"][0]
        print(f"{n:>5} {b:>5}  {cells}   (w, b) / w: {ratio:.2f}x")
        rows.append({"N": n, "B": b} | {name: {"median": t[0], "p95": t[1]} for name, t in times.items()})
    return rows


def intercept_theory(repeats=5) -> dict:
    """Milliseconds (median, p95) of the 2-D critical lr at N=1000 (without and with momentum)
    and of the lr x B map of y = w*x + b (64 lrs x 32 batch sizes on (1000, 512) arrays)."""
    x, y = core.make_batches(1000, 512, seed=0, noise=0.3, x_mean=2.0, true_b=1.0)
    data = core.moments(x[:, :64])
    engine = core.HistoryEngine(1000, 512)
    batches = engine.pad(x, y)
    lrs, sizes = np.geomspace(1e-5, 0.3, 64), np.linspace(1, 512, 32).astype(int)
    calls = {
        "critical_lrs_intercept_B64": partial(core.critical_lrs, data, intercept=True),
        "critical_lrs_intercept_momentum_0.9_B64": partial(
            core.critical_lrs, data, momentum=0.9, intercept=True
        ),
        "pytree_stability_map_64x32": partial(
            core.pytree_stability_map, batches, lrs, sizes, params0={"w": 0.0, "b": 0.0}
        ),
    }
    times = {name: _median_ms(call, repeats) for name, call in calls.items()}
    for name, (median, p95) in times.items():
        print(f"{name} at N=1000: {median:.1f} / {p95:.1f} ms")
    return {name: {"median": t[0], "p95": t[1]} for name, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--pytree",
        action="store_true",
        help="only the model with an intercept (pytree_moves, intercept_theory)",
    )
    args = parser.parse_args(argv)
    if args.pytree:
        engine = core.HistoryEngine()
        engine.warm_up()
        results = {"pytree_moves": pytree_moves(engine), "intercept_theory": intercept_theory()}
        if args.json:
            args.json.write_text(json.dumps(results, indent=1) + "\n")
        return
    with counting() as compile_seconds:
        engine = core.HistoryEngine()
        start = time.perf_counter()
        engine.warm_up()
        warm_up_s = time.perf_counter() - start
    results = {
        "capacity": [engine.max_steps, engine.max_batch],
        "warm_up_s": warm_up_s,
        "warm_up_compile_s": sum(compile_seconds),
        "runs": [],
    }
    print(
        f"engine ({engine.max_steps} x {engine.max_batch}) warm-up: {warm_up_s:.2f} s, "
        f"XLA compile {sum(compile_seconds):.2f} s"
    )
    print(f"{'N':>5} {'B':>5} {'loss':>5}  engine.run median / p95   training_history (exact shape)")
    for n, b in [(2, 2), (100, 16), (1000, 512), (2000, 1024)]:
        x, y = core.make_batches(n, b, seed=0, noise=0.3)
        batches = engine.pad(x, y)
        lr = 0.5 * core.critical_lr(x)
        for loss in ("sum", "mean"):
            lr_loss = lr * (b if loss == "mean" else 1)
            run = _median_ms(partial(engine.run, 0.0, lr_loss, batches, loss=loss))
            exact = _median_ms(partial(core.training_history, 0.0, lr_loss, x, y, loss=loss))
            run_ms, exact_ms = f"{run[0]:8.2f} / {run[1]:6.2f} ms", f"{exact[0]:8.2f} / {exact[1]:6.2f} ms"
            print(f"{n:>5} {b:>5} {loss:>5}  {run_ms}      {exact_ms}")
            results["runs"].append(
                {
                    "N": n,
                    "B": b,
                    "loss": loss,
                    "engine_run_ms": {"median": run[0], "p95": run[1]},
                    "training_history_ms": {"median": exact[0], "p95": exact[1]},
                }
            )
    x, y = core.make_batches(1000, 512, seed=0)
    pad_ms = _median_ms(partial(engine.pad, x, y), repeats=10)[0]
    print(f"engine.pad at N=1000, B=512: {pad_ms:.2f} ms median")
    results["pad_ms_median_1000x512"] = pad_ms
    batches = engine.pad(x, y)
    both = _median_ms(partial(engine.histories, 0.0, 1e-3, batches))
    print(f"engine.histories (sum and mean, one run) at N=1000, B=512: {both[0]:.2f} / {both[1]:.2f} ms")
    results["histories_ms_1000x512"] = {"median": both[0], "p95": both[1]}
    # A corner copies nothing and computes nothing (the optimum is the kernel's, when a run goes far).
    corner = _median_ms(lambda: engine.corner(batches, 700, 300))
    print(f"engine.corner (a move of N or B) at 1000 x 512: {corner[0]:.3f} / {corner[1]:.3f} ms")
    results["corner_ms_1000x512"] = {"median": corner[0], "p95": corner[1]}
    results["pytree_moves"] = pytree_moves(engine)
    results["intercept_theory"] = intercept_theory()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
