"""Kernel-side callback time of the explorer: controls read, core run, every figure updated.
Prints figures; asserts nothing (timings are not tests). No browser: see tests/test_dashboard.py.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.explorer
"""

import statistics
import time

import numpy as np

import widgets


def _moves(explorer, control, values):
    times = []
    for value in values:
        start = time.perf_counter()
        explorer.inputs[control].value = value
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), float(np.percentile(times, 95))


def main():
    start = time.perf_counter()
    explorer = widgets.Explorer()
    print(f"Explorer() with engine warm-up: {time.perf_counter() - start:.2f} s")
    explorer.apply(widgets.DEFAULTS._replace(N=1000, B=512, lr=1e-3))
    cases = [
        ("lr", [float(v) for v in np.geomspace(1e-4, 3e-3, 60)]),
        ("w0", [float(v) for v in np.linspace(-5, 5, 60)]),
        ("B", [int(v) for v in np.linspace(400, 512, 60)]),
        ("loss", ["sum", "mean", "both"] * 20),
    ]
    print("callback at N=1000, B=512: median / p95")
    for control, values in cases:
        median, p95 = _moves(explorer, control, values)
        print(f"  {control:>5}: {median:6.1f} / {p95:6.1f} ms")


if __name__ == "__main__":
    main()
