"""One student's notebook through the checker, in a process of its own, with the student's folder as
its working directory: run by serving.class_report, never by hand.

    python -m serving.class_report.worker NOTEBOOK --timeout 10 --memory 4294967296

It runs the notebook's code cells in order, as "Run All" would, each for at most `timeout` seconds,
with `exercise` and `explore` its own: `exercise(fn)` checks `fn` then and there (the notebook's
names as they are at that cell, as the student saw it) and `explore` draws nothing. A function no
cell checked is checked after the last cell. Each verdict is written as a JSON line as soon as it
is known, on the standard output it was given; the student's own prints go nowhere, so a killed
worker leaves the verdicts it had, and the report says which are missing.

The student's code runs under limits: address space (`memory` bytes, RLIMIT_AS), the time limit per
cell and per check, and core.exercises.guard's audit hook (their own folder and Python's to read,
their folder to write, no programs, no network): a tripwire for honest mistakes, not a jail.
docs/classroom.md says what a room that cannot be trusted needs (the hub's containers).
"""

from __future__ import annotations

import argparse
import json
import linecache
import os
import resource
import signal
import sys
from pathlib import Path

from core.exercises.guard import Guard
from core.exercises.report import DEFAULT_TIMEOUT
from core.exercises.sandbox import NOT_JUDGED, NOT_RUN, describe_error
from core.exercises.tasks import TASKS, chosen_task
from serving.class_report import MEMORY
from serving.class_report import notebook as nb

ROOT = Path(__file__).resolve().parents[2]


class Shell:
    """`get_ipython()` for the cells: IPython's syntax (%magic, %%magic, !command), which
    notebook.code_cells makes calls to it, does nothing here but run the body of %%time,
    %%timeit and %%capture cells; a shell command is skipped and said."""

    def __init__(self, namespace: dict, skipped: list):
        self.namespace, self.skipped = namespace, skipped

    def run_line_magic(self, name, line, *args, **kwargs):
        return None

    def run_cell_magic(self, name, line, cell, *args, **kwargs):
        if name in ("time", "timeit", "capture"):
            exec(compile(cell, "<magic>", "exec"), self.namespace)  # noqa: S102 - the student's cell
        return None

    def system(self, command, *args, **kwargs):
        self.skipped.append(f"skipped the shell command !{command}"[:120])

    getoutput = system


class CellTimeout(BaseException):
    """A cell ran past its time (a BaseException, so that `except Exception` does not swallow it)."""


