"""The functions a learner is shown as code, declared here beside the code itself.

The Code parts under each chart and in each under-the-hood panel show the source of these
functions, in this order (widgets.code reads it with `inspect`). Declaring them in `core` means that
renaming or splitting a function, private or not, changes this table in the same commit, and
tests/test_shown.py checks that every entry is a function of `core` that still exists: the lesson
cannot silently lose a part.

`SHOWN[name]` is a tuple of `(part, functions)`: `part` is "lesson" (the loop the lesson teaches,
which a learner would write), "pytree" (the same loop with the carry a pytree of params), "engine"
(how the explorer makes it fast) or "theory"; the widgets give each part its title.
"""

from __future__ import annotations

from core import contours, engine, lesson, linear, model, optimizers, stability, strategies, theory, timing

_LESSON = (lesson.lesson_history, lesson.train_step, lesson.batch_loss)
# One engine for both models: its kernel, and the loss and gradient it takes over the params pytree.
_ENGINE = (engine._histories_kernel, model.batch_loss_and_grads, model.example_loss)

SHOWN = {
    # The explorer's charts: the main ones all come from one run of the engine's kernel.
    "trajectory": (("lesson", _LESSON), ("engine", _ENGINE)),
    "loss": (("lesson", _LESSON), ("engine", _ENGINE)),
    "landscape": (("lesson", (*_LESSON, theory.average_loss)), ("engine", _ENGINE)),
    "sum_vs_mean": (("lesson", _LESSON), ("engine", (*_ENGINE, model.mean_of))),
    "divergence": (("theory", (theory.step_factors, theory.critical_lrs, theory._critical)),),
    "stability": (
        ("lesson", (lesson.final_weights, *_LESSON)),
        (
            "engine",
            (
                stability.stability_map,
                stability._map_kernel,
                stability.momentum_map,
                stability._momentum_kernel,
                stability._feature_sums,
                stability._batch_loss,
                stability._run,
            ),
        ),
    ),
    # The w, b model's contour chart: the same loop with the params pytree as the carry.
    "plane": (
        ("pytree", (lesson.pytree_lesson_history, lesson.pytree_train_step, lesson.pytree_batch_loss)),
        ("engine", _ENGINE),
        ("theory", (contours.loss_contours, contours.nearest_minimum)),
    ),
    # The under-the-hood panels.
    "closed_over_lr": (("lesson", (strategies.closed_over_lr, strategies.lr_traces)),),
    "loops": (
        (
            "lesson",
            (
                timing.scan_loop,
                timing.python_loop,
                timing.unrolled_loop,
                lesson.train_step,
                lesson.batch_loss,
                timing.logging_loop,
            ),
        ),
    ),
    "pure_train_step": (
        ("lesson", (linear.train_step, linear.loss_fn, optimizers.make_optimizer, linear._fit_kernel)),
    ),
}


def shown(name: str) -> tuple:
    """The functions of `SHOWN[name]`, all parts in order, each once."""
    if name not in SHOWN:
        raise ValueError(f"name must be one of {sorted(SHOWN)}, got {name!r}")
    return tuple(dict.fromkeys(f for _, functions in SHOWN[name] for f in functions))
