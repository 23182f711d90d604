"""A learner's loop beside the lesson's, in numbers and words: the lesson's loop of an exercise in a
result (`lesson_view`), the learner's path on its batches and where it parts (`walk`, over
core.exercises.paths), and the sentence that says it (`parting_text`). `explore(fn)`'s view
(widgets.explore) and the explorer's `draw_step` (`YourLoop`) draw them; neither runs in a dashboard.
"""

from __future__ import annotations

import concurrent.futures
import html
from typing import NamedTuple

import ipywidgets as ipw
import numpy as np

from core.exercises.paths import PREFIX_CAP, TOLERANCE, LearnerLoop, LearnerPath, batches_text, parting
from core.exercises.report import DEFAULT_TIMEOUT, num
from widgets.exercise import chosen_task
from widgets.layout import for_view, side_by_side
from widgets.model import Result, Yours, overlaid
from widgets.settings import Settings, leaves

TASK_SETTINGS = {
    "scan_training_step": {"model": "w"},
    "momentum_training_step": {"model": "w", "optimizer": "momentum", "schedule": "constant"},
    "scheduled_training_step": {"model": "w", "optimizer": "sgd", "schedule": "cosine"},
    "pytree_training_step": {"model": "w,b"},
}
"""What each exercise's lesson loop is, in the explorer's settings (`fits` says when they run it)."""


class View(NamedTuple):
    """What the view draws: the lesson's run and, once computed, the learner's path.

    result: widgets.model's Result of the settings (the lesson's loop is its `lesson` run).
    lesson: float64 (N + 1, leaves): the lesson's carry after each step, row 0 the start.
    losses: float64 (N,): the lesson's batch loss at each step's starting carry.
    x, y: float32 (N, B): the batches both loops read.
    path: the learner's LearnerPath, or None while it is computed.
    parted: the first step at which the carries part (core.exercises.paths.parting), or None.
    your_losses: float64 (steps,): the learner's batch losses (`batch_losses`), empty without a path.
    """

    result: Result
    lesson: np.ndarray
    losses: np.ndarray
    x: np.ndarray
    y: np.ndarray
    path: LearnerPath | None = None
    parted: int | None = None
    your_losses: np.ndarray = np.zeros(0)

    @property
    def leaves(self) -> tuple:
        return leaves(self.result.settings)


