"""Kernel-side callback time of the explorer: controls read, core run, every figure updated.
Prints figures; asserts nothing (timings are not tests). No browser: see tests/test_dashboard.py.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.explorer [--json PATH]
"""

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

import widgets
from harness.stats import summary
from widgets.stability import SETTLE_S


def _moves(explorer, control, values):
    times = []
    for value in values:
        start = time.perf_counter()
        explorer.inputs[control].value = value
        times.append((time.perf_counter() - start) * 1e3)
        if control != "w0":
            explorer.stability.wait()  # (lr, B and the view never recompute the map)
    explorer.stability.wait()
    stats = summary(times)
    return stats["median"], stats["p95"]


def _map_settles(explorer, values):
    """A move of w0 on its own, then the stability map recomputed on its worker thread and drawn
    (moves sooner than SETTLE_S after each other are a drag, whose map waits for it to rest)."""
    times = []
    for value in values:
        time.sleep(SETTLE_S)
        start = time.perf_counter()
        explorer.inputs["w0"].value = value
        explorer.stability.wait()
        times.append((time.perf_counter() - start) * 1e3)
    stats = summary(times)
    return stats["median"], stats["p95"]


def _presets(explorer, keys, clicks=20):
    """Preset clicks, `keys` in turn, each its callback until the charts' data are sent (the map
    waits on its worker, untimed): (median, p95) in ms."""
    times = []
    for i in range(clicks):
        button = explorer.presets[keys[i % len(keys)]]
        start = time.perf_counter()
        button.click()
        times.append((time.perf_counter() - start) * 1e3)
        explorer.stability.wait()
    stats = summary(times)
    return stats["median"], stats["p95"]


def _rss_mb():
    """This process's resident set now and at its peak, in MB (not a kernel's: no ipykernel here)."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    now = int(fields["VmRSS"].split()[0]) / 1024
    return now, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    explorer = widgets.Explorer()
    explorer_s = time.perf_counter() - start
    print(f"Explorer() with engine warm-up: {explorer_s:.2f} s")
    explorer.apply(widgets.DEFAULTS._replace(N=1000, B=512, lr=1e-3))
    explorer.stability.wait()
    cases = [
        ("lr", [float(v) for v in np.geomspace(1e-4, 3e-3, 60)]),
        ("w0", [float(v) for v in np.linspace(-5, 5, 60)]),
        ("B", [int(v) for v in np.linspace(400, 512, 60)]),
        ("loss", ["sum", "mean", "both"] * 20),
    ]
    results = {"explorer_s": explorer_s, "N": 1000, "B": 512, "callback_ms": {}, "pytree_callback_ms": {}}
    print("callback at N=1000, B=512: median / p95")
    for control, values in cases:
        median, p95 = _moves(explorer, control, values)
        print(f"  {control:>5}: {median:6.1f} / {p95:6.1f} ms")
        results["callback_ms"][control] = {"median": median, "p95": p95, "moves": len(values)}
    # The presets benchmarks.browser clicks: another data set each time (kind, seed), another N and B.
    median, p95 = _presets(explorer, ["oscillating", "smooth"])
    print(f"  preset (Oscillating, Smooth convergence in turn): {median:6.1f} / {p95:6.1f} ms")
    results["preset_callback_ms"] = {"median": median, "p95": p95, "clicks": 20}
    # The same moves under the w, b model (issue 33: at most 1.25x the w model's), on the narrow
    # valley's data (x centred at 3), its contours and the pytree runs redrawn at every move.
    explorer.apply(widgets.DEFAULTS._replace(N=1000, B=512, lr=1e-4, model="w,b", x_mean=3.0, true_b=1.0))
    explorer.stability.wait()
    print("the same under model=w,b (x_mean=3): median / p95, and the median against the w model's")
    for control, values in cases:
        median, p95 = _moves(explorer, control, values)
        ratio = median / results["callback_ms"][control]["median"]
        print(f"  {control:>5}: {median:6.1f} / {p95:6.1f} ms  ({ratio:.2f}x)")
        results["pytree_callback_ms"][control] = {
            "median": median,
            "p95": p95,
            "moves": len(values),
            "ratio": ratio,
        }
    print("stability map (64 lr x 32 B) after a move of w0, recomputed in the background: median / p95")
    for n in (200, 1000):
        explorer.apply(widgets.DEFAULTS._replace(N=n, B=512, lr=1e-3))
        explorer.stability.wait()
        median, p95 = _map_settles(explorer, [float(v) for v in np.linspace(-4, 4, 12)])
        print(f"  N={n:>4}: {median:6.1f} / {p95:6.1f} ms")
        results.setdefault("map_settled_ms", {})[str(n)] = {"median": median, "p95": p95, "moves": 12}
    results["process_rss_mb"], results["process_peak_rss_mb"] = _rss_mb()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
