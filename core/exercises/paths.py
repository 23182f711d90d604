"""A learner's function drawn step by step: its carry after k batches, for k = 1..N, and the first
step at which it parts from the loop of the lesson.

An exercise's function returns only its final carry, so its path is its answer on the first k
batches, one call per k (`LearnerLoop.path`). The calls go through `jax.jit` of the function, made
once and kept, so that a jittable function is compiled once per shape (each k is one) and never
again for another lr, w0, momentum or b0, which are traced; a function that cannot be jitted is
called as it is. Every call runs in the learner's sandbox (core.exercises.sandbox) under one time
limit for the whole path; whatever the function raises, returns or however long it runs is told in
the learner's words (`LearnerPath.problem`), with the steps computed before it. Once a shape's path
has gone call by call, `LearnerLoop.prepare` compiles one program of every prefix, and later paths
of that shape are one call of it (compiled XLA: no Python of the learner's runs, so no sandbox).
"""

from __future__ import annotations

import collections
import threading
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from core.exercises.reading import read, read_params
from core.exercises.report import DEFAULT_TIMEOUT, TOLERANCE
from core.exercises.sandbox import describe_error, limited, too_slow

PREFIX_CAP = 50
"""The most prefix runs one path makes. Measured on this project's 2-core machine (benchmarks.explore
and docs/performance.md): a jitted scan's first path takes about 26 ms a prefix, one compile each
(N = 100: 2.6 s alone, and 10 s for 57 of them in JupyterLab beside the explorer's stability map),
and a Python loop over the batches (not jittable) 0.57 s at N = 100, 2.2 s at N = 200 (its work
grows as N squared). 50 keeps a first path near a second, where a visitor waits for it."""

PROGRAMS_KEPT = 8
"""How many shapes' programs of every prefix (`LearnerLoop.prepare`) a LearnerLoop keeps."""

TASKS = (
    "scan_training_step",
    "momentum_training_step",
    "scheduled_training_step",
    "pytree_training_step",
)
"""The exercises whose functions a path calls, by the function each asks for (core.exercises.EXERCISES'
keys, which import this module; tests/test_explore.py checks they agree)."""

LEAVES = {"pytree_training_step": ("w", "b")}
"""An exercise's carry's leaves, in the order a path holds them, where not ("w",)."""


class LearnerPath(NamedTuple):
    """A learner's function's carry after each prefix of the batches.

    carries: float64 (steps + 1, leaves): row 0 the start, row k the carry after the first k
        batches (leaves as `leaves` names them: ("w",), or ("w", "b") for the params dict).
    leaves: the carry's leaf names.
    wanted: the steps asked for, N; `steps` (the rows after the start) is fewer when the path is
        capped (PREFIX_CAP) or a call failed.
    seconds: the wall time of the learner's calls.
    jitted: whether the calls went through jax.jit (False: the function could not be jitted).
    problem: "" or what stopped the path, in the learner's words (an error, an output that is not
        the carry, the time limit).
    programmed: whether one program made every call (`LearnerLoop.prepare`), not one call each.
    timed_out: whether the time limit ended the path after some steps (they are drawn; the compiles
        of those steps' shapes are kept, so the next path goes further).
    """

    carries: np.ndarray
    leaves: tuple
    wanted: int
    seconds: float
    jitted: bool
    problem: str = ""
    programmed: bool = False
    timed_out: bool = False

    @property
    def steps(self) -> int:
        return self.carries.shape[0] - 1

    @property
    def capped(self) -> bool:
        """Whether the path stops before N with nothing wrong: at PREFIX_CAP (or the caller's cap), or
        cut by the time limit (`timed_out`)."""
        return not self.problem and self.steps < self.wanted


class NotPlain(Exception):
    """Raised while `LearnerLoop.prepare` traces a function whose output is not the plain answer."""


def batches_text(k: int) -> str:
    """The first k batches in words: "the first batch", "the first 3 batches"."""
    return "the first batch" if k == 1 else f"the first {k} batches"


def _scalar(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float32)


