"""`explore(fn)`: a learner's function drawn beside the loop of the lesson (widgets.explore, over
core.exercises.paths). The parting step and both carries of the sentence against float64 NumPy loops
written here, for every function of the learner corpus; compiles counted; bad functions told in the
view while the lesson's loop stays drawn; a slow function's moves coalesced."""

import asyncio
import functools
import html
import math
import time

import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import core
from core.exercises.paths import LearnerLoop
from core.exercises.report import num
from harness.support.learner_corpus import CORPUS, never_returns
from widgets import exercise, explore
from widgets.explore import Exploration, lesson_view, parting_text, walk
from widgets.model import Model
from widgets.settings import sanitize

# A stable lr (2 lr S < 1 for these batches), a start and a rate that no learner writes as a constant
# (0, 0.5, 1, -1, 2 and 0.1, 0.125, 0.01, 0.05, 0.001), so that every mistake shows in the numbers.
QUALITY = {"lr": 0.03, "N": 5, "B": 4, "w0": 0.3, "b0": -0.7, "momentum": 0.6}
TASK_SETTINGS = {
    "scan_training_step": {},
    "momentum_training_step": {"optimizer": "momentum"},
    "scheduled_training_step": {"schedule": "cosine"},
    "pytree_training_step": {"model": "w,b"},
}


@pytest.fixture(scope="module")
def model():
    return Model()


def view_of(fn, task, model, *, check=False, timeout=10.0, **values):
    settings, notices = sanitize({**QUALITY, **TASK_SETTINGS[task], **values})
    assert not notices
    return Exploration(fn, task, settings, background=False, model=model, check=check, timeout=timeout)


def walked(fn, task, model, **values):
    """The view's numbers for `fn` (core.exercises.paths through widgets.explore.walk, as the view
    computes them), without the view's widgets and without the one program of every prefix that a
    view compiles for its next moves: each function here is drawn once."""
    settings, notices = sanitize({**QUALITY, **TASK_SETTINGS[task], **values})
    assert not notices
    lesson = lesson_view(model.compute(settings), task, *model.batches(settings))
    return walk(LearnerLoop(fn, task), lesson, 10.0, lambda *args, **kwargs: None)


def lesson_loop(task, s, x, y):
    """The exercise's right update in float64: the carry after each step, (N + 1, leaves)."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    rates = core.lr_schedule(s.schedule, s.lr, s.N).astype(np.float64)
    w, b, trace = float(s.w0), float(s.b0), 0.0
    rows = [(w, b) if task == "pytree_training_step" else (w,)]
    for k in range(s.N):
        if task == "pytree_training_step":
            r = w * x[k] + b - y[k]
            w, b = w - s.lr * 2 * np.sum(r * x[k]), b - s.lr * 2 * np.sum(r)
            rows.append((w, b))
            continue
        g = 2 * np.sum((w * x[k] - y[k]) * x[k])
        if task == "momentum_training_step":
            trace = g + s.momentum * trace
            w = w - s.lr * trace
        elif task == "scheduled_training_step":
            w = w - rates[k] * g
        else:
            w = w - s.lr * g
        rows.append((w,))
    return np.array(rows)


def called(fn, task, s, x, y, k):
    """The learner's function on the first k batches, as the exercise calls it."""
    w, lr = jnp.float32(s.w0), jnp.float32(s.lr)
    x, y = jnp.asarray(x), jnp.asarray(y)
    if task == "momentum_training_step":
        return fn(w, lr, jnp.float32(s.momentum), x[:k], y[:k])
    if task == "scheduled_training_step":
        return fn(w, jnp.asarray(core.lr_schedule(s.schedule, s.lr, s.N))[:k], x[:k], y[:k])
    if task == "pytree_training_step":
        return fn({"w": w, "b": jnp.float32(s.b0)}, lr, x[:k], y[:k])
    return fn(w, lr, x[:k], y[:k])


def plain(out, task):
    """The carry `out` holds when it is the plain answer (a number, or the params dict of two
    numbers), else None: other outputs are read by the checker's own reader, tested with it."""
    if task == "pytree_training_step":
        if isinstance(out, dict) and set(out) == {"w", "b"} and all(np.ndim(v) == 0 for v in out.values()):
            return (float(out["w"]), float(out["b"]))
        return None
    if isinstance(out, (tuple, list, dict)) or out is None or np.ndim(out) != 0:
        return None
    try:
        return (float(out),)
    except (TypeError, ValueError):
        return None


