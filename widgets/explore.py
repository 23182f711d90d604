"""`explore(fn)`: a learner's own function drawn beside the loop of the lesson, in the notebook.

The learner's function and the lesson's loop run on the same batches; the charts draw both
trajectories, both losses per step and, for the params dict, both paths on the (w, b) contours, with
the first step at which they part marked on each (core.exercises.paths). A sentence under the charts
gives both carries and the batch of that step, and the checker's named mistake stands beside it.
Sliders re-run both on each move.

The learner's function runs on a worker thread under the checker's time limit: a move waits for it
briefly (a jitted function's path is drawn with the lesson's in one message), and a slow one is
drawn when it returns, the moves made meanwhile coalesced to the last. For the notebook and
JupyterLab only: a dashboard never runs a visitor's code.
"""

from __future__ import annotations

import concurrent.futures
import html
import threading

import ipywidgets as ipw
import numpy as np

from core.exercises.paths import LearnerLoop, batches_text
from core.exercises.report import DEFAULT_TIMEOUT, num
from widgets.chart import COLORS, NONE, PARTING_MARKER, TITLED_MARGIN, YOURS, Chart, base_layout, plottable
from widgets.controls import controls, pin
from widgets.exercise import TASKS, chosen_task
from widgets.layout import side_by_side
from widgets.model import Model
from widgets.settings import DEFAULTS, Settings, sanitize
from widgets.stability import on_loop, running_loop
from widgets.surface import surface_maker
from widgets.your_loop import (
    TASK_SETTINGS,
    View,
    carry_text,
    lesson_view,
    not_a_number,
    parting_text,
    seconds,
    walk,
)

START = DEFAULTS._replace(lr=0.01, N=40, B=16, w0=0.0, loss="sum")
"""Where `explore` starts: the explorer's data and a stable lr, over few enough steps that a
jittable function's first compiles (one per step) take about a second."""

CONTROLS = {
    "scan_training_step": ("lr", "N", "B", "w0"),
    "momentum_training_step": ("lr", "momentum", "N", "B", "w0"),
    "scheduled_training_step": ("lr", "schedule", "N", "B", "w0"),
    "pytree_training_step": ("lr", "N", "B", "w0", "b0"),
}
"""The sliders (and the schedule's menu) of each exercise's view, by Settings field."""

WAIT_S = 0.15
"""How long a move waits for the learner's path before drawing the lesson's loop alone: a jitted
function's 40 steps take a few ms once compiled, and are drawn with it in one message."""

LESSON = COLORS["sum"]


def _mark(view: View, values) -> dict:
    """The parting mark at step `view.parted` on `values` (a list of per-step arrays)."""
    k = view.parted
    if k is None:
        return {"x": [], "y": []}
    points = [float(v[k]) for v in values if k < len(v) and np.isfinite(v[k])]
    return {"x": [k] * len(points), "y": points}


def _yours(view: View, leaf: int) -> np.ndarray:
    return plottable(view.path.carries[:, leaf]) if view.path is not None else np.zeros(0)


class PathChart(Chart):
    name = "trajectory"
    title = "Your loop beside the lesson's<br><sup>the carry after each step; ✕ where they part</sup>"
    styles = [
        {
            "mode": "lines",
            "name": "w, the loop of the lesson",
            "line": {"color": LESSON, "width": 3},
            "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>the lesson's</extra>",
        },
        {**YOURS, "name": "w, your loop", "hovertemplate": "step %{x}<br>w = %{y:.6g}<extra>yours</extra>"},
        {
            "mode": "lines",
            "name": "b, the loop of the lesson",
            "line": {"color": LESSON, "width": 3, "dash": "dashdot"},
            "hovertemplate": "step %{x}<br>b = %{y:.6g}<extra>the lesson's</extra>",
        },
        {
            "mode": "lines+markers",
            "name": "b, your loop",
            "line": {**YOURS["line"], "dash": "dot"},
            "marker": {**YOURS["marker"], "symbol": "diamond"},
            "hovertemplate": "step %{x}<br>b = %{y:.6g}<extra>yours</extra>",
        },
        {**PARTING_MARKER, "hovertemplate": "they part after step %{x}<br>yours: %{y:.6g}<extra></extra>"},
    ]

    def layout(self, view, _=None):
        axis = "w and b" if len(view.leaves) == 2 else "weight w"
        return base_layout(self.title, "step", axis, margin=TITLED_MARGIN)

    def series(self, view, _=None):
        steps = np.arange(len(view.lesson), dtype=np.int32)
        yours = np.arange(view.path.steps + 1, dtype=np.int32) if view.path is not None else []
        traces = [
            {"x": steps, "y": plottable(view.lesson[:, 0])},
            {"x": yours, "y": _yours(view, 0)},
        ]
        if len(view.leaves) == 2:
            traces += [{"x": steps, "y": plottable(view.lesson[:, 1]), "visible": True}]
            traces += [{"x": yours, "y": _yours(view, 1), "visible": True}]
        else:
            traces += [NONE, NONE]
        return traces

    def marker(self, view, _=None, __=None):
        if view.path is None:
            return {"x": [], "y": []}
        return _mark(view, [view.path.carries[:, i] for i in range(view.path.carries.shape[1])])


