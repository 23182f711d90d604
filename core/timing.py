"""The lesson's training loop timed three ways (scan, Python loop, unrolled jit), and the cost of
reading the loss on the host.

The loop is the lesson's: a scalar weight w, one gradient-descent step per batch on the loss
sum((w*x - y)**2). `WAYS` names the three programs that run it:

- "scan": `lax.scan` under `jax.jit`. One compiled loop whose size does not depend on N.
- "python": the pure train-step pattern, a Python loop calling a jitted step N times. The step compiles
  once for any N; every step is a dispatch from the host.
- "unrolled": the same Python loop inside `jax.jit`. Tracing runs the loop, so the program holds N
  copies of the step, and XLA's compile time grows faster than N (`UNROLL_CAP` bounds it).

`time_way` measures one way at one N: compile time (trace, lower, compile) and run time.
`time_host_sync` measures the host-sync warning, `float(loss)` every step against every k steps.

Compile times are only real when JAX's persistent compilation cache is off: a cached program is a
load from disk, not a compile. The command line (`python -m core.timing --help`) turns the cache
off before anything compiles, and prints one JSON object per line as each measurement finishes, so
a caller can run it in a subprocess, read partial results, and kill it at a timeout (an XLA compile
cannot be interrupted from Python).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import statistics
import sys
import time
from typing import NamedTuple

import jax
import numpy as np
from jax import lax

from core._checks import check_positive_int as _count  # a whole number >= 1, named in its error
from core.data import make_batches
from core.lesson import train_step

WAYS = ("scan", "python", "unrolled")

UNROLL_CAP = 200
"""The largest N the "unrolled" way is measured at. Its compile time grows faster than N: measured
on a 2-core CPU, 0.15-0.3 s at N=10, 3-4 s at N=100, 8 s at N=150 and 13-18 s at N=200, against
0.03-0.09 s for "scan" at every N."""

SEED = 0
"""The NumPy seed of the timing data (see `timing_batches`)."""


def stable_lr(batch_size: int) -> float:
    """The learning rate of every timing run, 0.1 / batch_size.

    A step multiplies the distance to the batch's optimum by 1 - 2*lr*S_k, S_k = sum(x**2) over the
    batch, about batch_size for N(0, 1) inputs: about 0.8 here, so runs of any length stay finite.
    """
    return 0.1 / batch_size


def timing_batches(n: int, batch_size: int):
    """The data every way trains on: (x_batches, y_batches), two float32 NumPy arrays of shape
    (n, batch_size), y = 2x plus noise of scale 0.5, from `SEED` (`core.make_batches`)."""
    return make_batches(n, batch_size, seed=SEED, noise=0.5)


# The three ways. Short and at module level, so that a student can read them (the UI shows their
# source); `time_way` jits them. Each runs the lesson's own step (`core.lesson.train_step`).


def scan_loop(w, lr, x_batches, y_batches):
    """All N steps as one `lax.scan`: the compiled program holds one step and a loop around it."""

    def step(w, batch):
        x, y = batch
        new_w, _ = train_step(w, lr, x, y)
        return new_w, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w


def unrolled_loop(w, lr, x_batches, y_batches):
    """The same loop in plain Python. Under `jax.jit` the loop runs while tracing, so the compiled
    program holds N copies of the step, one per batch."""
    for k in range(x_batches.shape[0]):
        w, _ = train_step(w, lr, x_batches[k], y_batches[k])
    return w


def python_loop(step, w, lr, x_batches, y_batches):
    """The pure train-step pattern: the host walks the batches and calls `step`, a jitted `train_step`.

    A call returns before the device finishes, so the loop dispatches step k+1 while step k runs;
    the host waits only when it reads a value, here not at all.
    """
    for x, y in zip(x_batches, y_batches, strict=True):
        w, _ = step(w, lr, x, y)
    return w


def logging_loop(step, w, lr, x_batches, y_batches, every):
    """`python_loop` that logs the loss every `every` steps (None: only after the last step).

    `float(loss)` copies the loss to the host, so the loop stops there until the device has run
    every step dispatched so far: logging every step turns the pipeline into a wait per step.

    Returns (final w, logged): logged is a list of (step number from 1, loss) pairs, one per read
    of the loss; the last step's loss is always logged.
    """
    logged = []
    n = len(x_batches)
    for k, (x, y) in enumerate(zip(x_batches, y_batches, strict=True), start=1):
        w, loss = step(w, lr, x, y)
        if k == n or (every is not None and k % every == 0):
            logged.append((k, float(loss)))
    return w, logged


def loop_function(way):
    """The module-level function that writes the loop `way` (one of `WAYS`): `scan_loop`,
    `python_loop` or `unrolled_loop`. Each calls `train_step` (`core.lesson`)."""
    return {"scan": scan_loop, "python": python_loop, "unrolled": unrolled_loop}[_check_way(way)]


def loop_source(way) -> str:
    """The source code of `loop_function(way)`, as a student would read it."""
    return inspect.getsource(loop_function(way))


# Measurement.


class LoopTiming(NamedTuple):
    """One way timed at one N.

    way: one of `WAYS`. n: the number of steps (batches).
    compile_s: seconds to trace, lower and compile the program, from a fresh function object (the
        whole loop for "scan" and "unrolled"; the single step for "python", the same for every N).
    run_s: the median, over `repeats` runs after an untimed one, of the seconds one run of all N
        steps takes with the program compiled, from host NumPy batches to the final weight ready on
        the device.
    final_w: the weight after the N steps, a Python float (the same for every way, to float32
        rounding).
    trace_s, lower_s: the parts of compile_s spent tracing to a jaxpr and lowering it to StableHLO;
        the rest, compile_s - trace_s - lower_s, is XLA's compile.
    """

    way: str
    n: int
    compile_s: float
    run_s: float
    final_w: float
    trace_s: float
    lower_s: float


class SyncTiming(NamedTuple):
    """`logging_loop` timed at one N.

    every: the logging interval, an int >= 1, or None (only after the last step).
    n: the number of steps. run_s: the median seconds of one run of all N steps, the step compiled
    beforehand. syncs: how many times the host read the loss, ceil(n / every) (1 for None).
    final_w: the weight after the N steps, a Python float.
    """

    every: int | None
    n: int
    run_s: float
    syncs: int
    final_w: float


def _check_way(way) -> str:
    if not isinstance(way, str) or way not in WAYS:
        raise ValueError(f"way must be one of {WAYS}, got {way!r}"[:200])
    return way


def _check_every(every) -> int | None:
    return None if every is None else _count("every", every)


def persistent_cache_on() -> bool:
    """Whether JAX's persistent compilation cache is configured in this process (a directory set and
    the cache enabled), in which case a compile may be a load from disk."""
    return bool(jax.config.jax_compilation_cache_dir) and bool(jax.config.jax_enable_compilation_cache)


def _refuse_cached_compiles() -> None:
    if persistent_cache_on():
        raise RuntimeError(
            "JAX's persistent compilation cache is on (jax_compilation_cache_dir="
            f"{jax.config.jax_compilation_cache_dir!r}), so a compile could be a load from disk and its "
            "time would be wrong: run `python -m core.timing`, which turns the cache off, or call "
            'jax.config.update("jax_enable_compilation_cache", False) before anything compiles'
        )


def _fresh(function):
    """A new function object that calls `function`.

    JAX keeps traces and compiled programs per function object; a new one per measurement makes
    every measurement trace, lower and compile for real.
    """

    @functools.wraps(function)
    def fresh(*args):
        return function(*args)

    return fresh


def _compile(function, *args):
    """jit `function` afresh and compile it for `args`: (compiled, trace_s, lower_s, total_s)."""
    start = time.perf_counter()
    traced = jax.jit(_fresh(function)).trace(*args)
    traced_at = time.perf_counter()
    lowered = traced.lower()
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return compiled, traced_at - start, lowered_at - traced_at, done - start


def _median_seconds(run, repeats: int):
    """(median seconds of `repeats` calls of run(), the last call's result); run() must block.

    One untimed call goes first: a compiled program's first call also sets up its dispatch path.
    """
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def time_way(way, n, *, batch_size=32, repeats=3) -> LoopTiming:
    """Compile and run the lesson's loop of n steps written `way`, and time both.

    Args:
      way: "scan" (`scan_loop` under jit), "python" (`python_loop` around a jitted `train_step`) or
        "unrolled" (`unrolled_loop` under jit); see `WAYS`.
      n: the number of steps, an int >= 1; at most `UNROLL_CAP` for "unrolled".
      batch_size: B, examples per batch, an int >= 1. The data is `timing_batches(n, batch_size)`,
        float32, the weight starts at 0.0 and the learning rate is `stable_lr(batch_size)`.
      repeats: how many timed runs run_s is the median of, an int >= 1.

    Returns:
      A `LoopTiming`. Every call compiles anew, from a fresh function object, whatever was compiled
      before in this process.

    Raises:
      TypeError or ValueError naming the argument for a bad way, n, batch_size or repeats, and
      ValueError for "unrolled" with n > UNROLL_CAP. RuntimeError when JAX's persistent compilation
      cache is on (see `persistent_cache_on`): the compile time would not be a compile's.
    """
    way = _check_way(way)
    n = _count("n", n)
    batch_size = _count("batch_size", batch_size)
    repeats = _count("repeats", repeats)
    if way == "unrolled" and n > UNROLL_CAP:
        raise ValueError(
            f"n = {n} is above UNROLL_CAP = {UNROLL_CAP} for the unrolled way: its compile time grows "
            "faster than n (minutes at n = 1000)"
        )
    _refuse_cached_compiles()
    # Every run starts from host memory, as data from a loader would: the copy to the device is
    # part of each run, once for a whole-loop program and once per batch for the Python loop.
    x_batches, y_batches = timing_batches(n, batch_size)
    w0 = np.float32(0.0)
    lr = np.float32(stable_lr(batch_size))
    if way == "python":
        step, trace_s, lower_s, compile_s = _compile(train_step, w0, lr, x_batches[0], y_batches[0])

        def run():
            return python_loop(step, w0, lr, x_batches, y_batches).block_until_ready()
    else:
        loop = scan_loop if way == "scan" else unrolled_loop
        program, trace_s, lower_s, compile_s = _compile(loop, w0, lr, x_batches, y_batches)

        def run():
            return program(w0, lr, x_batches, y_batches).block_until_ready()

    run_s, final_w = _median_seconds(run, repeats)
    return LoopTiming(way, n, compile_s, run_s, float(final_w), trace_s, lower_s)


def time_host_sync(n, every, *, batch_size=32, repeats=3) -> SyncTiming:
    """Time `logging_loop`: n steps of a jitted `train_step`, reading the loss every `every` steps.

    Args:
      n: the number of steps, an int >= 1.
      every: read the loss with `float(loss)` after every `every`-th step, an int >= 1, or None for
        only after the last step. The last step's loss is always read, so the host syncs
        ceil(n / every) times (1 for None).
      batch_size, repeats: as for `time_way` (same data, starting weight and learning rate).

    Returns:
      A `SyncTiming`. The step is compiled before the timed runs; run_s covers the loop and its
      syncs only.

    Raises:
      TypeError or ValueError naming the argument for a bad n, every, batch_size or repeats.
    """
    n = _count("n", n)
    every = _check_every(every)
    batch_size = _count("batch_size", batch_size)
    repeats = _count("repeats", repeats)
    x_batches, y_batches = timing_batches(n, batch_size)
    w0 = np.float32(0.0)
    lr = np.float32(stable_lr(batch_size))
    step = jax.jit(train_step).trace(w0, lr, x_batches[0], y_batches[0]).lower().compile()

    def run():
        w, logged = logging_loop(step, w0, lr, x_batches, y_batches, every)
        return w.block_until_ready(), len(logged)

    run_s, (final_w, syncs) = _median_seconds(run, repeats)
    return SyncTiming(every, n, run_s, syncs, float(final_w))


# Command line.


def _list_of(parse):
    """An argparse type: a comma-separated list, each item parsed by parse()."""

    def parse_list(text: str) -> list:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        return [parse(item) for item in items]

    return parse_list


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def _way(text: str) -> str:
    if text not in WAYS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(WAYS)}, got {text!r}")
    return text


def _every(text: str) -> int | None:
    return None if text.lower() == "none" else _positive_int(text)


DEFAULT_NS = (10, 30, 100, UNROLL_CAP)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core.timing",
        description=(
            "Time the lesson's training loop written three ways (lax.scan, a Python loop over a jitted "
            "step, the Python loop unrolled inside jit) and the cost of reading the loss on the host "
            "(the pure train-step pattern). Prints one JSON object per line as each measurement "
            "finishes. JAX's persistent compilation cache is turned off, so every compile is a real one."
        ),
        epilog=(
            'Lines: {"kind": "config", ...} first; {"kind": "loop", "way", "n", "compile_s", "run_s", '
            '"final_w", "trace_s", "lower_s"}; {"kind": "sync", "every", "n", "run_s", "syncs", '
            '"final_w"}; {"kind": "skipped", "way", "n", "reason"}; {"kind": "done", "wall_s"} last. '
            "Order: the skipped lines, then scan and python at every n (increasing), then the host "
            "syncs, then unrolled at every n (increasing), whose compiles are the slow ones."
        ),
    )
    parser.add_argument(
        "--ways", type=_list_of(_way), default=list(WAYS), help="comma-separated (default: all three)"
    )
    parser.add_argument(
        "--ns",
        type=_list_of(_positive_int),
        default=None,
        help="comma-separated numbers of steps (default: "
        f"{','.join(map(str, DEFAULT_NS))}, or none when --sync-every is given alone)",
    )
    parser.add_argument("--batch-size", type=_positive_int, default=32, help="B (default: 32)")
    parser.add_argument(
        "--repeats", type=_positive_int, default=3, help="runs each run time is the median of (default: 3)"
    )
    parser.add_argument(
        "--sync-every",
        type=_list_of(_every),
        default=None,
        help="comma-separated logging intervals, 'none' for only at the end (default: no sync timing)",
    )
    parser.add_argument(
        "--sync-n", type=_positive_int, default=1000, help="steps of each host-sync run (default: 1000)"
    )
    return parser


def _emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def main(argv=None) -> int:
    """The command line; returns the exit status (argparse exits with 2 on bad arguments)."""
    args = _parser().parse_args(argv)
    # Before anything compiles: the cache is consulted from the first compile on, and a cached
    # program would be timed as a load from disk.
    jax.config.update("jax_enable_compilation_cache", False)
    start = time.perf_counter()
    ns = sorted(set(args.ns if args.ns is not None else ([] if args.sync_every else DEFAULT_NS)))
    ways = list(dict.fromkeys(args.ways))
    sizes = {"batch_size": args.batch_size, "repeats": args.repeats}
    _emit(
        {
            "kind": "config",
            "jax": jax.__version__,
            "device": str(jax.devices()[0]),
            "lr": stable_lr(args.batch_size),
            "unroll_cap": UNROLL_CAP,
            "persistent_cache": persistent_cache_on(),
            **sizes,
        }
    )
    if "unrolled" in ways:
        for n in ns:
            if n > UNROLL_CAP:
                reason = (
                    f"n = {n} is above UNROLL_CAP = {UNROLL_CAP}: the unrolled compile grows faster than n"
                )
                _emit({"kind": "skipped", "way": "unrolled", "n": n, "reason": reason})
    # The first compile in a process also pays one-time setup; a throwaway one keeps it out of the
    # first figure.
    time_way("scan", 2, batch_size=args.batch_size, repeats=1)
    time_way("python", 2, batch_size=args.batch_size, repeats=1)
    for n in ns:
        for way in ways:
            if way != "unrolled":
                _emit({"kind": "loop", **time_way(way, n, **sizes)._asdict()})
    for every in args.sync_every or []:
        _emit({"kind": "sync", **time_host_sync(args.sync_n, every, **sizes)._asdict()})
    if "unrolled" in ways:
        for n in ns:
            if n <= UNROLL_CAP:
                _emit({"kind": "loop", **time_way("unrolled", n, **sizes)._asdict()})
    _emit({"kind": "done", "wall_s": time.perf_counter() - start})
    return 0


if __name__ == "__main__":
    sys.exit(main())
