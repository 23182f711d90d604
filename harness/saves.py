"""A student's exercise saves under a classroom's faults: exercise.ipynb open in JupyterLab in
Chromium behind a `harness.faults.Proxy`, edited and saved (Ctrl-S's command) while the network is
cut, while a save is on its way (lost, or arrived with its answer lost), while offline, and across a
restart of the server. Used by
tests/test_faults.py (one of each) and benchmarks/faults.py (`make faults`, `--saves`).

A save is lost when, after the fault, the student's next save says it saved (the tab clean) but
the file on disk lacks the edit, or no save succeeds within the settle time. What a failed save says
on the page (JupyterLab's "File Save Error" dialog; the tab left dirty) is recorded.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.faults import Proxy, network_down
from harness.lab import LabServer

KINDS = ("save during a cut", "save in flight", "answer lost", "edited offline", "server restarted")
TOKEN = "scanlab-saves"

# The first exercise's cell, edited as a student types into it: a comment line appended.
EDIT = """(marker) => {
  const panel = jupyterapp.shell.currentWidget;
  const cell = panel.content.widgets.find(
    c => c.model.type === 'code' && c.model.sharedModel.getSource().includes('def scan_training_step'));
  cell.model.sharedModel.setSource(cell.model.sharedModel.getSource() + '\\n# ' + marker);
  return panel.context.model.dirty;
}"""

# Ctrl-S's command, its answer within `ms`: "saved", "failed: ...", or "pending".
SAVE = """(ms) => new Promise(resolve => {
  const timer = setTimeout(() => resolve('pending'), ms);
  jupyterapp.commands.execute('docmanager:save').then(
    () => { clearTimeout(timer); resolve('saved'); },
    (error) => { clearTimeout(timer); resolve('failed: ' + ((error && error.message) || error)); });
})"""

STATE = """() => ({
  dirty: jupyterapp.shell.currentWidget.context.model.dirty,
  dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText.slice(0, 120)),
})"""


@dataclass
class Saved:
    """One save fault's outcome: `kind`, seconds down, what the page said, seconds from the network's
    (or server's) return to a save that holds, and `wrong` (empty when nothing was lost)."""

    kind: str
    down: float
    said: list = field(default_factory=list)
    took: float | None = None
    wrong: list = field(default_factory=list)


async def open_exercise(browser, proxy: Proxy, lab: LabServer):
    """exercise.ipynb open in JupyterLab (`lab`) through `proxy`, its document ready; the page."""
    context = await browser.new_context(viewport={"width": 1440, "height": 900})
    page = await context.new_page()
    await page.goto(f"{proxy.url}lab/tree/exercise.ipynb?token={lab.token}", timeout=120_000)
    # Its kernel idle too: while the notebook's session is still starting, a failed request makes
    # JupyterLab close the notebook, asking "Save changes before closing?" (docs/faults.md).
    await page.wait_for_function(
        "() => window.jupyterapp && jupyterapp.shell.currentWidget?.context?.isReady"
        " && jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
        timeout=120_000,
    )
    return page


# What a student answers to each of JupyterLab's dialogs after a fault (docs/classroom.md): the
# button clicked, by the dialog's first words.
ANSWERS = {"File Changed": "Overwrite", "Save your work": "Cancel"}


async def answer_dialogs(page) -> list[str]:
    """Close the dialogs JupyterLab shows, one after another, as the docs tell a student to; what
    they said."""
    said = []
    for _ in range(6):
        dialogs = (await page.evaluate(STATE))["dialogs"]
        if not dialogs:
            break
        title = dialogs[0].split("\n")[0]
        button = next((b for start, b in ANSWERS.items() if title.startswith(start)), "Close")
        said.append(f"{title}: {button}")
        await page.locator(".jp-Dialog button", has_text=button).first.click(timeout=10_000)
        await asyncio.sleep(0.3)
    return said


def on_disk(folder: Path, marker: str) -> bool:
    """Whether the saved exercise.ipynb holds the edit `marker`."""
    try:
        book = json.loads((folder / "exercise.ipynb").read_text())
    except (OSError, ValueError):
        return False
    return any(f"# {marker}" in "".join(cell.get("source", "")) for cell in book["cells"])


_markers = itertools.count(1)


async def save_fault(page, proxy: Proxy, lab: LabServer, kind: str, down: float, settle: float) -> Saved:
    """One fault of `kind` (KINDS) lasting `down` seconds, around an edit and a save; then the
    student's next saves (Ctrl-S again, as the error dialog asks) until one holds or `settle` passes."""
    marker = f"edit {next(_markers)} ({kind})"
    outcome = Saved(kind, down)
    if kind != "edited offline":
        await page.evaluate(EDIT, marker)
    if kind == "server restarted":
        await asyncio.to_thread(lab.stop)
        first = await page.evaluate(SAVE, 1000)
        await asyncio.sleep(down)
        await asyncio.to_thread(lab.start)
        proxy.target = lab.port
    else:
        flight = kind in ("save in flight", "answer lost")
        if flight:
            # The save's request goes nowhere, or it arrives (the file written) and its answer does
            # not: the network drops under it either way.
            proxy.swallow(replies=kind == "answer lost")
            first = await page.evaluate(SAVE, 800)  # JupyterLab asks for the file's hash, then saves
        gone = asyncio.ensure_future(network_down(page, proxy, down))
        await asyncio.sleep(0.1)  # the connections cut, Chromium told it is offline
        if flight and on_disk(lab.root, marker) != (kind == "answer lost"):  # not as it says
            outcome.wrong.append(f"the fault did not strike as {kind!r} says")
        if not flight:
            if kind == "edited offline":
                await page.evaluate(EDIT, marker)
            first = await page.evaluate(SAVE, 1000)
        await gone
    outcome.said = [f"the first save: {first}"]
    back = time.monotonic()
    while True:
        outcome.said += await answer_dialogs(page)
        answer = await page.evaluate(SAVE, 5000)
        outcome.said += await answer_dialogs(page)  # a conflict asked about during the save
        state = await page.evaluate(STATE)
        if answer == "pending" and not state["dirty"]:
            answer = "saved"  # the save waited on the dialog just answered
        if answer == "saved" and not state["dirty"]:
            outcome.took = time.monotonic() - back
            if not on_disk(lab.root, marker):
                outcome.wrong.append(f"the page says saved, the file lacks {marker!r}")
            return outcome
        if time.monotonic() - back > settle:
            outcome.wrong.append(f"no save held within {settle:g} s: {answer}, dirty {state['dirty']}")
            return outcome
        await asyncio.sleep(0.5)