class LossChart(Chart):
    name = "loss"
    floors = {}
    styles = [
        {
            "mode": "lines",
            "name": "the loop of the lesson",
            "line": {"color": LESSON, "width": 3},
            "hovertemplate": "step %{x}<br>loss = %{y:.4g}<extra>the lesson's</extra>",
        },
        {**YOURS, "name": "your loop", "hovertemplate": "step %{x}<br>loss = %{y:.4g}<extra>yours</extra>"},
        {
            **PARTING_MARKER,
            "hovertemplate": "step %{x}: the first loss at a carry that parted<extra></extra>",
        },
    ]

    def layout(self, view, _=None):
        layout = base_layout(
            "Loss per step<br><sup>each batch's sum loss at the carry its step started from</sup>",
            "step",
            "batch loss (log)",
            y_type="log",
            margin=TITLED_MARGIN,
        )
        layout["yaxis"]["exponentformat"] = "power"
        return layout

    def series(self, view, _=None):
        yours = view.your_losses
        return [
            {"x": np.arange(len(view.losses), dtype=np.int32), "y": plottable(view.losses, positive=True)},
            {"x": np.arange(len(yours), dtype=np.int32), "y": plottable(yours, positive=True)},
        ]

    def marker(self, view, _=None, __=None):
        yours = plottable(view.your_losses, positive=True)
        return _mark(view, [yours])


class PlaneChart(Chart):
    name = "plane"
    steps_across = False
    own_ranges = True  # the lesson's frame (widgets.model.Plane)
    title = "Both paths on L(w, b)<br><sup>ellipses: levels of the average loss; ★ (w*, b*)</sup>"
    styles = [
        {
            "mode": "lines",
            "name": "contours of L(w, b)",
            "line": {"color": "#8792a2", "width": 1},
            "hoverinfo": "skip",
        },
        {
            "mode": "lines",
            "name": "the loop of the lesson",
            "line": {"color": LESSON, "width": 3},
            "hovertemplate": "w = %{x:.6g}<br>b = %{y:.6g}<extra>the lesson's</extra>",
        },
        {**YOURS, "name": "your loop", "hovertemplate": "w = %{x:.6g}<br>b = %{y:.6g}<extra>yours</extra>"},
        {
            "mode": "markers",
            "name": "(w*, b*)",
            "marker": {"size": 13, "symbol": "star", "color": COLORS["optimum"]},
            "hovertemplate": "w* = %{x:.6g}<br>b* = %{y:.6g}<extra></extra>",
        },
        {
            **PARTING_MARKER,
            "hovertemplate": "they part here<br>w = %{x:.6g}<br>b = %{y:.6g}<extra>yours</extra>",
        },
    ]

    def layout(self, view, _=None):
        layout = base_layout(self.title, "weight w", "intercept b", margin=TITLED_MARGIN)
        plane = view.result.plane
        layout["xaxis"]["range"], layout["yaxis"]["range"] = plane.w_range, plane.b_range
        return layout

    def layout_update(self, view, _=None):
        plane = view.result.plane
        return {"xaxis.range": plane.w_range, "yaxis.range": plane.b_range}

    def series(self, view, _=None):
        contours, r = view.result.plane.contours, view.result
        return [
            {"x": contours.w, "y": contours.b},
            {"x": plottable(view.lesson[:, 0]), "y": plottable(view.lesson[:, 1])},
            {"x": _yours(view, 0), "y": _yours(view, 1)} if view.path is not None else {"x": [], "y": []},
            {"x": [r.w_star], "y": [r.b_star]},
        ]

    def marker(self, view, _=None, __=None):
        k = view.parted
        if k is None or view.path is None:
            return {"x": [], "y": []}
        return {"x": [float(view.path.carries[k, 0])], "y": [float(view.path.carries[k, 1])]}


