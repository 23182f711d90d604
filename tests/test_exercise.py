"""Exercise mode in the notebook: the report renders without a browser, and exercise.ipynb runs in a
fresh kernel with the placeholder, a correct solution and a wrong one."""

import html
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import pytest
from jax import lax
from nbclient import NotebookClient

import core
from core.exercises import CHECKS, PYTREE_CHECKS  # not core.exercise: run alone, nothing has imported it
from widgets import exercise

ROOT = Path(__file__).resolve().parent.parent

SOLUTION = """import jax
import jax.numpy as jnp
from jax import lax


def scan_training_step(w, lr, x_batches, y_batches):
    def loss(w, x, y):
        return jnp.sum((w * x - y) ** 2)

    def step(w, batch):
        x, y = batch
        return w - lr * jax.grad(loss)(w, x, y), None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w"""

# Every gradient taken at the initial weight, then applied once: the worked example's 0.8, not 0.64.
ACCUMULATED = """import jax
import jax.numpy as jnp


def scan_training_step(w, lr, x_batches, y_batches):
    grads = jax.vmap(jax.grad(lambda w, x, y: jnp.sum((w * x - y) ** 2)), in_axes=(None, 0, 0))(
        w, x_batches, y_batches
    )
    return w - lr * jnp.sum(grads)"""


