"""Exercise mode in the notebook: `exercise(fn)` checks a learner's function with its exercise's
checker (`core.check_training_step`, `core.check_momentum_step`, `core.check_scheduled_step` or
`core.check_pytree_step`, chosen by the function's name, or its parameters) and shows the report as a
table, one green or red row per check.

For JupyterLab (exercise.ipynb); the dashboard never runs it, since a dashboard never executes a
visitor's code.
"""

from __future__ import annotations

import html

import numpy as np

from core.exercises.sandbox import NOT_JUDGED, NOT_RUN
from core.exercises.tasks import TASKS, choose, chosen_task

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