class Exploration:
    """The view of `explore(fn)`: sliders, the charts of both loops, the sentence where they part,
    the checker's named mistake. `widget` is what a notebook shows (the object itself displays it).

    task: the exercise (a name of widgets.exercise.TASKS); settings: Settings to start from;
    background: run the learner's function on a worker thread (False: in the caller's, as tests do);
    timeout: seconds the learner's function may take per move (the checker's limit); model: the
    explorer's Model to compute the lesson's loop with (a new one by default); check: run the
    exercise's checker once, and show the mistake it names."""

    def __init__(
        self,
        fn,
        task: str,
        settings: Settings,
        *,
        chosen: str = "",
        notices=(),
        background: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        model: Model | None = None,
        check: bool = True,
    ):
        self.task, self.timeout = task, timeout
        self.loop = LearnerLoop(fn, task)
        self.model = model if model is not None else Model()
        self.settings = settings
        self._lock = threading.Lock()
        self._wanted = settings  # the settings of the newest move
        background = background and running_loop() is not None
        self._kernel = running_loop() if background else None
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "explore-path") if background else None
        self._checker = concurrent.futures.ThreadPoolExecutor(1, "explore-check") if background else None
        self._compiler = concurrent.futures.ThreadPoolExecutor(1, "explore-compile") if background else None
        self.report = None  # the checker's Report, once it has run
        self._future: concurrent.futures.Future | None = None  # the newest path asked of the worker

        self.inputs = {name: widget for name, widget in controls().items() if name in CONTROLS[task]}
        for name, widget in self.inputs.items():
            widget.value = getattr(settings, name)
            pin(widget)
        self.view = self._lesson(settings)
        self.charts = {"trajectory": PathChart(), "loss": LossChart()}
        if "b" in self.view.leaves:
            self.charts["plane"] = PlaneChart()
        make = surface_maker(None, config={"toImageButtonOptions": {"filename": "scanlab-your-loop"}})
        self.figures = {name: chart.build(self.view, None, 0, make) for name, chart in self.charts.items()}
        name = getattr(fn, "__name__", "") or "your function"
        head = f"<b>Your loop</b>, <code>{html.escape(name)}</code>, beside the loop of the lesson"
        head += "." if name == task else f" (drawn as {task})."
        self.title = ipw.HTML(head + (f"<br>{html.escape(chosen)}" if chosen else ""))
        self.notice = ipw.HTML()
        self.sentence = ipw.HTML()
        self.sentence.add_class("scanlab-parting")
        self.mistake = ipw.HTML("<i>The checker is reading your function…</i>")
        self.widget = ipw.VBox(
            [
                self.title,
                ipw.VBox(list(self.inputs.values()), layout={"max_width": "40em"}),
                self.notice,
                side_by_side(list(self.figures.values())),
                self.sentence,
                self.mistake,
            ]
        )
        self._show_notices(list(notices))
        self._notices = list(notices)
        for widget in self.inputs.values():
            widget.observe(self._on_input, names="value")
        if check:
            self._check(fn)
        else:
            self.mistake.value = ""
        self._move(settings)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # --- the lesson's loop, on the kernel's thread --------------------------------------------------

    def _lesson(self, s: Settings) -> View:
        return lesson_view(self.model.compute(s), self.task, *self.model.batches(s))

    def _on_input(self, change) -> None:
        values = {**self.settings._asdict(), **{name: w.value for name, w in self.inputs.items()}}
        settings, problems = sanitize(values)
        self._notices = problems
        self._move(settings)

    def _move(self, settings: Settings) -> None:
        """Draw the lesson's loop for `settings`, and the learner's path when it comes."""
        self.settings = settings
        view = self._lesson(settings)
        with self._lock:
            self._wanted = settings
        if self._worker is None:
            self._draw(self._walk(view))
            return
        # While an earlier path runs, this move waits for nothing: it queues behind it, and is
        # skipped there if another move comes first (a drag's moves coalesce to the last).
        busy = self._future is not None and not self._future.done()
        future = self._future = self._worker.submit(self._compute, settings, view)
        try:
            done = future.result(0 if busy else WAIT_S)
        except concurrent.futures.TimeoutError:
            self._draw(view)  # the lesson's now; the learner's when it returns
            future.add_done_callback(lambda f: self._later(f, settings))
            return
        if done is not None:
            self._draw(done)

    def _walk(self, view: View) -> View:
        return walk(self.loop, view, self.timeout, self._prepare)

    def _prepare(self, prepare, *args, **kwargs) -> None:
        if self._compiler is None:
            prepare(*args, **kwargs)
        else:
            self._compiler.submit(prepare, *args, **kwargs)

    def _compute(self, settings: Settings, view: View) -> View | None:
        """The learner's path on the worker, None when a newer move came before it started."""
        with self._lock:
            if settings != self._wanted:
                return None
        return self._walk(view)

    def _later(self, future, settings: Settings) -> None:
        try:
            done = future.result()
        except Exception:  # the view must stay usable; the path says what the learner's code did
            return
        if done is not None:
            self._on_kernel_thread(self._draw_if_wanted, done, settings)

    def _draw_if_wanted(self, view: View, settings: Settings) -> None:
        with self._lock:
            current = settings == self._wanted
        if current:
            self._draw(view)

    def _draw(self, view: View) -> None:
        self.view = view
        for name, chart in self.charts.items():
            chart.update(self.figures[name], view, None, 0)
        self.sentence.value = html.escape(parting_text(view))
        problems = list(self._notices)
        if view.path is not None and view.path.problem:
            problems.append(view.path.problem + " The lesson's loop stays drawn; the next move tries again.")
        lost = not_a_number(view)
        if lost is not None:
            problems.append(
                f"After {batches_text(lost)} your function returned {num(float('nan'))} or an infinity, "
                f"where the lesson's loop has a number ({carry_text(view.lesson[lost], view.leaves)})."
            )
        self._show_notices(problems)

    def _show_notices(self, problems: list) -> None:
        self.notice.value = "".join(f"<p>&#9888; {html.escape(p)}</p>" for p in problems)

    # --- the checker's named mistake ------------------------------------------------------------------

    def _check(self, fn) -> None:
        check = TASKS[self.task][0]
        if self._checker is None:
            self._show_report(check(fn, timeout=self.timeout))
            return
        future = self._checker.submit(check, fn, timeout=self.timeout)
        future.add_done_callback(
            lambda f: f.exception() is None and self._on_kernel_thread(self._show_report, f.result())
        )

    def _show_report(self, report) -> None:
        self.report = report
        if report.passed:
            self.mistake.value = "The checker passes your function: every check is green."
            return
        named = [f for f in report.findings if not f.passed and f.code in report.mistakes]
        if not named:
            self.mistake.value = (
                "The checker fails your function without naming a known mistake; "
                "<code>exercise(fn)</code> shows its table."
            )
            return
        self.mistake.value = "".join(
            f"<p>The checker names <code>{html.escape(f.code)}</code>: {html.escape(f.hint)}</p>"
            for f in named
        )

    def _on_kernel_thread(self, draw, *args) -> None:
        on_loop(self._kernel, draw, *args)

    def wait(self, timeout: float = 60.0) -> None:
        """Block until the learner's path, the checker and the program of every prefix are done
        (tests and scripts)."""
        for pool in (self._worker, self._checker, self._compiler):
            if pool is not None:
                pool.submit(lambda: None).result(timeout)


