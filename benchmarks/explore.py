"""Kernel-side time of a move in `explore(fn)`: the lesson's loop computed and drawn, with a learner's
right, jittable function called on each prefix of the batches and drawn beside it, against the same
view drawing the lesson's loop alone. Prints figures; asserts nothing (timings are not tests).

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.explore [--json PATH]

Each control is moved through values the view has drawn before (a function once compiled for each
prefix's shape), and N and B also through new ones, where every new prefix compiles once.
"""

import argparse
import json
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from jax import lax

from harness.stats import summary
from widgets.explore import START, Exploration
from widgets.model import Model


def scan_training_step(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * 2 * jnp.sum((w * x - y) * x), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


class LessonOnly(Exploration):
    """The view with no learner's path: the lesson's loop alone, computed and drawn."""

    def _walk(self, view):
        return view


def _stats(times) -> dict:
    stats = summary(times)
    return {"median": stats["median"], "p95": stats["p95"], "moves": len(times)}


def _moves(views, control, values) -> list[dict]:
    """Each view moved to each value in turn, the views interleaved (the machine's drift then
    touches both alike): each view's (median, p95) ms."""
    times = [[] for _ in views]
    for value in values:
        for view, kept in zip(views, times, strict=True):
            start = time.perf_counter()
            view.inputs[control].value = value
            kept.append((time.perf_counter() - start) * 1e3)
    return [_stats(kept) for kept in times]


CASES = {
    "lr": [float(v) for v in np.geomspace(1e-3, 3e-2, 100)],
    "w0": [float(v) for v in np.linspace(-3, 3, 100)],
    "N": [int(v) for v in np.linspace(20, 40, 21)] * 3,
    "B": [8, 12, 16, 24, 32] * 12,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    model = Model()
    kwargs = {"background": False, "model": model, "check": False}
    start = time.perf_counter()
    view = Exploration(scan_training_step, "scan_training_step", START, **kwargs)
    first_s = time.perf_counter() - start
    lesson = LessonOnly(scan_training_step, "scan_training_step", START, **kwargs)
    print(f"explore(fn) first drawn, N = {START.N}, B = {START.B} (one compile per prefix): {first_s:.2f} s")
    results = {"first_s": first_s, "N": START.N, "B": START.B, "moves": {}}
    # First visits: every new N and B compiles the learner's prefixes of that shape.
    first = {}
    for control in ("N", "B"):
        (first[control],) = _moves([view], control, sorted(set(CASES[control])))
        view.inputs[control].value = getattr(START, control)
    print("a move, median / p95 ms: with your function, the lesson's alone, and the ratio")
    for control, values in CASES.items():
        yours, alone = _moves([view, lesson], control, values)
        ratio = yours["median"] / alone["median"]
        print(f"  {control:>3}: {yours['median']:6.1f} / {yours['p95']:6.1f}   "
              f"{alone['median']:6.1f} / {alone['p95']:6.1f}   {ratio:.2f}x")  # fmt: skip
        results["moves"][control] = {"yours": yours, "lesson": alone, "ratio": ratio}
        view.inputs[control].value = lesson.inputs[control].value = getattr(START, control)
    for control, data in first.items():
        print(f"  {control:>3} at a value not drawn before: {data['median']:6.1f} / {data['p95']:6.1f} ms")
        results["moves"][control]["first_visit"] = data
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
