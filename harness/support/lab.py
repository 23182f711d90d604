"""JupyterLab for the tests that open a notebook in it: `lab(root)` serves a folder (no token, the app
on `window.jupyterapp`), `open_notebook` opens one in Chromium, `run_all` runs every cell and waits for
the checker's reports, `notebook_text` writes a notebook; ACCUMULATED is a learner's function with
one of the mistakes the checker names."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from harness.lab import JUPYTER, ROOT, LabServer

__all__ = ["ACCUMULATED", "JUPYTER", "ROOT", "lab", "notebook_text", "open_notebook", "run_all"]

# A function with one of the mistakes the checker names (every gradient taken at the first weight):
# its report has green rows and red ones.
ACCUMULATED = """import jax
import jax.numpy as jnp
from jax import lax


def scan_training_step(w, lr, x_batches, y_batches):
    grads = jax.vmap(lambda x, y: 2 * jnp.sum((w * x - y) * x))(x_batches, y_batches)
    return w - lr * jnp.sum(grads)
"""


@contextlib.contextmanager
def lab(root: Path):
    """JupyterLab serving `root`, with no token (harness.lab.LabServer); its address."""
    try:
        server = LabServer(root).start()
    except FileNotFoundError as exc:
        pytest.fail(str(exc))
    try:
        yield server.url
    finally:
        server.stop()


def notebook_text(cells: list[str]) -> str:
    """A notebook of code cells `cells`, as its file's text, for the Python 3 kernel (JupyterLab
    asks which kernel for a notebook without one)."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    return nbformat.writes(notebook)


def run_all(page, expected: dict) -> None:
    """Run every cell of the open notebook and wait for its reports, `expected` as {summary: how many
    reports start with it}, and for the kernel to be idle again."""
    page.evaluate("() => jupyterapp.commands.execute('notebook:run-all-cells')")
    for summary, count in expected.items():
        page.locator(".jp-OutputArea-output", has_text=summary).nth(count - 1).wait_for(timeout=180_000)
    page.wait_for_function(
        "() => jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
        timeout=120_000,
    )


def open_notebook(browser, url: str, name: str):
    """(context, page, errors): the notebook `name` open in JupyterLab at `url` (`lab`), in a
    1440 x 900 page of its own context, whose page errors are collected in `errors`."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url + f"lab/tree/{name}", timeout=60_000)
    page.wait_for_function("() => window.jupyterapp && jupyterapp.shell.currentWidget", timeout=90_000)
    return context, page, errors
