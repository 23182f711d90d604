"""Exercise mode in the notebook: the report renders without a browser, and exercise.ipynb runs in a
fresh kernel with the placeholder, a correct solution and a wrong one."""

import html
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
from jax import lax
from nbclient import NotebookClient

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

# Every gradient taken at the initial weight, then applied once: seed 000's 0.8 instead of 0.64.
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


def _run(source=None):
    notebook = nbformat.read(ROOT / "exercise.ipynb", as_version=4)
    learner = next(
        c for c in notebook.cells if c.cell_type == "code" and "def scan_training_step" in c.source
    )
    if source is not None:
        learner.source = source
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return "".join(o.get("data", {}).get("text/html", "") for o in outputs)


def test_exercise_notebook_runs_with_the_placeholder_a_solution_and_a_mistake():
    placeholder = _run()
    assert "Not yet" in placeholder and "<code>error</code>" in placeholder
    assert "NotImplementedError" in placeholder
    assert "All checks pass" in _run(SOLUTION)
    wrong = _run(ACCUMULATED)
    assert "Not yet" in wrong and "accumulated_gradients" in wrong