def first_parting(yours, lesson):
    for k in range(1, len(lesson)):
        for a, b in zip(yours[k], lesson[k], strict=True):
            if not math.isfinite(a) or abs(a - b) > 1e-4 * max(1.0, abs(b)):
                return k
    return None


CASES = [
    (task, fn, codes)
    for task, catalogue in CORPUS.items()
    for fn, codes in catalogue.items()
    if fn is not never_returns
]


@pytest.mark.parametrize(("task", "fn", "codes"), CASES, ids=[f"{t}-{f.__name__}" for t, f, _ in CASES])
def test_the_parting_step_and_both_carries_are_those_of_float64_loops(task, fn, codes, model):
    drawn = walked(fn, task, model)
    s = drawn.result.settings
    x, y = model.batches(s)
    lesson = lesson_loop(task, s, x, y)
    np.testing.assert_allclose(drawn.lesson, lesson, rtol=2e-5, atol=1e-6)
    yours = []
    try:
        for k in range(1, s.N + 1):
            carry = plain(called(fn, task, s, x, y, k), task)
            if carry is None:
                break
            yours.append(carry)
    except Exception:
        path = drawn.path
        assert path.problem and path.steps == len(yours), (path.problem, path.steps)
        assert "your function raised" in path.problem
        return
    if len(yours) < s.N:
        # Not the plain answer (a history, scan's pair, a tuple): read as the checker reads it
        # (tested there); drawn whole, or told.
        path = drawn.path
        assert (path.steps == s.N and not path.problem) or "your function returned" in path.problem, path
        return
    yours = np.array([lesson[0], *yours])
    expected = first_parting(yours, lesson)
    text = parting_text(drawn)
    assert drawn.parted == expected, (text, codes)
    if expected is None:
        assert "never part" in text, text
        return
    k = expected
    np.testing.assert_allclose(drawn.path.carries[k], yours[k], rtol=1e-6)
    assert f"They part at step {k}:" in text
    for value in (*drawn.path.carries[k], *drawn.lesson[k]):
        assert num(value) in text, (num(value), text)
    assert f"x = [{x[k - 1][0]:.4g}" in text  # the batch of that step


def test_every_named_numeric_mistake_parts_and_every_right_function_does_not(model):
    """Across the corpus: a function whose numbers a mistake explains parts; a right one never does."""
    for task, catalogue in CORPUS.items():
        right = [fn for fn, codes in catalogue.items() if not codes][:3]
        for fn in right:
            assert walked(fn, task, model).parted is None, fn.__name__
    for fn, task in (
        (CORPUS["scan_training_step"], "scan_training_step"),
        (CORPUS["pytree_training_step"], "pytree_training_step"),
    ):
        wrong = [f for f, codes in fn.items() if codes & {"accumulated_gradients", "b_not_updated"}]
        assert wrong
        for f in wrong:
            assert walked(f, task, model).parted is not None, f.__name__


def test_a_jitted_function_compiles_once_per_shape_and_never_for_a_move(model, count_compiles):
    # A new function object each: jax.jit keeps its compiles by the function, and another test may
    # have drawn the corpus's own already.
    fns = {
        task: functools.wraps(fn)(lambda *args, fn=fn: fn(*args))
        for task, catalogue in CORPUS.items()
        for fn in [next(fn for fn, codes in catalogue.items() if not codes)]
    }
    moves = {
        "scan_training_step": ("lr", 0.02),
        "momentum_training_step": ("momentum", 0.3),
        "scheduled_training_step": ("w0", -0.4),
        "pytree_training_step": ("b0", 0.9),
    }
    n = 3  # few prefixes: each is a compile
    for task, fn in fns.items():
        with count_compiles() as first:
            view = view_of(fn, task, model, N=n)
        assert view.view.path.jitted, task
        assert len(first) >= n, (task, len(first))  # one per prefix at least
        for name in ("lr", "w0", moves[task][0]):
            with count_compiles() as compiles:
                moved = view.inputs[name].value * 0.5
                view.inputs[name].value = moves[task][1] if name == moves[task][0] else moved
            assert view.view.path is not None and not view.view.path.problem
            assert compiles == [], (task, name, len(compiles))
        with count_compiles() as compiles:
            view.inputs["N"].value = n + 1  # one new shape: one more prefix
        assert 1 <= len(compiles) <= 3, (task, len(compiles))