def batch_losses(carries: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float64 (steps,): each batch's sum loss at the carry (a row of `carries`, (steps + 1, leaves):
    w, or w and b) its step started from."""
    carries = carries[:-1]
    n = min(len(carries), len(x))
    x, y = x[:n].astype(np.float64), y[:n].astype(np.float64)
    fitted = carries[:n, :1] * x + (carries[:n, 1:2] if carries.shape[1] == 2 else 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.sum((fitted - y) ** 2, axis=1)


OVERLAID = ("momentum_training_step", "scheduled_training_step")
"""The exercises whose lesson's loop is the explorer's overlaid run (the momentum optimizer's, a
schedule's), not plain SGD's."""


def fits(settings: Settings, task: str) -> str:
    """ "" when `settings` run the loop of `task`'s exercise, else what to set so that they do (the
    explorer's controls may run another: Explorer(step=fn))."""
    s, model = settings, "w,b" if task == "pytree_training_step" else "w"
    if s.model != model:
        return f"model {model.replace(',', ', ')}"
    if task == "momentum_training_step" and (s.optimizer, s.schedule) != ("momentum", "constant"):
        return "optimizer momentum, schedule constant"
    if task == "scheduled_training_step" and (s.optimizer != "sgd" or s.schedule == "constant"):
        return "optimizer sgd and a schedule other than constant"
    return ""


def lesson_view(result: Result, task: str, x, y) -> View:
    """The lesson's loop of `task`'s exercise in `result` (its settings `fits` it), on the float32
    (N, B) batches x and y: the overlaid run for momentum and a schedule, plain SGD's else, both
    under the sum loss."""
    run = (
        result.optimized["sum"] if task in OVERLAID and overlaid(result.settings) else result.histories["sum"]
    )
    lesson = np.stack([np.asarray(run.params[leaf], np.float64) for leaf in leaves(result.settings)], axis=1)
    return View(result, lesson, np.asarray(run.losses, np.float64), np.asarray(x), np.asarray(y))


def walk(loop: LearnerLoop, view: View, timeout: float, prepare) -> View:
    """`view` with `loop`'s path on its batches and where it parts from the lesson's. `prepare`
    is called with `loop.prepare` and its arguments when the path went call by call through jit
    (core.exercises.paths: one program for every prefix of these shapes, for the next moves)."""
    s = view.result.settings
    rates = s.lr
    if loop.task == "scheduled_training_step":
        schedule = view.result.schedule
        rates = schedule if schedule is not None else np.full(s.N, s.lr, np.float32)
    arguments = ({leaf: getattr(s, f"{leaf}0") for leaf in view.leaves}, rates, view.x, view.y)
    options = {"momentum": s.momentum, "timeout": timeout}
    path = loop.path(*arguments, **options)
    if path.jitted and not path.problem and not path.programmed:
        prepare(loop.prepare, *arguments, **options)
    return view._replace(
        path=path,
        parted=parting(path.carries, view.lesson),
        your_losses=batch_losses(path.carries, view.x, view.y),
    )


def not_a_number(view: View) -> int | None:
    """The first step after which the learner's carry is not a finite number while the lesson's is,
    or None."""
    if view.path is None:
        return None
    steps = min(len(view.path.carries), len(view.lesson))
    yours = np.all(np.isfinite(view.path.carries[:steps]), axis=1)
    lesson = np.all(np.isfinite(view.lesson[:steps]), axis=1)
    found = np.flatnonzero(~yours & lesson)
    return int(found[0]) if found.size else None


def carry_text(values, names) -> str:
    """A carry as the sentence says it: "w = 0.64", or "{'w': 0.48, 'b': 0.2}"."""
    if len(names) == 1:
        return num(values[0])
    return "{" + ", ".join(f"'{name}': {num(v)}" for name, v in zip(names, values, strict=True)) + "}"


def _row_text(row, shown: int = 4) -> str:
    values = ", ".join(f"{float(v):.4g}" for v in row[:shown])
    return f"[{values}{', …' if len(row) > shown else ''}]"


def parting_text(view: View) -> str:
    """The sentence under the charts, in plain text: where the learner's loop parts from the
    lesson's, with both carries and the batch of that step, or that they never part over the steps
    drawn; and how the path was drawn (capped, its time)."""
    path, names = view.path, view.leaves
    if path is None:
        return f"Running your function on the first k batches, for k = 1 to {min(len(view.x), PREFIX_CAP)}…"
    what = "w" if len(names) == 1 else "params"
    sentences = []
    k = view.parted
    if k is not None:
        yours, lesson = path.carries[k], view.lesson[k]
        verb = "is" if len(names) == 1 else "are"
        sentences.append(
            f"They part at step {k}: after {batches_text(k)} your {what} {verb} {carry_text(yours, names)}; "
            f"the loop's {verb} {carry_text(lesson, names)}."
        )
        before = carry_text(path.carries[k - 1], names)
        sentences.append(
            f"Step {k} read batch {k}, x = {_row_text(view.x[k - 1])}, y = {_row_text(view.y[k - 1])}, "
            + (
                f"from the start, {what} = {before}."
                if k == 1
                else f"from your {what} = {before} (the loop's: {carry_text(view.lesson[k - 1], names)})."
            )
        )
    elif path.steps:
        sentences.append(
            f"Your loop and the lesson's never part: their carries agree after each of the {path.steps} "
            f"steps drawn (to the checker's tolerance, {TOLERANCE:g} of the value)."
        )
    if not path.steps:
        sentences.append("Your loop is not drawn: the notice above says why; the lesson's loop is.")
    if path.timed_out:
        why = (
            "most of it compiling your function once for each step's shape, which is kept; the next "
            "move goes further"
            if path.jitted
            else "each step is one more call of your function, on one more batch"
        )
        sentences.append(
            f"Drawn for the first {path.steps} of N = {path.wanted} steps: the time limit went by, {why}."
        )
    elif path.capped:
        sentences.append(
            f"Drawn for the first {path.steps} of N = {path.wanted} steps: step k is one more call of your "
            f"function, on the first k batches, so at most {PREFIX_CAP} are made; lower N to see the end."
        )
    if path.steps:
        how = "through jax.jit" if path.jitted else "as it is: it cannot be jitted"
        sentences.append(f"Your function's {path.steps} calls took {path.seconds:.2g} s ({how}).")
    return " ".join(sentences)


def seconds(timeout) -> float:
    """`timeout`, the seconds a learner's function may take for a path, checked: ValueError naming
    it unless it is a finite positive number."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a finite positive number of seconds, got {timeout!r}"[:200])
    return float(timeout)


SERVED_NOTE = (
    "<p><i>A loop of your own is drawn in a notebook: open the lesson in JupyterLab "
    "(<code>make lab</code>), where this cell draws it on the charts.</i></p>"
)
"""What `Explorer.draw_step` shows on a served page (the dashboard), which runs no visitor's code."""


class YourLoop:
    """The explorer's learner's function (Explorer.draw_step): its LearnerLoop and exercise, the view
    of its last path, the sentence above the trajectory (`words`, added to the explorer's `box` of
    words, or taken over from `previous`), and the thread that compiles a path's one program
    (core.exercises.paths.LearnerLoop.prepare)."""

    def __init__(self, fn, box: ipw.Box, previous: YourLoop | None = None, timeout: float = DEFAULT_TIMEOUT):
        self.task, _ = chosen_task(fn, None, "Drawn")
        self.timeout = seconds(timeout)
        self.loop = LearnerLoop(fn, self.task)
        self.view: View | None = None
        if previous is None:
            self.words = ipw.HTML()
            self.words.add_class("scanlab-parting")
            box.children = (*box.children, self.words)
            self._compiler = concurrent.futures.ThreadPoolExecutor(1, "explorer-compile")
        else:
            self.words, self._compiler = previous.words, previous._compiler

    def shown(self, figures: dict, beside: str, projector: bool) -> ipw.Box:
        """The words over the trajectory and the landscape (the plane under w, b), in a row."""
        landscape = "plane" if self.task == "pytree_training_step" else "landscape"
        charts = side_by_side([figures["trajectory"], figures[landscape]], beside=beside)
        return for_view(ipw.VBox([self.words, charts]), projector)

    def wait(self, timeout: float = 60.0) -> None:
        """Block until the programs asked for so far are compiled (tests and scripts)."""
        self._compiler.submit(lambda: None).result(timeout)

    def settings(self, settings: Settings) -> Settings:
        """`settings` moved to the exercise's loop when they run another (TASK_SETTINGS)."""
        return settings._replace(**TASK_SETTINGS[self.task]) if fits(settings, self.task) else settings

    def beside(self, result: Result, batches) -> Result:
        """`result` with the learner's loop on its float32 (N, B) `batches` (x, y) as `Result.yours`,
        when its settings run the exercise's loop; the sentence said."""
        self.view = None
        if not fits(result.settings, self.task):
            lesson = lesson_view(result, self.task, *batches)
            self.view = walk(self.loop, lesson, self.timeout, self._compiler.submit)
            result = result._replace(yours=Yours(self.view.path.carries, self.view.parted))
        self._say(result.settings)
        return result

    def _say(self, settings: Settings) -> None:
        name = getattr(self.loop.fn, "__name__", "") or "your function"
        need = fits(settings, self.task)
        if need:
            text = f"Your loop, {name}, is drawn while the explorer runs its exercise's loop: set {need}."
        else:
            text = parting_text(self.view)
            if self.view.path.problem:
                text = f"⚠ {self.view.path.problem} {text}"
        self.words.value = f"<p><b>Your loop</b> ({html.escape(self.task)}): {html.escape(text)}</p>"


__all__ = [
    "OVERLAID",
    "SERVED_NOTE",
    "TASK_SETTINGS",
    "View",
    "YourLoop",
    "batch_losses",
    "carry_text",
    "fits",
    "lesson_view",
    "not_a_number",
    "parting_text",
    "walk",
]
