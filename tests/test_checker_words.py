"""No finding a learner reads names a file of the checker.

The checker tells a learner where their own code went wrong ("at line 3 of step() in
answer.py"); a frame of the checker's own code is not the learner's. This runs every exercise on
every function of its catalogue (each named mistake at least once) and on a function with the wrong
number of arguments, the case that once blamed "<lambda>() in carry_exercises.py".
"""

import re

import pytest

from harness.support.catalogues import CASES, CATALOGUES, MISTAKES
from harness.support.checker import checked, checker_files


@pytest.mark.parametrize("check", list(CATALOGUES), ids=lambda check: check.__name__)
def test_the_catalogues_name_every_mistake_of_every_exercise(check):
    named = {code for codes in CATALOGUES[check].values() for code in codes}
    assert named == set(MISTAKES[check])


@pytest.mark.parametrize(("check", "fn"), CASES, ids=[f"{c.__name__}-{f.__name__}" for c, f in CASES])
def test_no_finding_names_a_file_of_the_checker(check, fn):
    # A name on its own, not inside a longer one: the catalogues live in harness/support/ (e.g.
    # scan_step_learners.py, which the checker names as the learner's file).
    names = re.compile(r"(?<![\w/.])(" + "|".join(map(re.escape, checker_files())) + r")\b")
    report = checked(check, fn)
    assert report.mistakes == CATALOGUES[check][fn], report
    for finding in report.findings:
        text = " ".join(str(part) for part in finding if part is not None)
        assert not names.search(text), finding
