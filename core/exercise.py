"""The first exercise's checker, where it was first imported from; it lives in core.exercises."""

from core.exercises import (
    CHECKS,
    DEFAULT_TIMEOUT,
    MISTAKES,
    TOLERANCE,
    WRONG_RESULT,
    Finding,
    Report,
    check_training_step,
)

__all__ = [
    "CHECKS",
    "DEFAULT_TIMEOUT",
    "MISTAKES",
    "TOLERANCE",
    "WRONG_RESULT",
    "Finding",
    "Report",
    "check_training_step",
]
