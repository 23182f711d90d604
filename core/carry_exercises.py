"""The carry exercises' checkers, where they were first imported from; they live in core.exercises."""

from core.exercises import (
    CARRY_CHECKS,
    MOMENTUM_MISTAKES,
    SCHEDULE_MISTAKES,
    check_momentum_step,
    check_scheduled_step,
)

__all__ = [
    "CARRY_CHECKS",
    "MOMENTUM_MISTAKES",
    "SCHEDULE_MISTAKES",
    "check_momentum_step",
    "check_scheduled_step",
]
