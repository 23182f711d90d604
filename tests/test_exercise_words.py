"""What a learner reads in an exercise's report: a hint's quotes are exercise.ipynb's own words, and
no row of the report table has an empty field ("expected , got ..." once read so).

The rows are rendered for every function of every exercise's catalogue (tests/test_checker_words.py
gathers them: each named mistake at least once, right answers, wrong signatures) and for a function
that never returns.
"""

import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from test_checker_words import CASES
from test_core_exercise import forgets_to_count

import core
from core.exercises import EXERCISES
from widgets import exercise
from widgets.exercise import TASKS, ExerciseReport

ROOT = Path(__file__).resolve().parent.parent


def _words(text: str) -> str:
    """Text as a page shows it: code marks (`) dropped, runs of white space one space."""
    return " ".join(text.replace("`", "").split())


def _notebook_text() -> str:
    notebook = nbformat.read(ROOT / "exercise.ipynb", as_version=4)
    return _words(" ".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown"))


def _quotes():
    """(exercise, key, quoted passage) for every double-quoted passage of every hint and explanation."""
    for name, row in EXERCISES.items():
        for key, text in {**row.hints, **row.explanations}.items():
            for passage in re.findall(r'"([^"]*)"', text):
                yield name, key, passage


QUOTES = list(_quotes())


def test_the_hints_quote_the_notebook_at_all():
    # The test below must have something to check in each exercise.
    assert {name for name, _, _ in QUOTES} == set(EXERCISES)


@pytest.mark.parametrize(("name", "key", "passage"), QUOTES, ids=[f"{n}-{k}" for n, k, _ in QUOTES])
def test_every_quoted_passage_is_in_the_notebook(name, key, passage):
    assert _words(passage), (name, key)
    assert _words(passage) in _notebook_text(), f"{name} {key}: not in exercise.ipynb: {passage!r}"


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


def _rows(report: ExerciseReport) -> list[list[str]]:
    parser = _Cells()
    parser.feed(report._repr_html_())
    return [row for row in parser.rows if row]  # the header row has <th>, no <td>


# A clause with nothing after its word: "expected , got 1", "got " at the end, "expected []".
EMPTY_CLAUSE = re.compile(r"\b(expected|got)\s*(,|$|\[\])")


def _assert_no_empty_field(report: ExerciseReport):
    rows = _rows(report)
    assert len(rows) == len(report.report.findings)
    for row in rows:
        assert len(row) == 5, row
        for cell in row:
            assert cell.strip(), row
            assert not EMPTY_CLAUSE.search(cell.strip()), row


TASK_OF = {check: task for task, (check, _) in TASKS.items()}


@pytest.mark.parametrize(("check", "fn"), CASES, ids=[f"{c.__name__}-{f.__name__}" for c, f in CASES])
def test_no_row_of_any_catalogue_s_report_has_an_empty_field(check, fn):
    _assert_no_empty_field(exercise(fn, task=TASK_OF[check]))


def test_a_function_that_never_returns_gets_full_rows():
    report = exercise(forgets_to_count, timeout=0.5)
    assert report.mistakes == {"error"}
    _assert_no_empty_field(report)
    assert "expected a result within 0.5 s, got no result" in report._repr_html_()


@pytest.mark.parametrize(
    ("expected", "actual", "passed", "shown"),
    [
        (None, "ValueError: no", False, "got ValueError: no"),
        ("", 3, False, "got 3"),
        ([], [1.5, 2], False, "got [1.5, 2]"),
        (0.64, None, False, "expected 0.64"),
        (None, None, False, "none to compare"),
        ("  ", [], True, "none to compare"),
        (0.64, 0.8, False, "expected 0.64, got 0.8"),
    ],
)
def test_a_missing_value_leaves_its_clause_out(expected, actual, passed, shown):
    finding = core.Finding("numbers", passed, "What happened.", "" if passed else "A hint.", expected, actual)
    report = ExerciseReport(core.Report(passed, frozenset(), [finding]))
    (row,) = _rows(report)
    assert row[4] == shown
    assert row[3] == ("none needed" if passed else "A hint.")
    _assert_no_empty_field(report)
