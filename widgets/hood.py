"""Under the hood: the patterns around the scan, one panel each, beside the explorer.

- "invariants": three ways to hand a scan body an input that does not change, their results,
  jaxprs and memory, and the rule for a closed-over learning rate;
- "loops": `lax.scan` under jit, a Python loop around a jitted step and the loop unrolled inside
  jit, compile and run time against N, measured live in a subprocess; and the cost of host syncs;
- "optax": the pure train step on a parameter pytree, with an Optax optimizer.

Each panel is built the first time its section is opened (`UnderTheHood.show`), so a page that
never opens one pays nothing for it. Callbacks read the controls and call `core`; each panel shows
the source of the core functions it runs.
"""

from __future__ import annotations

import fcntl
import html
import json
import math
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go

import core
from core import lesson, linear, optimizers, strategies, timing
from widgets.batch import batched, or_unbatched
from widgets.code import code_view, source_html
from widgets.controls import Choice, LogSlider, Menu, pin
from widgets.figures import COLORS, GREY, base_layout
from widgets.layout import BESIDE, side_by_side
from widgets.surface import send, surface_maker

# The explorer's colours (widgets.figures.COLORS), with two more of 3:1 on white at least.
_PALETTE = (COLORS["sum"], COLORS["mean"], COLORS["optimum"], "#CC79A7", GREY, COLORS["diverged"])
_NOTICE = '<span class="scanlab-notice">&#9888; {}</span>'

# The sides of widgets.figures.MARGIN that the hood's line charts need wider as their panels open:
# log-scale tick labels ("100M", "0.001"; Plotly widened the left margin to 68 to 71 px) and an x
# axis whose range ends on a tick (the steps' "200": the right to 21 to 23 px), with room to spare
# for another machine's fonts. A margin Plotly widens costs the chart a second drawing; the pairs
# side by side keep equal plot widths. Wider labels later (a measurement, other steps, a loss that
# grows by orders of magnitude) can still widen a margin, drawn twice then as before.
HOOD_MARGIN = {"l": 78, "r": 28}


def _notice(text: str) -> str:
    return _NOTICE.format(html.escape(text))


def _jaxpr_html(jaxpr: str) -> str:
    """A jaxpr as JAX prints it, in a closed "jaxpr" disclosure that scrolls."""
    return (
        '<details><summary>jaxpr</summary><pre style="font-size: 11px; max-height: 22em; '
        f'overflow: auto; background: #f7f7f9; padding: 4px">{html.escape(jaxpr)}</pre></details>'
    )


def _columns(notes: dict, functions: dict, results: dict, jaxprs: dict) -> list:
    """One column per way (the keys of `notes`, in order): its name and note, its source, then its
    result and jaxpr widgets."""
    return [
        ipw.VBox(
            [
                ipw.HTML(f"<h4>{name}</h4><p>{html.escape(note)}</p>"),
                ipw.HTML(source_html(functions[name])),
                results[name],
                jaxprs[name],
            ],
            layout={"width": "33%", "min_width": "320px", "padding": "0 6px"},
        )
        for name, note in notes.items()
    ]


def _clamped(widget, low, high, default):
    """The widget's value as a finite number in [low, high]: a visitor can send anything over the
    widget protocol. Returns (value, notice or None) and writes a fixed value back."""
    raw = widget.value
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not math.isfinite(value):
        fixed, words = default, f"{widget.description} = {str(raw)[:40]!s} is not a number; using {default}."
    elif not low <= value <= high:
        fixed = min(max(value, low), high)
        words = f"{widget.description} = {value:g} is outside {low:g} to {high:g}; using {fixed:g}."
    else:
        return value, None
    widget.value = type(widget.value)(fixed) if isinstance(widget.value, (int, float)) else fixed
    return fixed, words


# Loop-invariant inputs ---------------------------------------------------------------------------

