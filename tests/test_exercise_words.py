"""What a learner reads in an exercise's report: a hint's quotes are exercise.ipynb's own words, and
no row of the report table has an empty field ("expected , got ..." once read so).

The rows are rendered for every function of every exercise's catalogue (tests/test_checker_words.py
gathers them: each named mistake at least once, right answers, wrong signatures) and for a function
that never returns.
"""

import re
from pathlib import Path

import nbformat
import pytest

import core
from core.exercises import EXERCISES
from harness.support.catalogues import CASES, forgets_to_count
from harness.support.checker import assert_no_empty_field, report_rows
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


TASK_OF = {check: task for task, (check, _) in TASKS.items()}


@pytest.mark.parametrize(("check", "fn"), CASES, ids=[f"{c.__name__}-{f.__name__}" for c, f in CASES])
def test_no_row_of_any_catalogue_s_report_has_an_empty_field(check, fn, checked_tasks):
    assert_no_empty_field(exercise(fn, task=TASK_OF[check]))


def test_a_function_that_never_returns_gets_full_rows():
    report = exercise(forgets_to_count, timeout=0.5)
    assert report.mistakes == {"error"}
    assert_no_empty_field(report)
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
    (row,) = report_rows(report)
    assert row[4] == shown
    assert row[3] == ("none needed" if passed else "A hint.")
    assert_no_empty_field(report)
