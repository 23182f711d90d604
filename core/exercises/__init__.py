"""The exercises' checker: run a learner's function on designed cases and name the mistake by evidence.

One module per job: `report` (the vocabulary: Finding, Report, the Exercise row), `sandbox` (running
the learner's function under a time limit, its errors in the learner's words), `reading` (what came
back, matched against float64 models), `loop` (is there a scan), `hints` (every word a learner
reads, for a teacher to edit), one module per exercise (`scan_step`, `carry`, `pytree_step`), and
`paths` (a learner's function called on each prefix of the batches: its carry step by step, and
where it parts from the lesson's).
Each exercise is a row of `EXERCISES`: a new one adds its cases, models, hints and a row, and changes
nothing shared.
"""

from core.exercises.carry import (
    CARRY_CHECKS,
    MOMENTUM,
    MOMENTUM_MISTAKES,
    SCHEDULE,
    SCHEDULE_MISTAKES,
    check_momentum_step,
    check_scheduled_step,
)
from core.exercises.paths import PREFIX_CAP, LearnerLoop, LearnerPath, parting
from core.exercises.pytree_step import PYTREE, PYTREE_CHECKS, PYTREE_MISTAKES, check_pytree_step
from core.exercises.report import DEFAULT_TIMEOUT, TOLERANCE, WRONG_RESULT, Exercise, Finding, Report
from core.exercises.scan_step import CHECKS, MISTAKES, SCAN_STEP, check_training_step

EXERCISES = {
    "scan_training_step": SCAN_STEP,
    "momentum_training_step": MOMENTUM,
    "scheduled_training_step": SCHEDULE,
    "pytree_training_step": PYTREE,
}
"""The learner's function's name -> its Exercise row."""

__all__ = [
    "CARRY_CHECKS",
    "CHECKS",
    "DEFAULT_TIMEOUT",
    "EXERCISES",
    "Exercise",
    "Finding",
    "LearnerLoop",
    "LearnerPath",
    "PREFIX_CAP",
    "MISTAKES",
    "MOMENTUM_MISTAKES",
    "PYTREE_CHECKS",
    "PYTREE_MISTAKES",
    "Report",
    "SCHEDULE_MISTAKES",
    "TOLERANCE",
    "WRONG_RESULT",
    "check_momentum_step",
    "check_pytree_step",
    "check_scheduled_step",
    "check_training_step",
    "parting",
]