_WHERE = {
    "scanned input": "a <b>scanned input</b>: a length-N array built before the loop, one element a step",
    "carry": "part of the <b>carry</b>",
    "constant": "a <b>constant of the loop</b> (<code>num_consts=1</code>): one value, read every step",
}
_NOTES = {
    "duplicate": "b repeated N times and scanned with a.",
    "carry": "b carried along unchanged. JAX sees the carry never changes and passes it as a loop "
    "constant, exactly as for the closure.",
    "closure": "the body closes over b: the cleanest of the three.",
}
MEMORY_LENGTHS = 10 ** np.arange(1, 8)
# On the worked example's data: monotone below 0.25, oscillating above.
LR_DEMO = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


class InvariantsPanel:
    """The three ways to hand a scan an input that does not change, side by side for
    a = arange(len), b, with their jaxprs; what duplication costs as the sequence grows; one trace
    for many closed-over learning rates."""

    def __init__(self, figure, beside: str = BESIDE, batch=None):
        del beside  # its one chart has a row to itself; taken as every panel takes it (UnderTheHood)
        self.batch = or_unbatched(batch)  # a move's changes go to the page as one message
        self.length = ipw.IntSlider(value=5, min=1, max=12, description="len(a)")
        self.length.tooltip = "a = arange(len(a)), the scanned sequence"
        self.b = ipw.FloatSlider(value=2.0, min=-5.0, max=5.0, step=0.5, description="b")
        self.b.tooltip = "the input that does not change across iterations"
        self.notice = ipw.HTML()
        self.results = {name: ipw.HTML() for name in core.STRATEGIES}
        self.jaxprs = {name: ipw.HTML() for name in core.STRATEGIES}
        columns = _columns(_NOTES, strategies.FUNCTIONS, self.results, self.jaxprs)
        memory = core.strategy_memory(MEMORY_LENGTHS)
        self.memory = memory
        self.memory_figure = figure(
            data=[
                go.Scatter(
                    x=memory.lengths,
                    y=memory.temp_bytes[name],
                    name=name,
                    mode="lines+markers",
                    line={"color": _PALETTE[i], "width": 2, "dash": "dot" if name == "carry" else "solid"},
                    hovertemplate="N = %{x:,}<br>%{y:,} bytes<extra>" + name + "</extra>",
                )
                for i, name in enumerate(core.STRATEGIES)
            ],
            layout=base_layout(
                "Working memory of the compiled scan, float32 a and scalar b<br><sup>XLA's "
                "memory_analysis().temp_size_in_bytes; carry and closure overlap</sup>",
                "sequence length N",
                "temporary bytes",
                "log",
                margin=HOOD_MARGIN,
                xaxis={"title": {"text": "sequence length N"}, "type": "log"},
            ),
        )
        self.lr_rule = ipw.HTML(self._lr_text())
        self.widget = ipw.VBox(
            [
                ipw.HBox([self.length, self.b]),
                self.notice,
                ipw.HBox(columns, layout={"flex_flow": "row wrap"}),
                self.memory_figure,
                self.lr_rule,
                code_view([strategies.closed_over_lr, strategies.lr_traces]),
            ]
        )
        for control in (self.length, self.b):
            pin(control)
            control.observe(self._update, names="value")
        self._update()

    @staticmethod
    def _lr_text() -> str:
        x = np.ones((2, 2), np.float32)  # the worked example's batches
        traces = core.lr_traces(LR_DEMO, x, x)
        rows = "".join(
            f"<tr><td>{lr:g}</td><td>{w:.6g}</td></tr>"
            for lr, w in zip(traces.lrs, traces.weights, strict=True)
        )
        return (
            "<h4>A learning rate closed over by the scan body is still traced</h4>"
            "<p>The body can read <code>lr</code> from the enclosing function, so it need not be "
            "in the carry; and closing over it does not make it a static argument of the jitted function. "
            f"<code>jax.jit(closed_over_lr)</code> ran at these {len(LR_DEMO)} learning rates on the "
            f"worked example's two batches of ones: <b>{traces.traces_traced} trace</b> with lr traced, "
            "against "
            f"<b>{traces.traces_static} traces</b> (and as many compiles) with "
            '<code>static_argnames="lr"</code>.</p>'
            f'<table style="border-collapse: collapse"><tr><th>lr</th><th>final w</th></tr>{rows}</table>'
        )

    @batched
    def _update(self, change=None) -> None:
        length, first = _clamped(self.length, 1, 12, 5)
        b, second = _clamped(self.b, -5.0, 5.0, 2.0)
        self.notice.value = "<br>".join(_notice(n) for n in (first, second) if n)
        a = np.arange(int(length), dtype=np.float32)
        results = core.invariant_strategies(a, b)
        for name, (total, per_step) in results.items():
            where = core.where_b_lives(name, a, b)
            values = " ".join(f"{v:g}" for v in np.asarray(per_step).tolist())
            self.results[
                name
            ].value = (
                f"<p>total = <b>{float(total):g}</b>, per step = [{values}]<br>b is {_WHERE[where]}.</p>"
            )
            self.jaxprs[name].value = _jaxpr_html(core.strategy_jaxpr(name, a, b))