class LearnerLoop:
    """A learner's function for one exercise (`task`, a name of TASKS), called on prefixes of the
    batches; its jax.jit is made once and kept, with whether the function can be jitted."""

    def __init__(self, fn, task: str):
        if task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}"[:200])
        if not callable(fn):
            raise TypeError(f"fn must be callable: the learner's {task}; got {type(fn).__name__}"[:200])
        self.fn, self.task = fn, task
        self.leaves = LEAVES.get(task, ("w",))
        self._jitted = jax.jit(fn)
        self.jittable: bool | None = None  # None until the first call says
        self._on_numpy: bool | None = None  # called as it is: whether NumPy arrays do (`_call`)
        # The inputs' shapes -> `prepare`'s compiled program (None: that shape has none), the last
        # PROGRAMS_KEPT used: each holds N scans' code, and a visitor may try many N and B.
        self._programs: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def _cut(
        self, start: dict, lr, x_batches, y_batches, *, momentum: float | None = None, cap: int = PREFIX_CAP
    ) -> tuple[dict, int, int]:
        """(every array the function's calls read, as NumPy arrays, cut to the first `steps`
        batches; steps, min(N, cap); N). Cut in NumPy: JAX's own slicing would compile a program
        for each (N, k)."""
        x, y = np.asarray(x_batches, np.float32), np.asarray(y_batches, np.float32)
        wanted = int(x.shape[0])
        steps = min(wanted, int(cap))
        return self._inputs(start, lr, momentum, x, y, steps), steps, wanted

    def _inputs(self, start: dict, lr, momentum, x, y, steps: int) -> dict:
        """Every array the function's calls read, as NumPy arrays, cut to the first `steps` batches."""
        inputs = {"w": _scalar(start["w"]), "x": x[:steps], "y": y[:steps]}
        if self.task == "scheduled_training_step":
            inputs["lr"] = np.asarray(lr, np.float32)[:steps]
        else:
            inputs["lr"] = _scalar(lr)
        if self.task == "momentum_training_step":
            inputs["momentum"] = _scalar(momentum)
        if self.task == "pytree_training_step":
            inputs["b"] = _scalar(start["b"])
        return inputs

    def _arguments(self, inputs: dict, k: int) -> tuple:
        """The function's arguments for the first k batches, as the exercise calls it (NumPy arrays,
        or traced ones in `_program`)."""
        batches = (inputs["x"][:k], inputs["y"][:k])
        w, lr = inputs["w"], inputs["lr"]
        if self.task == "momentum_training_step":
            return (w, lr, inputs["momentum"], *batches)
        if self.task == "scheduled_training_step":
            return (w, lr[:k], *batches)
        if self.task == "pytree_training_step":
            return ({"w": w, "b": inputs["b"]}, lr, *batches)
        return (w, lr, *batches)

    def _program(self, steps: int):
        """A function of the inputs that calls the learner's on every prefix, 1 to `steps`, and
        stacks the carries: (steps, leaves). Raises NotPlain, while it is traced, for an output
        that is not the plain answer (one number; the params dict of two), which `path` reads
        call by call instead."""

        def program(inputs):
            finals = []
            for k in range(1, steps + 1):
                out = self.fn(*self._arguments(inputs, k))
                if self.task == "pytree_training_step":
                    plain = isinstance(out, dict) and set(out) == {"w", "b"}
                    leaves = [out["w"], out["b"]] if plain else []
                else:
                    leaves = [out]
                if not leaves or not all(isinstance(v, jax.Array) and v.shape == () for v in leaves):
                    raise NotPlain
                finals.append(jnp.stack([jnp.asarray(v, jnp.float32) for v in leaves]))
            return jnp.stack(finals)

        return program

    @staticmethod
    def _shapes(inputs: dict) -> tuple:
        return tuple((name, np.shape(value)) for name, value in sorted(inputs.items()))

    def prepare(self, *arguments, timeout: float = DEFAULT_TIMEOUT, **options) -> bool:
        """Compile one program that calls the function on every prefix of these batches at once,
        and keep it: `path` on batches of the same shapes is then one call (40 prefixes in 0.1 ms,
        where 40 calls take 1.6 ms), whatever lr, w0, momentum or b0. Arguments as `path`'s.

        Only for a function that has run under jax.jit and returns the plain answer; compiling
        takes about as long as the path's first compiles (1 s at N = 40), so a view asks for it on
        a thread of its own. Returns whether these shapes have such a program."""
        if not self.jittable:
            return False
        inputs, steps, _ = self._cut(*arguments, **options)
        key = self._shapes(inputs)
        with self._lock:
            known = key in self._programs
        if not known:
            ended, compiled = limited(lambda: jax.jit(self._program(steps)).lower(inputs).compile(), timeout)
            with self._lock:
                self._programs[key] = compiled if ended == "ran" else None
                while len(self._programs) > PROGRAMS_KEPT:
                    self._programs.popitem(last=False)
        with self._lock:
            return self._programs.get(key) is not None

    def _call(self, arguments):
        """The function on `arguments` (NumPy arrays): through its jit while it can be jitted (the
        jit takes NumPy arrays fastest: 40 calls in 1.6 ms, 8.7 ms with each made a JAX array
        first), else as it is. Called as it is, it gets the NumPy arrays while they work: a Python
        loop over JAX arrays compiles a slice for each new prefix's shape (40 prefixes of a loop
        over the batches: 4.5 s, on NumPy arrays 0.07 s). Else JAX arrays, as the checker passes
        them (a learner's x_batches[i] with a traced i, a fori_loop's, works on one only)."""
        if self.jittable is not False:
            try:
                out = self._jitted(*arguments)
                self.jittable = True
                return out
            except Exception:
                if self.jittable:  # it ran under jit before: this failure is the function's own
                    raise
                self.jittable = False  # a host sync, a static lr: called as it is from now on
        if self._on_numpy is not False:
            try:
                out = self.fn(*arguments)
                self._on_numpy = True
                return out
            except Exception:
                if self._on_numpy:
                    raise
                self._on_numpy = False
        return self.fn(*jax.device_put(arguments))

    def _final(self, out, k: int) -> tuple[tuple | None, str]:
        """(the carry `out` holds after k batches, as floats by leaf, or None; why not, in words)."""
        if self.task == "pytree_training_step":
            output = read_params(out, k)
            final = output.final
        else:
            output = read(out, k)
            final = None if output.final is None else (output.final,)
        if final is None:
            what = "the params dict" if len(self.leaves) == 2 else "the final weight, one number"
            return None, (
                f"On {batches_text(k)} your function returned {output.shown}; the exercise asks for {what}."
            )
        return final, ""

    def path(
        self,
        start: dict,
        lr,
        x_batches,
        y_batches,
        *,
        momentum: float | None = None,
        cap: int = PREFIX_CAP,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> LearnerPath:
        """The function's carry after each of the first min(N, cap) prefixes of the batches.

        start: the carry's start by leaf, {"w": w0} or {"w": w0, "b": b0}.
        lr: the learning rate; for the schedule exercise the (N,) float32 schedule, whose first k
            entries go with the first k batches.
        x_batches, y_batches: float32 (N, B) arrays.
        momentum: the momentum exercise's.
        timeout: seconds for the whole path; past it, the steps computed so far are returned.
        """
        inputs, steps, wanted = self._cut(start, lr, x_batches, y_batches, momentum=momentum, cap=cap)
        key = self._shapes(inputs)
        with self._lock:  # `prepare` may be adding one on another thread
            program = self._programs.get(key)
            if program is not None:
                self._programs.move_to_end(key)
        outputs = []

        def work():
            if program is not None:
                outputs.append(np.asarray(program(inputs), np.float64))  # a row of leaves per prefix
                return
            for k in range(1, steps + 1):
                outputs.append(self._call(self._arguments(inputs, k)))

        began = time.perf_counter()
        if program is not None:
            # Compiled XLA, no Python of the learner's to stop: the sandbox's thread (0.5 ms a move)
            # could not stop it either.
            ended, value = "ran", work()
        else:
            ended, value = limited(work, timeout, "path")
        seconds = time.perf_counter() - began
        done = list(outputs)  # a thread out of time may still append
        problem = ""
        if ended == "raised":
            problem = f"On {batches_text(len(done) + 1)} your function raised {describe_error(value)}."
        elif ended == "timed out" and not done:
            doing = f"called on the first {len(done) + 1} of {steps} prefixes of the batches"
            problem = f"Your function is {too_slow(timeout, doing)}"
        first = [tuple(float(start[leaf]) for leaf in self.leaves)]
        if program is not None:
            carries = np.concatenate([np.array(first), done[0]])
            return LearnerPath(carries, self.leaves, wanted, seconds, True, programmed=True)
        carries = first
        for k, out in enumerate(jax.device_get(done), start=1):
            final, why = self._final(out, k)
            if final is None:
                problem = why
                break
            carries.append(final)
        return LearnerPath(
            np.array(carries, dtype=np.float64),
            self.leaves,
            wanted,
            seconds,
            bool(self.jittable),
            problem,
            timed_out=ended == "timed out" and not problem,
        )


def parting(learner: np.ndarray, reference: np.ndarray) -> int | None:
    """The first step k >= 1 at which the carries (rows of (steps + 1, leaves) arrays, row k after k
    steps) differ in any leaf, over the steps both hold; None when they never do. A leaf agrees when
    it matches as the checker matches (core.exercises.reading.close: within TOLERANCE of the
    lesson's, max(1, |value|) times), or when neither is a finite number (both runs diverged)."""
    steps = min(len(learner), len(reference))
    mine, model = np.asarray(learner[1:steps], np.float64), np.asarray(reference[1:steps], np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.isfinite(mine) & (np.abs(mine - model) <= TOLERANCE * np.maximum(1.0, np.abs(model)))
    agree = near | ~(np.isfinite(mine) | np.isfinite(model))
    parted = np.flatnonzero(~np.all(agree, axis=1))
    return int(parted[0]) + 1 if parted.size else None


__all__ = [
    "batches_text",
    "LEAVES",
    "PREFIX_CAP",
    "TASKS",
    "TOLERANCE",
    "LearnerLoop",
    "LearnerPath",
    "parting",
]
