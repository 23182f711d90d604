"""Exercise mode in the notebook: `exercise(fn)` checks a learner's function with its exercise's
checker (`core.check_training_step`, `core.check_momentum_step`, `core.check_scheduled_step` or
`core.check_pytree_step`, chosen by the function's name, or its parameters) and shows the report as a
table, one green or red row per check.

For JupyterLab (exercise.ipynb); the dashboard never runs it, since a dashboard never executes a
visitor's code.
"""

from __future__ import annotations

import html
import inspect

import numpy as np

import core
from core.exercises.sandbox import NOT_JUDGED, NOT_RUN

_PASS, _FAIL, _SKIPPED = "#e6f4ea", "#fce8e6", "#f1f3f4"  # row backgrounds: green, red, grey
# Each cell's own alignment: JupyterLab's stylesheet right-aligns table cells, which a table's
# text-align does not reach; sentences read from the left.
_ALIGN = "text-align:left;vertical-align:top"
_CELL = f'<td style="{_ALIGN}">{{}}</td>'
# The table's own colours: under a dark JupyterLab theme the inherited text is light, on light rows.
_TEXT = "#1a1a1a"
# The result in words; the glyph is decoration, hidden from screen readers.
_MARK = {
    True: '<span aria-hidden="true">&#10004;</span> pass',
    False: '<span aria-hidden="true">&#10008;</span> fail',
    None: '<span aria-hidden="true">&#8212;</span> not judged',
}


def _result(finding) -> bool | None:
    """True (passed), False (failed), or None for a check that was not run or not judged: its row
    is grey, since an earlier row already says what stopped it."""
    return None if finding.message.startswith((NOT_RUN, NOT_JUDGED)) else finding.passed


def _number(value) -> str:
    """A value of a finding in a few significant digits (lists elementwise); "" for no value (None,
    an empty text or list)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    array = np.asarray(value, dtype=object)
    if array.ndim == 0:
        try:
            return f"{float(value):.6g}"
        except (TypeError, ValueError):
            return str(value)
    if array.size == 0:
        return ""
    return "[" + ", ".join(_number(v) for v in array.ravel().tolist()) + "]"


def _numbers(finding) -> str:
    """The row's "numbers" cell: "expected X, got Y", with a clause left out where the finding has no
    such value (an error has no expected number), and words where it has neither: no cell is blank
    and no clause is empty ("expected , got ...")."""
    clauses = [
        f"{word} {text}"
        for word, text in (("expected", _number(finding.expected)), ("got", _number(finding.actual)))
        if text
    ]
    return ", ".join(clauses) or "none to compare"


_NO_HINT = "none needed"

# The function each exercise asks for -> (its checker, what a passing function does).
TASKS = {
    "scan_training_step": (core.check_training_step, "one sequential gradient step per batch, with lax.scan"),
    "momentum_training_step": (
        core.check_momentum_step,
        "heavy-ball momentum, its trace carried by lax.scan",
    ),
    "scheduled_training_step": (
        core.check_scheduled_step,
        "one learning rate per step, scanned with its batch by lax.scan",
    ),
    "pytree_training_step": (
        core.check_pytree_step,
        "one gradient step per batch on the params dict, every leaf at once, carried by lax.scan",
    ),
}


def choose(fn) -> tuple[str, str]:
    """(the exercise's function name, a sentence saying why) for `fn`: its own name when that is
    one of TASKS' (the sentence then ""), else its parameters: five are the momentum exercise's
    (w, lr, momentum, x_batches, y_batches); of four, a first named like params, or a second named
    like a schedule, choose the pytree's or the schedule's; anything else the first exercise's. A
    factory's inner function (`train`) or a renamed one is checked as what it takes."""
    name = getattr(fn, "__name__", "") or ""
    if name in TASKS:
        return name, ""
    called = f"its name, {name}, is not one of the exercises'" if name else "it has no name"
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return "scan_training_step", f"{called}, and its arguments cannot be read"
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return "scan_training_step", f"{called}, and it takes *args"
    names = [p.name for p in params]
    said = f"({', '.join(names)})"
    if len(names) == 5:
        return "momentum_training_step", f"{called}, and it takes five arguments {said}"
    if len(names) == 4 and "param" in names[0].lower():
        return "pytree_training_step", f"{called}, and its first argument, {names[0]}, is the params dict"
    if len(names) == 4 and any(word in names[1].lower() for word in ("sched", "lrs", "rates")):
        return "scheduled_training_step", f"{called}, and its second argument, {names[1]}, is a schedule"
    return "scan_training_step", f"{called}, and it takes {said}"


def chosen_task(fn, task: str | None, verb: str) -> tuple[str, str]:
    """(the exercise `fn` is for, a sentence saying why when it was not named: "<verb> as ...: ...")
    from `task` (a key of TASKS, or None to `choose`). Raises ValueError naming `task` for another."""
    chosen = ""
    if task is None:
        task, why = choose(fn)
        chosen = f"{verb} as {task}: {why}." if why else ""
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}"[:200])
    return task, chosen


