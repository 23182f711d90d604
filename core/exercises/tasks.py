"""Which exercise a learner's function is for: the table of the four (`TASKS`), and how a function
that is not named like one is matched to one (`choose`, `chosen_task`). Used by the notebook's
`exercise(fn)` (widgets.exercise) and by the class report (serving.class_report), which checks a
student's functions without the notebook's widgets.
"""

from __future__ import annotations

import inspect

from core.exercises.carry import check_momentum_step, check_scheduled_step
from core.exercises.pytree_step import check_pytree_step
from core.exercises.scan_step import check_training_step

TASKS = {
    "scan_training_step": (check_training_step, "one sequential gradient step per batch, with lax.scan"),
    "momentum_training_step": (
        check_momentum_step,
        "heavy-ball momentum, its trace carried by lax.scan",
    ),
    "scheduled_training_step": (
        check_scheduled_step,
        "one learning rate per step, scanned with its batch by lax.scan",
    ),
    "pytree_training_step": (
        check_pytree_step,
        "one gradient step per batch on the params dict, every leaf at once, carried by lax.scan",
    ),
}
"""The function each exercise asks for -> (its checker, what a passing function does)."""


def choose(fn) -> tuple[str, str]:
    """(the exercise's function name, a sentence saying why) for `fn`: its own name when that is
    one of TASKS' (the sentence then ""), else its parameters: five are the momentum exercise's
    (w, lr, momentum, x_batches, y_batches); of four, a first named like params, or a second named
    like a schedule, choose the pytree's or the schedule's; anything else the first exercise's. A
    factory's inner function (`train`) or a renamed one is checked as what it takes."""
    name = getattr(fn, "__name__", "") or ""
    if name in TASKS:
        return name, ""
    called = f"its name, {name}, is not one of the exercises'" if name else "it has no name"
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return "scan_training_step", f"{called}, and its arguments cannot be read"
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return "scan_training_step", f"{called}, and it takes *args"
    names = [p.name for p in params]
    said = f"({', '.join(names)})"
    if len(names) == 5:
        return "momentum_training_step", f"{called}, and it takes five arguments {said}"
    if len(names) == 4 and "param" in names[0].lower():
        return "pytree_training_step", f"{called}, and its first argument, {names[0]}, is the params dict"
    if len(names) == 4 and any(word in names[1].lower() for word in ("sched", "lrs", "rates")):
        return "scheduled_training_step", f"{called}, and its second argument, {names[1]}, is a schedule"
    return "scan_training_step", f"{called}, and it takes {said}"


def chosen_task(fn, task: str | None, verb: str) -> tuple[str, str]:
    """(the exercise `fn` is for, a sentence saying why when it was not named: "<verb> as ...: ...")
    from `task` (a key of TASKS, or None to `choose`). Raises ValueError naming `task` for another."""
    chosen = ""
    if task is None:
        task, why = choose(fn)
        chosen = f"{verb} as {task}: {why}." if why else ""
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}"[:200])
    return task, chosen
