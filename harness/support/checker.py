"""What the tests read in the checker's reports: the names of the checker's own files (a finding a
learner reads must name none), a report's table rows as rendered (no field may be empty), and each
report run once per process for each (check, function) (`checked`, and the conftest's
`checked_tasks`, which hands `exercise()` those reports)."""

import inspect
import re
from html.parser import HTMLParser
from pathlib import Path

import core
from core.exercises import check_pytree_step
from widgets.exercise import ExerciseReport


def checker_files() -> set[str]:
    """The names of every Python file the checker runs: the functions below and what they import
    from `core` to check (the package, the modules it uses)."""
    files = set()
    checks = (
        core.check_training_step,
        core.check_momentum_step,
        core.check_scheduled_step,
        check_pytree_step,
    )
    for check in checks:
        module = Path(inspect.getfile(inspect.unwrap(check)))
        files |= {path.name for path in module.parent.glob("*.py") if path.name != "__init__.py"}
    return files


class _Cells(HTMLParser):
    """The text of each <td> of a table, per row."""

    def __init__(self):
        super().__init__()
        self.rows, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def report_rows(report: ExerciseReport) -> list[list[str]]:
    parser = _Cells()
    parser.feed(report._repr_html_())
    return [row for row in parser.rows if row]  # the header row has <th>, no <td>


# A clause with nothing after its word: "expected , got 1", "got " at the end, "expected []".
EMPTY_CLAUSE = re.compile(r"\b(expected|got)\s*(,|$|\[\])")


def assert_no_empty_field(report: ExerciseReport):
    rows = report_rows(report)
    assert len(rows) == len(report.report.findings)
    for row in rows:
        assert len(row) == 5, row
        for cell in row:
            assert cell.strip(), row
            assert not EMPTY_CLAUSE.search(cell.strip()), row


_REPORTS = {}


def checked(check, fn):
    """`check(fn)`'s report, run once per process for each (check, fn): the catalogues' tests
    (test_checker_words, test_exercise_words, test_learner_corpus) read the same learners'
    functions through the same checker. harness/support/marks.py keeps those modules in one process."""
    key = (check, fn)
    if key not in _REPORTS:
        _REPORTS[key] = check(fn)
    return _REPORTS[key]