class Worker:
    """Runs the cells and the checks; `emit` writes a JSON line to the report."""

    def __init__(self, channel, timeout: float, cells: list[nb.Cell]):
        self.channel, self.timeout, self.cells = channel, timeout, cells
        self.placeholders = nb.placeholders(cells)
        self.bindings = nb.defined(cells)
        self.checked: dict[str, dict] = {}
        self.errors: dict[int, str] = {}  # cell number -> what went wrong when it ran
        self.skipped: list[str] = []  # shell commands not run
        self.at = "after the last cell"  # where the check being made was asked for

    def emit(self, line: dict):
        self.channel.write(json.dumps(line) + "\n")
        self.channel.flush()

    def verdict(self, task: str, fn, note: str = "") -> dict:
        """Check `fn` for `task` (with the cell's clock stopped) and emit the verdict; a function that
        is still the exercise's placeholder is "not attempted", unchecked."""
        name = getattr(fn, "__name__", "") or ""
        code = getattr(fn, "__code__", None)
        if code is not None and (code.co_filename, code.co_firstlineno) in self.placeholders:
            line = {"task": task, "state": "not attempted", "function": name, "notes": []}
            self.checked[task] = line
            self.emit(line)
            return None
        paused = signal.setitimer(signal.ITIMER_REAL, 0)[0]
        try:
            check, _done = TASKS[task]
            report = check(fn, timeout=self.timeout)
        finally:
            if paused:
                signal.setitimer(signal.ITIMER_REAL, paused)
        notes = [note] if note else []
        if name and name != task:
            notes.append(f"the function is named {name}, not {task}")
        twice = self.bindings.get(name, [])
        if len(twice) > 1:
            cells = ", ".join(map(str, twice))
            notes.append(
                f"{name} is defined {len(twice)} times (cells {cells}): checked as it stood {self.at}"
            )
        line = {"task": task, **judged(report), "function": name, "notes": notes}
        self.checked[task] = line
        self.emit(line)
        return report

    def names(self) -> dict:
        """The notebook's own names: `exercise` (checked here and now, its report a core.Report),
        `explore` (nothing drawn), `get_ipython` (Shell)."""

        def exercise(fn, task: str | None = None, **options):
            task, chosen = chosen_task(fn, task, "Checked")
            return self.verdict(task, fn, chosen)

        namespace = {"__name__": "__main__", "exercise": exercise, "explore": lambda *a, **k: None}
        shell = Shell(namespace, self.skipped)
        namespace["get_ipython"] = lambda: shell
        return namespace

    def run_cell(self, cell: nb.Cell, namespace: dict):
        self.at = f"at cell {cell.number}"
        tree = nb.parse(cell)
        if tree is None:
            try:
                compile(cell.source, nb.filename(cell), "exec")
            except (SyntaxError, ValueError) as exc:
                self.errors[cell.number] = f"cell {cell.number} is not valid Python: {exc}"[:200]
            return
        filename = nb.filename(cell)
        linecache.cache[filename] = (len(cell.source), None, cell.source.splitlines(True), filename)
        code = compile(nb.without_widget_imports(tree), filename, "exec")
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            exec(code, namespace)  # noqa: S102 - the student's code, in this process of its own
        except CellTimeout:
            self.errors[cell.number] = f"cell {cell.number} ran past {self.timeout:g} s and was stopped"
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: whatever a student raises
            self.errors[cell.number] = f"cell {cell.number} raised {describe_error(exc)}"[:300]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        self.at = "after the last cell"

    def unchecked(self, task: str, namespace: dict):
        """After the last cell: check `task`'s function if no cell did, found by its name, or by a
        name close to it (renamed); else say why there is none."""
        name = task if task in self.bindings else nb.renamed(task, self.bindings, TASKS)
        fn = namespace.get(name) if name else None
        if callable(fn):
            self.verdict(task, fn)
            return
        if name is None:
            broken = [n for n, error in self.errors.items() if "not valid Python" in error
                      and f"def {task}(" in self.cells_text(n)]  # fmt: skip
            if not broken:
                self.emit({"task": task, "state": "missing", "notes": [f"no cell defines {task}"]})
                return
            name, where = task, broken
        else:
            where = self.bindings[name]
        said = [self.errors[n] for n in where if n in self.errors]
        why = said or [f"{name} (cell {', '.join(map(str, where))}) is not a function"]
        self.emit({"task": task, "state": "raised", "function": name, "notes": why})

    def cells_text(self, number: int) -> str:
        return next((cell.source for cell in self.cells if cell.number == number), "")


def judged(report) -> dict:
    """A report as the class report keeps it: state ("pass", "mistake", "wrong", "raised", "timed
    out"), the mistake codes, a one-line summary, and the failed findings (code, message, hint)."""
    failed = [f for f in report.findings if not f.passed and not f.message.startswith((NOT_RUN, NOT_JUDGED))]
    mistakes = sorted(report.mistakes)
    if report.passed:
        state = "pass"
    elif set(mistakes) - {"error"}:  # "error": the function raised, or ran out of time
        state = "mistake"
    elif any(f.code == "error" and f.actual == "no result" for f in failed):
        state = "timed out"
    elif any(f.code == "error" for f in failed):
        state = "raised"
    else:
        state = "wrong"
    return {
        "state": state,
        "mistakes": mistakes,
        "failed": [[f.code, f.message, f.hint] for f in failed],
    }


def _timeout(signum, frame):
    raise CellTimeout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--memory", type=int, default=MEMORY, help="bytes of address space")
    args = parser.parse_args(argv)
    os.nice(10)  # a class's kernels come first
    # The report reads this process's standard output; the student's prints (and C code's) go nowhere.
    channel = os.fdopen(os.dup(1), "w")
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - for the process's life
    guard = Guard(Path.cwd(), readable=[ROOT / "core", ROOT / "serving"])
    try:
        cells = nb.code_cells(args.notebook)
    except (OSError, nb.NotANotebook) as exc:
        channel.write(json.dumps({"notebook": str(exc)}) + "\n")
        channel.close()
        return 0
    worker = Worker(channel, args.timeout, cells)
    resource.setrlimit(resource.RLIMIT_AS, (args.memory, args.memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    signal.signal(signal.SIGALRM, _timeout)
    sys.addaudithook(guard)
    namespace = worker.names()
    guard.on = True
    for cell in cells:
        worker.run_cell(cell, namespace)
    for task in TASKS:
        if task not in worker.checked:
            worker.unchecked(task, namespace)
    guard.on = False
    notes = [*worker.errors.values(), *dict.fromkeys(worker.skipped)]
    worker.emit({"notes": notes, "refused": sorted(set(guard.refused))})
    channel.close()
    return 0


if __name__ == "__main__":
    # os._exit: a compiled loop that never ends keeps a checker's thread busy; nothing else is left to do.
    code = main()
    os._exit(code)
