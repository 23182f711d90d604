"""The checker against learners' code: every function of tests/learner_corpus.py, run through
`exercise(fn)` as the notebook does, gets exactly its codes (the right verdict, the single mistake
named, no false code), and no finding shows the learner a file of the checker or an empty cell.
"""

import re

import pytest

from core.exercises import EXERCISES
from harness.support.checker import assert_no_empty_field, checker_files
from harness.support.learner_corpus import CORPUS
from widgets.exercise import exercise

CASES = [(task, fn, codes) for task, catalogue in CORPUS.items() for fn, codes in catalogue.items()]
NAMES = re.compile(r"(?<![\w/.])(" + "|".join(map(re.escape, checker_files())) + r")\b")


def test_the_corpus_is_large_and_names_every_mistake():
    assert len(CASES) >= 60
    for task, catalogue in CORPUS.items():
        right = [fn for fn, codes in catalogue.items() if not codes]
        assert len(right) >= 5, task
        named = {code for codes in catalogue.values() for code in codes}
        assert named == set(EXERCISES[task].mistakes), task


@pytest.mark.parametrize(("task", "fn", "codes"), CASES, ids=[f"{t}-{f.__name__}" for t, f, _ in CASES])
def test_each_learner_function_gets_exactly_its_codes(task, fn, codes, checked_tasks):
    report = exercise(fn, task=task)
    failed = [(f.code, f.message) for f in report.report.findings if not f.passed]
    assert report.mistakes == codes, failed
    assert report.passed == (not codes), failed
    for finding in report.report.findings:
        text = " ".join(str(part) for part in finding if part is not None)
        assert not NAMES.search(text), finding
    assert_no_empty_field(report)