def explore(
    fn,
    task: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    model: Model | None = None,
    background: bool = True,
    **settings,
) -> Exploration:
    """Draw `fn`, a learner's function for one of the four exercises, beside the loop of the lesson.

    `task` names the exercise as `exercise` does (default: `fn`'s name, else its parameters);
    `settings` are the view's starting values by their names (lr, N, B, w0, and momentum,
    schedule or b0 for the exercises that read them); `timeout` is the seconds `fn` may take at
    each move, and each check of the checker's; `model`, an explorer's `model`, shares its
    compiled engine (a new one takes a few seconds to warm up). Returns the view; a notebook
    shows it."""
    task, chosen = chosen_task(fn, task, "Drawn")
    unknown = [name for name in settings if name not in CONTROLS[task]]
    if unknown:
        raise TypeError(
            f"explore() got the setting {unknown[0]!r}; for {task} they are {', '.join(CONTROLS[task])}"[:200]
        )
    start, notices = sanitize({**START._asdict(), **TASK_SETTINGS[task], **settings})
    return Exploration(
        fn,
        task,
        start,
        chosen=chosen,
        notices=notices,
        background=background,
        timeout=seconds(timeout),
        model=model,
    )


__all__ = ["CONTROLS", "Exploration", "View", "explore", "parting_text"]