# Where the learning rate lives --------------------------------------------------------------------

_LR_NOTES = {
    "closed over": "A constant lr: the step reads it from the enclosing function.",
    "scanned": "A schedule known before the loop (Optax's exponential decay, evaluated for each step): "
    "N rates scanned with the batches, step k reading lrs[k].",
    "carry": "The same schedule inside Optax: the carry is (w, opt_state), and the state's step count "
    "gives each step's rate.",
}
_LR_WHERE = {
    "constant": "a <b>constant of the loop</b> (<code>num_consts</code>): one value, read every step",
    "scanned input": "a <b>scanned input</b>: one rate per step, beside the batches",
    "carry": "computed from an int32 step count in the <b>carry</b>, which the step advances",
}


class LrPanel:
    """Where a scan's learning rate lives: closed over (constant), scanned with the batches (a
    schedule) or derived from Optax's step count in the carry, on the worked example's batches of
    ones, with each loop's code, its numbers, what its jaxpr says and the jaxpr itself."""

    def __init__(self, figure, beside: str = BESIDE, batch=None):
        del figure, beside  # no chart here; taken as every panel takes them (UnderTheHood)
        self.batch = or_unbatched(batch)
        self.lr = ipw.FloatSlider(value=0.1, min=0.01, max=0.3, step=0.01, description="lr")
        self.lr.tooltip = "the constant rate, and where the schedules start"
        self.steps = ipw.IntSlider(value=5, min=2, max=8, description="N")
        self.steps.tooltip = "steps: batches of two ones each"
        self.notice = ipw.HTML()
        self.results = {name: ipw.HTML() for name in core.LR_PLACES}
        self.jaxprs = {name: ipw.HTML() for name in core.LR_PLACES}
        columns = _columns(_LR_NOTES, strategies.LR_FUNCTIONS, self.results, self.jaxprs)
        self.widget = ipw.VBox(
            [
                ipw.HBox([self.lr, self.steps]),
                self.notice,
                ipw.HBox(columns, layout={"flex_flow": "row wrap"}),
            ]
        )
        for control in (self.lr, self.steps):
            pin(control)
            control.observe(self._update, names="value")
        self._update()

    @batched
    def _update(self, change=None) -> None:
        lr, first = _clamped(self.lr, 0.01, 0.3, 0.1)
        steps, second = _clamped(self.steps, 2, 8, 5)
        self.notice.value = "<br>".join(_notice(n) for n in (first, second) if n)
        x = np.ones((int(steps), 2), np.float32)  # the worked example's batches, N of them
        for name, place in core.lr_places(0.0, lr, x, x).items():
            values = ", ".join(f"{v:.4g}" for v in place.weights.tolist())
            self.results[name].value = (
                f"<p>final w = <b>{place.final_w:.6g}</b>, w after each step = [{values}]<br>"
                f"lr is {_LR_WHERE[place.where]}.</p>"
            )
            self.jaxprs[name].value = _jaxpr_html(place.jaxpr)


# Python loop vs scan vs unrolled jit -------------------------------------------------------------

RANGES_OF_N = {
    "up to 100": (10, 20, 50, 100),
    "up to 200": (10, 20, 50, 100, 150, 200),
    "up to 1000": (10, 20, 50, 100, 150, 200, 500, 1000),
}
SYNC_EVERY = (1, 10, 100, None)
SYNC_N = 1000
_WAY_WORDS = {
    "scan": "lax.scan under jit",
    "python": "Python loop over a jitted step",
    "unrolled": "Python loop unrolled inside jit",
}