def raises(w, lr, x_batches, y_batches):
    raise RuntimeError("my loop is not written yet")


def returns_nan(w, lr, x_batches, y_batches):
    return jnp.float32(jnp.nan) + 0 * w


def returns_text(w, lr, x_batches, y_batches):
    return "w"


def right(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * 2 * jnp.sum((w * x - y) * x), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def drawn_lesson(view) -> int:
    """How many points of the lesson's trajectory the view's figure holds."""
    return len(view.figures["trajectory"].figure().data[0].y)


@pytest.mark.parametrize(
    ("fn", "words"),
    [
        (raises, "raised RuntimeError at line"),
        (returns_text, "returned a str"),
        (never_returns, "too slow: did not return within 1 s"),
    ],
    ids=["raises", "returns text", "never returns"],
)
def test_a_bad_function_is_told_and_the_lesson_stays_drawn_and_the_next_move_tries_again(fn, words, model):
    view = view_of(fn, "scan_training_step", model, timeout=1.0)
    assert words in view.notice.value, view.notice.value
    assert "ScanLab" not in view.notice.value and "seed" not in view.notice.value
    assert drawn_lesson(view) == QUALITY["N"] + 1
    assert "not drawn" in view.sentence.value
    before = view.view.path.seconds
    view.inputs["N"].value = 12  # the slider stays usable: the lesson follows, the function runs again
    assert drawn_lesson(view) == 13
    assert words in view.notice.value
    assert view.view.path.seconds != before


def test_a_function_that_returns_nan_parts_at_step_one_with_a_notice(model):
    view = view_of(returns_nan, "scan_training_step", model)
    assert view.view.parted == 1
    assert "returned nan or an infinity" in view.notice.value
    assert "your w is nan" in view.sentence.value


def test_paths_know_every_exercise_and_nothing_else():
    from core.exercises import EXERCISES
    from core.exercises.paths import TASKS as PATHS
    from widgets.exercise import TASKS

    assert PATHS == tuple(EXERCISES) == tuple(TASKS)


def test_a_failed_report_ends_by_naming_explore_and_a_passed_one_does_not():
    def scan_training_step(w, lr, x_batches, y_batches):
        return lax.scan(lambda w, b: (w - lr * jnp.sum(b[0] * b[1]), None), w, (x_batches, y_batches))[0]

    report = exercise(scan_training_step)
    assert not report.passed
    assert repr(report).splitlines()[-1].startswith("explore(scan_training_step) draws your loop")
    assert "explore(scan_training_step) draws your loop" in report._repr_html_()
    assert "explore(" not in repr(exercise(right, task="scan_training_step"))


def test_bad_settings_are_named_or_fixed_with_a_notice(model):
    with pytest.raises(TypeError, match="'momentum'"):
        explore(right, task="scan_training_step", momentum=0.9)
    with pytest.raises(ValueError, match="task must be one of"):
        explore(right, task="adam_training_step")
    # A function the checker is quick with (it raises): this is about the settings.
    view = explore(raises, task="scan_training_step", background=False, model=model, lr=-1.0)
    assert view.settings.lr > 0
    assert "lr" in view.notice.value


def test_a_slow_functions_moves_are_coalesced_to_the_last(model):
    """On a worker (a kernel's event loop running): a move waits briefly, the lesson's loop is drawn
    at once, and the moves made while the function runs are skipped but for the last."""
    seen = []

    def slow(w, lr, x_batches, y_batches):
        seen.append(round(float(lr), 6))
        time.sleep(0.05)
        for x, y in zip(x_batches, y_batches, strict=True):
            w = w - lr * 2 * np.sum((w * x - y) * x)
        return w

    async def moves():
        settings, _ = sanitize({**QUALITY, "N": 6})
        view = Exploration(slow, "scan_training_step", settings, model=model, check=False)
        assert view.view.path is None  # the first path is still running
        for lr in (0.011, 0.012, 0.013, 0.014):
            view.inputs["lr"].value = lr
            assert round(view.view.result.settings.lr, 6) == lr  # the lesson's loop follows at once
        for _ in range(200):
            await asyncio.sleep(0.05)
            if view.view.path is not None and round(view.settings.lr, 6) == 0.014:
                break
        view.wait()
        await asyncio.sleep(0.1)
        return view

    view = asyncio.run(moves())
    lrs = sorted(set(seen))
    assert 0.014 in lrs and 0.012 not in lrs and 0.013 not in lrs, lrs
    assert view.view.path is not None and view.view.path.steps == 6
    assert round(view.view.result.settings.lr, 6) == 0.014


def test_the_explorer_draws_a_step_on_its_trajectory_and_landscape_as_explore_does(model, count_compiles):
    """explorer.draw_step(fn): the learner's loop on the explorer's own charts, the same parting step
    and sentence as explore(fn)'s view of the same settings; none while the settings run another loop."""
    from widgets import Explorer

    # The first path compiles a program per prefix: on a loaded machine (make test) 12 of them
    # once took the explorer past the checker's 10 s and drew 11 steps. Both views here get the
    # same long limit; the limit itself is test_a_path_cut_by_the_time_limit_...'s.
    settings, _ = sanitize({**QUALITY, "N": 12})
    explorer = Explorer(settings, background=False, model=model)
    explorer.draw_step(core.accumulated_gradient_step, timeout=120.0)
    alone = Exploration(core.accumulated_gradient_step, "scan_training_step", settings, background=False,
                        model=model, check=False, timeout=120.0)  # fmt: skip
    assert explorer.result.yours.parted == alone.view.parted == 2
    np.testing.assert_array_equal(explorer.result.yours.carries, alone.view.path.carries)
    where = parting_text(alone.view).split(" Your function's")[0]  # the same but the calls' time
    assert where.startswith("They part at step 2") and where in html.unescape(explorer.yours.words.value)
    trajectory = {t.name: t for t in explorer.figures["trajectory"].figure().data}
    np.testing.assert_allclose(trajectory["w, your loop"].y, alone.view.path.carries[:, 0])
    assert trajectory["where they part"].x == (2,)
    landscape = {t.name: t for t in explorer.figures["landscape"].figure().data}
    assert landscape["where they part"].x == (alone.view.path.carries[2, 0],)
    explorer.yours.wait()  # the one program of every prefix, compiled
    with count_compiles() as compiles:
        for lr in (0.02, 0.025):
            explorer.inputs["lr"].value = lr
        explorer.inputs["w0"].value = 1.5
    assert compiles == [], len(compiles)
    assert explorer.result.yours.parted is not None
    # Another model: the exercise's loop is not run, nothing of the learner's is drawn, and the
    # sentence says what to set.
    explorer.inputs["model"].value = "w,b"
    assert explorer.result.yours is None
    assert "set model w" in explorer.yours.words.value
    plane = {t.name: t for t in explorer.figures["plane"].figure().data}
    assert plane["path, your loop"].visible is False
    # Explorer(step=fn) draws it from the start (its prefixes compiled above: within the 10 s).
    started = Explorer(settings, step=core.accumulated_gradient_step, background=False, model=model)
    np.testing.assert_array_equal(started.result.yours.carries, alone.view.path.carries)
    for timeout in (0, -1.0, float("inf"), True, "10"):
        with pytest.raises(ValueError, match="timeout must be a finite positive number of seconds"):
            explorer.draw_step(core.accumulated_gradient_step, timeout=timeout)


def test_a_served_explorer_never_runs_a_step():
    from widgets import Explorer

    explorer = Explorer(plotly_js="/static/plotly.js", background=False)
    calls = []
    note = explorer.draw_step(lambda w, lr, x_batches, y_batches: calls.append(w) or w)
    assert "JupyterLab" in note._repr_html_()
    assert calls == [] and explorer.result.yours is None
    assert explorer.yours is None  # no widget of it on a served page


def test_a_path_cut_by_the_time_limit_draws_its_first_steps_and_says_so(model):
    def slow_loop(w, lr, x_batches, y_batches):
        time.sleep(0.25)
        for x, y in zip(x_batches, y_batches, strict=True):
            w = w - lr * 2 * np.sum((w * x - y) * x)
        return float(w)  # a host sync: called as it is, not jitted

    view = view_of(slow_loop, "scan_training_step", model, timeout=1.0)
    path = view.view.path
    assert path.timed_out and not path.problem and 1 <= path.steps < QUALITY["N"], path
    assert view.view.parted is None  # a right loop, as far as it is drawn
    assert f"Drawn for the first {path.steps} of N = {QUALITY['N']} steps" in view.sentence.value
    assert "too slow" not in view.notice.value
