"""The "loops" panel: `lax.scan` under jit, a Python loop around a jitted step and the loop unrolled
inside jit, compile and run time against N, measured live (widgets.hood.measure runs the process);
and the cost of host syncs."""

from __future__ import annotations

import html
import threading
from functools import partial
from pathlib import Path

import ipywidgets as ipw
import numpy as np
import plotly.graph_objects as go

import core
from core.shown import shown
from widgets.batch import batched, or_unbatched
from widgets.chart import base_layout
from widgets.code import code_view
from widgets.controls import Choice, pin
from widgets.hood.common import HOOD_MARGIN, PALETTE, Range, clamped, notice, notices_html, ranged
from widgets.hood.measure import BUSY, MEASURING_SLOTS, SYNC_EVERY, SYNC_N, Runner, measurement_command
from widgets.layout import BESIDE, side_by_side
from widgets.surface import send

RANGES_OF_N = {
    "up to 100": (10, 20, 50, 100),
    "up to 200": (10, 20, 50, 100, 150, 200),
    "up to 1000": (10, 20, 50, 100, 150, 200, 500, 1000),
}
DEFAULT_RANGE_OF_N = "up to 100"
RANGES = {"timeout": Range(5, 600, 60)}
"""The timeout's range in seconds, read by its box and by the clamp of every value a visitor sends."""

_WAY_WORDS = {
    "scan": "lax.scan under jit",
    "python": "Python loop over a jitted step",
    "unrolled": "Python loop unrolled inside jit",
}


class LoopsPanel:
    """Compile and run time against N of the three ways to write the loop, measured on demand in a
    subprocess with a timeout; the controls stay live while it runs, and Stop ends it."""

    def __init__(self, figure, beside: str = BESIDE, batch=None, code: bool = True):
        self.root = str(Path(core.__file__).resolve().parent.parent)  # where `import core` works
        self.batch = or_unbatched(batch)  # Measure's changes go to the page as one message
        self.last_returncode: int | None = None
        self.slot_folder: str | None = None  # where the MEASURING_SLOTS lock files live (tests)
        self.largest = Choice(options=list(RANGES_OF_N), value=DEFAULT_RANGE_OF_N, description="N")
        self.largest.style = {"button_width": "7em"}
        self.largest.tooltip = (
            f"the unrolled loop stops at N = {core.UNROLL_CAP}: its compile grows faster than N"
        )
        self.timeout = ranged(ipw.BoundedIntText, RANGES["timeout"], "timeout (s)")
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
                    marker={"color": PALETTE[3]},
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
        self._runner = Runner()
        self._lock = threading.Lock()  # the runner's thread and the kernel's both write the widgets
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
                *([code_view(shown("loops"))] if code else []),
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
                line={"color": PALETTE[i], "width": 2},
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
        return self._runner.running

    def _read(self) -> tuple[tuple, float, list]:
        """(the Ns to measure, the timeout in seconds, notices): an unknown range of N is the
        default's, the timeout clamped to RANGES with a notice (or None)."""
        timeout, problem = clamped(self.timeout, RANGES["timeout"])
        choice = self.largest.value if self.largest.value in RANGES_OF_N else DEFAULT_RANGE_OF_N
        return RANGES_OF_N[choice], float(timeout), [problem]

    @batched
    def measure(self) -> None:
        """Start a measurement over the chosen range of N, unless one is running."""
        if self.running:
            return
        ns, timeout, notices = self._read()
        self.points, self.syncs = {}, {}
        self._draw()
        self.measure_button.disabled, self.stop_button.disabled = True, False
        self.status.value = (
            f"{notices_html(notices, trailing=True)}<i>Starting a Python process to measure "
            f"N = {', '.join(map(str, ns))}…</i>"
        )
        self.batch.flush()  # "Starting…" reaches the page before the thread's points
        self._runner.start(
            measurement_command(ns),
            self.root,
            timeout,
            self._record,
            partial(self._finish, ns),
            slot_folder=self.slot_folder,
        )

    def stop(self) -> None:
        """End a running measurement; the points so far stay."""
        self._runner.stop()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the running measurement has ended (tests and scripts)."""
        self._runner.wait(timeout)

    def _record(self, record, elapsed: float) -> None:
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
            self.status.value = f"<i>Measuring… {elapsed:.0f} s; last: {html.escape(words)}</i>"

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

    def _finish(self, ns, ended: str, elapsed: float, returncode) -> None:
        with self._lock:
            if returncode is not None:  # a process ran
                self.last_returncode = returncode
            self.status.value = self._ended_text(ns, ended, elapsed, returncode)
            self.measure_button.disabled, self.stop_button.disabled = False, True

    def _ended_text(self, ns, ended: str, elapsed: float, returncode) -> str:
        """The status line once a measurement of `ns` has ended (HTML)."""
        if ended == BUSY:
            return notice(
                f"{MEASURING_SLOTS} measurements are already running on this server (one per visitor "
                "who pressed Measure); try again in a minute."
            )
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
            return words
        reason = {
            "timeout": f"Stopped at the timeout, {elapsed:.0f} s",
            "stopped": f"Stopped after {elapsed:.0f} s",
            "finished": f"The measuring process ended early (exit status {returncode})",
        }.get(ended, f"The measurement {ended}")
        more = " and more" if len(missing) > 6 else ""
        return notice(
            f"{reason}; not measured: {', '.join(missing[:6])}{more}. "
            "The points so far are shown; a longer timeout or a smaller N range measures the rest."
        )


__all__ = ["DEFAULT_RANGE_OF_N", "RANGES", "RANGES_OF_N", "LoopsPanel"]