class ExerciseReport:
    """The checker's `core.Report` (as `.report`), shown as an HTML table in a notebook; `done`
    says what a function that passes does, `chosen` (when not "") which exercise was checked and
    why, above the rest; `name`, the function's, goes into the last line of a failed report, which
    says that `explore(name)` draws it."""

    def __init__(self, report, done: str = TASKS["scan_training_step"][1], chosen: str = "", name: str = ""):
        self.report, self.done, self.chosen = report, done, chosen
        self.name = name if name.isidentifier() else "your_function"

    @property
    def drawn(self) -> str:
        """The last line of a failed report: where to see the function's loop drawn ("" if passed)."""
        if self.report.passed:
            return ""
        return (
            f"explore({self.name}) draws your loop beside the lesson's, step by step, and marks the "
            "step where they part."
        )

    @property
    def passed(self) -> bool:
        return self.report.passed

    @property
    def mistakes(self) -> frozenset:
        return self.report.mistakes

    def summary(self) -> str:
        """One line: all good, or the mistakes found."""
        if self.report.passed:
            return f"All checks pass: {self.done}."
        codes = ", ".join(sorted(self.report.mistakes)) or "a result no listed mistake explains"
        return f"Not yet: {codes}."

    def _repr_html_(self) -> str:
        rows = []
        for finding in self.report.findings:
            # A passed check needs no hint; its cell says so rather than stay blank.
            hint = _NO_HINT if finding.passed else finding.hint
            result = _result(finding)
            background = {True: _PASS, False: _FAIL, None: _SKIPPED}[result]
            cells = (
                _MARK[result],
                f"<code>{html.escape(finding.code)}</code>",
                html.escape(finding.message),
                html.escape(hint),
                html.escape(_numbers(finding)),
            )
            row = "".join(_CELL.format(cell) for cell in cells)
            rows.append(f'<tr style="background:{background}">{row}</tr>')
        columns = ("result", "check", "what happened", "hint", "numbers")
        head = "".join(f'<th scope="col" style="{_ALIGN}">{h}</th>' for h in columns)
        chosen = f"<p>{html.escape(self.chosen)}</p>" if self.chosen else ""
        drawn = f"<p>{html.escape(self.drawn)}</p>" if self.drawn else ""
        return (
            f"{chosen}<p><b>{html.escape(self.summary())}</b></p>"
            f'<table style="border-collapse:collapse;text-align:left;color:{_TEXT};background:#ffffff">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{drawn}"
        )

    def __repr__(self) -> str:
        lines = [*([self.chosen] if self.chosen else []), self.summary()]
        for finding in self.report.findings:
            mark = {True: "ok  ", False: "FAIL", None: "--  "}[_result(finding)]
            lines.append(f"  {mark} {finding.code}: {finding.message}")
            if _result(finding) is False:
                lines.append(f"       hint: {finding.hint}")
        return "\n".join([*lines, *([self.drawn] if self.drawn else [])])


def exercise(fn, task: str | None = None, **options) -> ExerciseReport:
    """Check `fn` against its exercise's contract and show what is wrong.

    `task` names the exercise by the function it asks for (a key of TASKS); by default the name
    of `fn` when it is one of them, else the one its parameters say (`choose`), and the report's
    first line says which and why. `options` go to the checker (e.g. `timeout=` seconds per
    check)."""
    task, chosen = chosen_task(fn, task, "Checked")
    check, done = TASKS[task]
    return ExerciseReport(check(fn, **options), done, chosen, getattr(fn, "__name__", "") or "")


__all__ = ["TASKS", "ExerciseReport", "choose", "chosen_task", "exercise"]
