"""The class report for a course's grader: a Gradescope autograder results.json per student.

Why this format: it is the file otter-grader writes for Gradescope and Gradescope reads from any
autograder, a documented JSON of one entry per test (name, score, max_score, output, visibility),
so a course needs no grader installed here and no database: each exercise is a test worth one point,
and its `output`, which the student sees, names the mistake with the checker's message and hint.
docs/classroom.md says how a course uses it (as its autograder's output, or read by otter-grader).
"""

from __future__ import annotations

import json
from pathlib import Path

from core.exercises.tasks import TASKS
from serving.class_report import cell_text

WORDS = {
    "pass": "All checks pass.",
    "wrong": "A result no listed mistake explains.",
    "raised": "Your function raised an error.",
    "timed out": "Your function did not return in time.",
    "not attempted": "Not attempted yet: the function is still the exercise's placeholder.",
    "missing": "No function of this name in your notebook.",
    "no notebook": "Your exercise.ipynb could not be read as a notebook.",
}


def feedback(cell: dict) -> str:
    """What a student reads for one exercise: the verdict, the named mistakes, each failed check's
    message and hint, and the report's notes."""
    if cell["state"] == "mistake":
        lines = [f"Not yet: {cell_text(cell)}."]
    else:
        lines = [WORDS.get(cell["state"], cell_text(cell))]
    for code, message, hint in cell.get("failed", []):
        lines += [f"{code}: {message}", f"Hint: {hint}"]
    lines += cell.get("notes", [])
    return "\n".join(lines)


def results(row) -> dict:
    """A student's results.json (Gradescope's autograder format)."""
    tests = [
        {
            "name": task,
            "score": 1.0 if row.cells[task]["state"] == "pass" else 0.0,
            "max_score": 1.0,
            "output": feedback(row.cells[task]),
            "visibility": "visible",
        }
        for task in TASKS
    ]
    notes = "\n".join(row.notes)
    return {
        "score": sum(test["score"] for test in tests),
        "tests": tests,
        **({"output": notes} if notes else {}),
        "visibility": "visible",
    }


def write(report, out: Path) -> list[Path]:
    """out/<student>/results.json for every student; the paths written."""
    written = []
    for row in report.rows.values():
        path = out / row.student / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results(row), indent=1))
        written.append(path)
    return written