MEASURING_SLOTS = 2
"""How many timing processes may run at once on this machine, over every kernel: an unrolled compile
at N = 200 takes a core and about 700 MB for 15 s, and a class pressing Measure together must not
starve everyone's sliders."""


def _take_slot(folder: str | None = None):
    """An open file holding an exclusive lock on one of MEASURING_SLOTS lock files shared by every
    process on the machine, or None when all are taken. Closing the file frees the slot, and so
    does the kernel's death."""
    folder = folder or tempfile.gettempdir()
    for slot in range(MEASURING_SLOTS):
        handle = open(os.path.join(folder, f"scanlab-timing-{slot}.lock"), "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except OSError:
            handle.close()
    return None


def measurement_command(ns, *, sync: bool = True) -> list[str]:
    """The command that measures every way at `ns` (and the host syncs): `core.timing`'s command
    line in a fresh Python, so a timeout can kill it and no cache of this kernel distorts a compile."""
    arguments = ["--ways", ",".join(core.WAYS), "--ns", ",".join(str(n) for n in ns)]
    if sync:
        every = ",".join("none" if k is None else str(k) for k in SYNC_EVERY)
        arguments += ["--sync-every", every, "--sync-n", str(SYNC_N)]
    # -c rather than -m: `core` imports core.timing, and runpy warns about running a loaded module.
    return [sys.executable, "-c", "import sys; from core.timing import main; sys.exit(main())", *arguments]


class LoopsPanel:
    """Compile and run time against N of the three ways to write the loop, measured on demand in a
    subprocess with a timeout; the controls stay live while it runs, and Stop ends it."""

    def __init__(self, figure, beside: str = BESIDE, batch=None):
        self.root = str(Path(core.__file__).resolve().parent.parent)  # where `import core` works
        self.batch = or_unbatched(batch)  # Measure's changes go to the page as one message
        self.last_returncode: int | None = None
        self.slot_folder: str | None = None  # where the MEASURING_SLOTS lock files live (tests)
        self.largest = Choice(options=list(RANGES_OF_N), value="up to 100", description="N")
        self.largest.style = {"button_width": "7em"}
        self.largest.tooltip = (
            f"the unrolled loop stops at N = {core.UNROLL_CAP}: its compile grows faster than N"
        )
        self.timeout = ipw.BoundedIntText(value=60, min=5, max=600, description="timeout (s)")
        self.timeout.style = {"description_width": "6em"}
        self.measure_button = ipw.Button(description="Measure", icon="play", button_style="primary")
        self.stop_button = ipw.Button(description="Stop", icon="stop", disabled=True)
        self.status = ipw.HTML(
            "Press <b>Measure</b>: a separate Python process compiles and runs each way at each N "
            "(about 10 s up to N = 100, 30 s up to 200 on a 2-core CPU); points appear as they come."
        )
        axes = {"type": "log"}
        self.compile_figure = figure(data=self._loop_traces(), layout=self._loop_layout("compile", axes))
        self.run_figure = figure(data=self._loop_traces(), layout=self._loop_layout("run", axes))
        self.sync_figure = figure(
            data=[
                go.Bar(
                    x=[],
                    y=[],
                    marker={"color": _PALETTE[3]},
                    hovertemplate="%{x}<br>%{y:.3g} ms<br>%{customdata} host syncs<extra></extra>",
                )
            ],
            layout=base_layout(
                f"Host syncs: a Python loop of N = {SYNC_N} jitted steps, reading the loss…",
                "float(loss) every",
                "run time (ms)",
                showlegend=False,
            ),
        )
        self.points: dict = {}  # (way, n) -> (compile_s, run_s), the latest measurement
        self.syncs: dict = {}  # every -> (run_s, syncs)
        self._process: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        pin(self.largest)
        pin(self.timeout)
        self.measure_button.on_click(lambda _: self.measure())
        self.stop_button.on_click(lambda _: self.stop())
        self.widget = ipw.VBox(
            [
                ipw.HBox(
                    [self.largest, self.timeout, self.measure_button, self.stop_button],
                    layout={"flex_flow": "row wrap", "align_items": "center"},
                ),
                self.status,
                side_by_side([self.compile_figure, self.run_figure], beside=beside),
                self.sync_figure,
                code_view(
                    [
                        timing.scan_loop,
                        timing.python_loop,
                        timing.unrolled_loop,
                        lesson.train_step,
                        lesson.batch_loss,
                        timing.logging_loop,
                    ]
                ),
            ]
        )

    @staticmethod
    def _loop_traces():
        return [
            go.Scatter(
                x=[],
                y=[],
                name=_WAY_WORDS[way],
                mode="lines+markers",
                line={"color": _PALETTE[i], "width": 2},
                hovertemplate="N = %{x}<br>%{y:.3g} s<extra>" + way + "</extra>",
            )
            for i, way in enumerate(core.WAYS)
        ]

    @staticmethod
    def _loop_layout(what: str, axes: dict) -> dict:
        titles = {
            "compile": ("Compile time (trace, lower, compile)", "compile time (s)"),
            "run": ("Run time of the compiled loop (median of 3)", "run time (s)"),
        }
        title, y_title = titles[what]
        return base_layout(
            title,
            "N (steps)",
            y_title,
            "log",
            margin=HOOD_MARGIN,
            xaxis={"title": {"text": "N (steps)"}, **axes},
        )

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @batched
    def measure(self) -> None:
        """Start a measurement over the chosen range of N, unless one is running."""
        if self.running:
            return
        timeout, problem = _clamped(self.timeout, 5, 600, 60)
        choice = self.largest.value if self.largest.value in RANGES_OF_N else "up to 100"
        ns = RANGES_OF_N[choice]
        self.points, self.syncs = {}, {}
        self._draw()
        self._stop.clear()
        self.measure_button.disabled, self.stop_button.disabled = True, False
        notice = f"{_notice(problem)}<br>" if problem else ""
        self.status.value = (
            f"{notice}<i>Starting a Python process to measure N = {', '.join(map(str, ns))}…</i>"
        )
        self._thread = threading.Thread(
            target=self._run, args=(ns, float(timeout)), daemon=True, name="loop-timing"
        )
        self.batch.flush()  # "Starting…" reaches the page before the thread's points
        self._thread.start()

    def stop(self) -> None:
        """End a running measurement; the points so far stay."""
        self._stop.set()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the running measurement has ended (tests and scripts)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, ns, timeout: float) -> None:
        start = time.monotonic()
        ended = "finished"
        environment = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
        environment.pop("JAX_COMPILATION_CACHE_DIR", None)
        lines: queue.Queue = queue.Queue()
        reader = None
        slot = _take_slot(self.slot_folder)
        if slot is None:
            self._busy()
            return
        try:
            self._process = subprocess.Popen(
                measurement_command(ns),
                cwd=self.root,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            reader = threading.Thread(target=_read_lines, args=(self._process.stdout, lines), daemon=True)
            reader.start()
            while True:
                if self._stop.is_set():
                    ended = "stopped"
                    break
                if time.monotonic() - start > timeout:
                    ended = "timeout"
                    break
                try:
                    line = lines.get(timeout=0.1)
                except queue.Empty:
                    continue
                if line is None:  # the process closed its output
                    break
                self._record(line, start)
        except Exception as error:  # a measurement is a view: say so, keep the panel usable
            ended = f"failed ({type(error).__name__}: {error})"
        finally:
            process = self._process
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.wait()
                if reader is not None:
                    reader.join(5)  # the pipe ends with the process
                process.stdout.close()
                self.last_returncode = process.returncode
            slot.close()
            self._finish(ended, time.monotonic() - start, ns, process.returncode if process else None)

    def _busy(self) -> None:
        with self._lock:
            self.status.value = _notice(
                f"{MEASURING_SLOTS} measurements are already running on this server (one per visitor "
                "who pressed Measure); try again in a minute."
            )
            self.measure_button.disabled, self.stop_button.disabled = False, True

    def _record(self, line: str, start: float) -> None:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return
        kind = record.get("kind")
        with self._lock:
            if kind == "loop":
                self.points[(record["way"], int(record["n"]))] = (record["compile_s"], record["run_s"])
                words = f"{record['way']} at N = {record['n']}: compiled in {record['compile_s']:.3g} s"
            elif kind == "sync":
                self.syncs[record["every"]] = (record["run_s"], record["syncs"])
                words = f"host syncs every {record['every'] or 'never'}: {1000 * record['run_s']:.3g} ms"
            else:
                return
            self._draw()
            self.status.value = (
                f"<i>Measuring… {time.monotonic() - start:.0f} s; last: {html.escape(words)}</i>"
            )

    def _draw(self) -> None:
        for figure, column in ((self.compile_figure, 0), (self.run_figure, 1)):
            traces = []
            for way in core.WAYS:
                ns = sorted(n for (w, n) in self.points if w == way)
                traces.append(
                    {"x": np.asarray(ns, float), "y": np.asarray([self.points[(way, n)][column] for n in ns])}
                )
            send(figure, traces, range(len(core.WAYS)))
        everies = [k for k in SYNC_EVERY if k in self.syncs]
        send(
            self.sync_figure,
            [
                {
                    "x": [
                        "every step" if k == 1 else f"every {k} steps" if k else "only at the end"
                        for k in everies
                    ],
                    "y": np.asarray([1000 * self.syncs[k][0] for k in everies]),
                    "customdata": [self.syncs[k][1] for k in everies],
                }
            ],
            [0],
        )

    def _finish(self, ended: str, elapsed: float, ns, returncode) -> None:
        with self._lock:
            missing = [
                f"{way} at N = {n}"
                for n in ns
                for way in core.WAYS
                if (way, n) not in self.points and not (way == "unrolled" and n > core.UNROLL_CAP)
            ]
            if ended == "finished" and returncode == 0 and not missing:
                words = f"Done in {elapsed:.0f} s."
                if max(ns) > core.UNROLL_CAP:
                    words += (
                        f" The unrolled loop stops at N = {core.UNROLL_CAP}: its compile grows faster than N."
                    )
                self.status.value = words
            else:
                reason = {
                    "timeout": f"Stopped at the timeout, {elapsed:.0f} s",
                    "stopped": f"Stopped after {elapsed:.0f} s",
                    "finished": f"The measuring process ended early (exit status {returncode})",
                }.get(ended, f"The measurement {ended}")
                more = " and more" if len(missing) > 6 else ""
                self.status.value = _notice(
                    f"{reason}; not measured: {', '.join(missing[:6])}{more}. "
                    "The points so far are shown; a longer timeout or a smaller N range measures the rest."
                )
            self._process = None
            self.measure_button.disabled, self.stop_button.disabled = False, True


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


# Pytree parameters and Optax ---------------------------------------------------------------------

MAX_STEPS = 1024  # the compiled scan's length: every steps value shares one compile
BATCH_SIZES = {"full (256)": None, "128": 128, "64": 64, "32": 32, "16": 16, "8": 8, "1": 1}
PARAMETERS = ("w[0]", "w[1]", "w[2]", "b")


class OptaxPanel:
    """`core.train_linear` on the pure train-step example's data for a chosen optimizer, lr, batch
    size, steps and seed: each parameter and the loss per step. One compile per optimizer, made
    when the panel is built; no slider compiles."""

    def __init__(self, figure, beside: str = BESIDE, batch=None):
        self.batch = or_unbatched(batch)  # a move's changes go to the page as one message
        self.optimizer = Choice(options=list(core.OPTIMIZERS), value="sgd", description="optimizer")
        self.lr = LogSlider(value=0.1, base=10, min=-4, max=0.5, step=None, description="lr")
        self.lr.readout_format = ".4g"
        self.batch_size = Menu(options=list(BATCH_SIZES), value="full (256)", description="batch size")
        self.steps = ipw.IntSlider(value=200, min=1, max=MAX_STEPS, description="steps")
        self.seed = ipw.BoundedIntText(value=0, min=0, max=9999, description="seed", layout={"width": "12em"})
        controls = (self.optimizer, self.lr, self.batch_size, self.steps, self.seed)
        for control in controls:
            control.style = {"description_width": "6em"}
        self.status = ipw.HTML()
        self._data = (0, *core.linear_data(0))  # (seed, x, y): drawn again only when the seed moves
        for optimizer in core.OPTIMIZERS:  # compile each now, not on a click
            core.train_linear(*self._data[1:], optimizer=optimizer, steps=1, max_steps=MAX_STEPS)
        fit, x_steps = self._fit()
        truth = [*core.TRUE_PARAMS["w"], core.TRUE_PARAMS["b"]]
        self.params_figure = figure(
            data=[
                go.Scatter(
                    x=x_steps,
                    y=values,
                    name=name,
                    mode="lines",
                    line={"color": _PALETTE[i], "width": 2},
                    hovertemplate="step %{x}<br>%{y:.5g}<extra>" + name + "</extra>",
                )
                for i, (name, values) in enumerate(zip(PARAMETERS, self._columns(fit), strict=True))
            ]
            + [
                go.Scatter(
                    x=[0, MAX_STEPS],
                    y=[value, value],
                    mode="lines",
                    line={"color": _PALETTE[i], "width": 1, "dash": "dash"},
                    name=f"true {name} = {value:g}",
                    showlegend=False,
                    hoverinfo="skip",
                )
                for i, (name, value) in enumerate(zip(PARAMETERS, truth, strict=True))
            ],
            layout=base_layout(
                "Each parameter after every step (dashed: the true values)",
                "step",
                "value",
                margin=HOOD_MARGIN,
                xaxis={"title": {"text": "step"}, "range": [0, self.steps.value]},
            ),
        )
        self.loss_figure = figure(
            data=[
                go.Scatter(
                    x=x_steps,
                    y=self._positive(fit.losses),
                    mode="lines",
                    line={"color": _PALETTE[5], "width": 2},
                    name="loss",
                    hovertemplate="step %{x}<br>loss %{y:.3g}<extra></extra>",
                )
            ],
            layout=base_layout(
                "Minibatch loss before each step",
                "step",
                "mean squared error",
                "log",
                margin=HOOD_MARGIN,
                showlegend=False,
            ),
        )
        self.status.value = self._status_text(fit)
        self.widget = ipw.VBox(
            [
                ipw.HBox([self.optimizer, self.batch_size, self.seed], layout={"flex_flow": "row wrap"}),
                ipw.HBox([self.lr, self.steps], layout={"flex_flow": "row wrap"}),
                self.status,
                side_by_side([self.params_figure, self.loss_figure], beside=beside),
                code_view([linear.train_step, linear.loss_fn, optimizers.make_optimizer, linear._fit_kernel]),
            ]
        )
        for control in controls:
            pin(control)
            control.observe(self._update, names="value")

    def _read(self):
        notices = []
        optimizer = self.optimizer.value if self.optimizer.value in core.OPTIMIZERS else "sgd"
        if self.batch_size.value not in BATCH_SIZES:
            self.batch_size.value = "full (256)"
        lr, problem = _clamped(self.lr, 1e-4, 10**0.5, 0.1)
        notices.append(problem)
        steps, problem = _clamped(self.steps, 1, MAX_STEPS, 200)
        notices.append(problem)
        seed, problem = _clamped(self.seed, 0, 9999, 0)
        notices.append(problem)
        batch = BATCH_SIZES[self.batch_size.value]
        return optimizer, lr, batch, int(steps), int(seed), [n for n in notices if n]

    def _fit(self):
        optimizer, lr, batch, steps, seed, self._notices = self._read()
        if self._data[0] != seed:
            self._data = (seed, *core.linear_data(seed))
        _, x, y = self._data
        fit = core.train_linear(
            x, y, optimizer=optimizer, lr=lr, steps=steps, batch_size=batch, seed=seed, max_steps=MAX_STEPS
        )
        return fit, np.arange(1, steps + 1)

    @staticmethod
    def _columns(fit):
        w = fit.history["w"].astype(np.float64)
        return [w[:, 0], w[:, 1], w[:, 2], fit.history["b"].astype(np.float64)]

    @staticmethod
    def _positive(values):
        values = np.asarray(values, np.float64)
        return np.where(np.isfinite(values) & (values > 0), values, np.nan)

    def _status_text(self, fit) -> str:
        w, b, loss = fit.params["w"], float(fit.params["b"]), float(fit.losses[-1])
        notices = "".join(_notice(n) + "<br>" for n in self._notices)
        if not (np.all(np.isfinite(w)) and np.isfinite(b) and np.isfinite(loss)):
            return notices + _notice(
                f"Diverged: the parameters overflowed to inf or NaN. {self.optimizer.value} at lr = "
                f"{self.lr.value:.4g} is too large a step for these data; try a smaller lr."
            )
        values = ", ".join(f"{v:.4g}" for v in w)
        return (
            f"{notices}After {len(fit.losses)} steps of {self.optimizer.value}: w = [{values}], b = {b:.4g}, "
            f"last minibatch loss {loss:.3g} (true w = [2, -1, 0.5], b = 3)"
        )

    @batched
    def _update(self, change=None) -> None:
        fit, x_steps = self._fit()
        columns = self._columns(fit)
        send(
            self.params_figure,
            [{"x": x_steps, "y": _finite_or_nan(values)} for values in columns],
            range(len(PARAMETERS)),
            {"xaxis.range": [0, int(x_steps[-1])]},
        )
        send(self.loss_figure, [{"x": x_steps, "y": self._positive(fit.losses)}], [0])
        self.status.value = self._status_text(fit)


def _finite_or_nan(values):
    values = np.asarray(values, np.float64)
    return np.where(np.isfinite(values), values, np.nan)


# The section ---------------------------------------------------------------------------------------

PANELS = {
    "invariants": ("Loop-invariant inputs: duplicate, carry or closure", InvariantsPanel),
    "loops": ("Python loop vs lax.scan vs unrolled jit: compile and run time", LoopsPanel),
    "optax": ("Pytree parameters and Optax optimizers", OptaxPanel),
    "lr": ("Where the learning rate lives: closed over, scanned or in the carry", LrPanel),
}


class UnderTheHood:
    """The panels of `PANELS`, each built the first time its accordion is opened: `panels` holds
    the built ones by name. `figure` makes their charts and `beside` is how narrow one may be drawn
    beside another (`side_by_side`: the projector view's charts need more); with `batch` (a
    widgets.batch.Batch on the page), each callback's changes go to the page as one message."""

    def __init__(self, figure=None, beside: str = BESIDE, batch=None):
        self._figure = figure or surface_maker()
        self._beside = beside
        self._batch = batch
        self.panels: dict = {}
        self.sections: dict = {}

    def show(self, name: str) -> ipw.Accordion:
        """The closed section for panel `name`; opening it builds the panel (a second or two)."""
        if name not in PANELS:
            raise ValueError(f"name must be one of {tuple(PANELS)}, got {name!r}"[:200])
        if name in self.sections:
            return self.sections[name]
        title, _ = PANELS[name]
        placeholder = ipw.HTML("<i>Building the panel…</i>")
        section = ipw.Accordion(children=[placeholder], selected_index=None)
        section.set_title(0, title)
        section.observe(
            lambda change: self._open(name) if change["new"] == 0 else None, names="selected_index"
        )
        self.sections[name] = section
        return section

    def open(self, name: str):
        """Open section `name` (building its panel) and return the panel."""
        self.show(name).selected_index = 0
        return self.panels[name]

    def _open(self, name: str) -> None:
        if name in self.panels:
            return
        section = self.sections[name]
        try:
            panel = PANELS[name][1](self._figure, beside=self._beside, batch=self._batch)
        except Exception as error:  # say so in the section; the rest of the page carries on
            words = f"This panel could not be built ({type(error).__name__}: {str(error)[:200]})."
            section.children = [ipw.HTML(_notice(words))]
            return
        self.panels[name] = panel
        section.children = [panel.widget]


__all__ = [
    "PANELS",
    "InvariantsPanel",
    "LoopsPanel",
    "LrPanel",
    "OptaxPanel",
    "UnderTheHood",
    "measurement_command",
]