def _scan_training_step(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w - lr * 2 * jnp.sum((w * x - y) * x), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def _ascent(w, lr, x_batches, y_batches):
    def step(w, batch):
        x, y = batch
        return w + lr * jax.grad(lambda w: jnp.sum((w * x - y) ** 2))(w), None

    return lax.scan(step, w, (x_batches, y_batches))[0]


def test_a_correct_function_gets_a_green_table():
    report = exercise(_scan_training_step)
    assert report.passed and report.mistakes == frozenset()
    page = report._repr_html_()
    assert "All checks pass" in page and "&#10008;" not in page
    assert page.count("<tr") == len(report.report.findings) + 1  # a row per check, and the header


def test_a_mistake_is_named_with_its_numbers_and_hint():
    report = exercise(_ascent)
    assert not report.passed and "wrong_sign" in report.mistakes
    page = report._repr_html_()
    failing = [f for f in report.report.findings if not f.passed]
    assert failing and page.count("&#10008;") == len(failing)  # a red row per failing check
    for finding in failing:
        assert f"<code>{finding.code}</code>" in page and finding.hint
        assert html.escape(finding.hint) in page
        assert f"expected {float(finding.expected):.6g}, got {float(finding.actual):.6g}" in page
    assert "wrong_sign" in repr(report)


def test_what_a_learner_wrote_is_escaped():
    def broken(w, lr, x_batches, y_batches):
        raise ValueError("<script>alert(1)</script>")

    report = exercise(broken)
    assert report.mistakes == frozenset({"error"})
    page = report._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page


MOMENTUM = """def momentum_training_step(w, lr, momentum, x_batches, y_batches):
    def step(carry, batch):
        w, trace = carry
        x, y = batch
        trace = 2 * jnp.sum((w * x - y) * x) + momentum * trace
        return (w - lr * trace, trace), None

    (final_w, _), _ = lax.scan(step, (w, jnp.zeros_like(w)), (x_batches, y_batches))
    return final_w"""

# The trace made afresh at every step: plain gradient descent's 0.784 instead of 1.54.
MOMENTUM_NOT_CARRIED = MOMENTUM.replace("w, trace = carry", "w, trace = carry[0], 0.0")

SCHEDULED = """def scheduled_training_step(w, lr_schedule, x_batches, y_batches):
    def step(w, inputs):
        lr, x, y = inputs
        return w - lr * 2 * jnp.sum((w * x - y) * x), None

    final_w, _ = lax.scan(step, w, (lr_schedule, x_batches, y_batches))
    return final_w"""

# A Python counter in the body: read once when the scan traces it, so lr_schedule[0] at every step.
SCHEDULE_COUNTER = """def scheduled_training_step(w, lr_schedule, x_batches, y_batches):
    i = 0

    def step(w, batch):
        nonlocal i
        x, y = batch
        new_w = w - lr_schedule[i] * 2 * jnp.sum((w * x - y) * x)
        i += 1
        return new_w, None

    final_w, _ = lax.scan(step, w, (x_batches, y_batches))
    return final_w"""


PYTREE = """def pytree_training_step(params, lr, x_batches, y_batches):
    def loss(params, x, y):
        return jnp.sum((params["w"] * x + params["b"] - y) ** 2)

    def step(params, batch):
        grads = jax.grad(loss)(params, *batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), None

    final_params, _ = lax.scan(step, params, (x_batches, y_batches))
    return final_params"""

# The final params returned as a tuple (w, b), not the dict they came in.
PYTREE_TUPLE = PYTREE.replace("return final_params", 'return final_params["w"], final_params["b"]')


def test_each_function_gets_its_own_exercise_s_checker():
    source = "\n".join((MOMENTUM, SCHEDULED, PYTREE))
    exec(compile(source, "<learner>", "exec"), namespace := {"jax": jax, "jnp": jnp, "lax": lax})
    momentum, scheduled = namespace["momentum_training_step"], namespace["scheduled_training_step"]
    pytree = namespace["pytree_training_step"]
    for fn, checks in (
        (momentum, core.CARRY_CHECKS),
        (scheduled, core.CARRY_CHECKS),
        (pytree, PYTREE_CHECKS),
    ):
        report = exercise(fn)
        assert report.passed and [f.code for f in report.report.findings] == list(checks)
    assert "trace carried" in exercise(momentum).summary()
    assert "params dict" in exercise(pytree).summary()
    # Under another name, `task` says which exercise it is; without it, the first exercise's.
    renamed = exercise(lambda *args: scheduled(*args), task="scheduled_training_step")
    assert renamed.passed
    unnamed = exercise(lambda *args: momentum(*args))  # called with the first exercise's 4 arguments
    assert len(unnamed.report.findings) == len(CHECKS) and unnamed.mistakes == {"error"}
    assert repr(unnamed).startswith("Checked as scan_training_step: its name, <lambda>, is not one")
    assert exercise(pytree).chosen == ""  # its own name says which: no line about it
    with pytest.raises(ValueError, match="task must be one of scan_training_step"):
        exercise(momentum, task="momentum")


def test_a_function_of_another_name_is_checked_as_its_parameters_say_and_the_report_says_so():
    exec(
        compile("\n".join((MOMENTUM, SCHEDULED, PYTREE)), "<learner>", "exec"),
        ns := {"jax": jax, "jnp": jnp, "lax": lax},
    )

    def make_train(step):  # a factory: the function it returns is named train
        def train(params, lr, x_batches, y_batches):
            return step(params, lr, x_batches, y_batches)

        return train

    def heavy_ball(w, lr, beta, xs, ys):
        return ns["momentum_training_step"](w, lr, beta, xs, ys)

    def decayed(w, lr_schedule, xs, ys):
        return ns["scheduled_training_step"](w, lr_schedule, xs, ys)

    for fn, task, why in [
        (
            make_train(ns["pytree_training_step"]),
            "pytree_training_step",
            "its first argument, params, is the params dict",
        ),
        (heavy_ball, "momentum_training_step", "it takes five arguments (w, lr, beta, xs, ys)"),
        (decayed, "scheduled_training_step", "its second argument, lr_schedule, is a schedule"),
    ]:
        report = exercise(fn)
        assert report.passed, repr(report)  # right functions, checked by the right checker
        said = f"Checked as {task}: its name, {fn.__name__}, is not one of the exercises', and {why}."
        assert report.chosen == said and report._repr_html_().startswith(f"<p>{html.escape(said)}</p>")


def test_a_single_mistake_is_one_red_row_and_what_it_stopped_is_grey():
    # The trace not carried: the numbers are wrong, so "traced" ran but cannot be judged.
    exec(
        compile(MOMENTUM_NOT_CARRIED, "<learner>", "exec"), namespace := {"jax": jax, "jnp": jnp, "lax": lax}
    )
    report = exercise(namespace["momentum_training_step"])
    page = report._repr_html_()
    judged = [f for f in report.report.findings if not f.message.startswith("Not judged")]
    unjudged = [f for f in report.report.findings if f.message.startswith("Not judged")]
    assert [f.code for f in unjudged] == ["traced"] and not report.passed
    assert page.count("&#10008;</span> fail") == sum(not f.passed for f in judged) == 1
    assert page.count("&#8212;</span> not judged") == len(unjudged)
    # Every cell reads from the left (JupyterLab right-aligns table cells).
    assert page.count("<td") == page.count('<td style="text-align:left;') == 5 * len(report.report.findings)


def _run(sources=()):
    """exercise.ipynb run in a fresh kernel, each of `sources` in place of the learner cell that
    defines the same function; the HTML of every report, in order."""
    notebook = nbformat.read(ROOT / "exercise.ipynb", as_version=4)
    for source in sources:
        name = source.split("def ", 1)[1].split("(", 1)[0]
        learner = next(c for c in notebook.cells if c.cell_type == "code" and f"def {name}(" in c.source)
        learner.source = source
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]


def test_exercise_notebook_runs_with_the_placeholders_solutions_and_mistakes():
    placeholders = _run()
    assert len(placeholders) == 4
    assert all("Not yet: error" in p and "NotImplementedError" in p for p in placeholders)
    solved = _run([SOLUTION, MOMENTUM, SCHEDULED, PYTREE])
    assert len(solved) == 4 and all("All checks pass" in s for s in solved), solved
    wrong = _run([ACCUMULATED, MOMENTUM_NOT_CARRIED, SCHEDULE_COUNTER, PYTREE_TUPLE])
    codes = ("accumulated_gradients", "state_not_carried", "schedule_closed_over", "returns_tuple")
    for page, code in zip(wrong, codes, strict=True):
        assert f"Not yet: {code}" in page
