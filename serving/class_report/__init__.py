"""The class report: every student's exercise.ipynb through the checker, one table for the teacher.

    python -m serving.class_report [--dir ~/scanlab-class] [--collected FOLDER] [--out FOLDER]

(`make class-report`). Each notebook is checked by serving.class_report.worker, a process of its own
with the student's folder as its working directory, under a time and memory limit, as many at once
as the machine has cores; this process reads only what the workers write and never runs a student's
code. A verdict per student and exercise: "pass", "mistake" (the named mistakes), "wrong" (a result no
named mistake explains), "raised", "timed out", "not attempted", "missing" (no function of that
name), or "no notebook" (the file is not one). `page` draws it for the teacher
(serving.class_report.page); `gradescope` writes it for a course's grader.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from core.exercises.report import DEFAULT_TIMEOUT
from core.exercises.tasks import TASKS
from serving.groups import signal_group

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "exercise.ipynb"
MEMORY = 4 << 30
"""Bytes of address space a worker may take: one checking four right functions peaked at 1.53 GB
(VmPeak; 0.29 GB resident)."""
STATES = ("pass", "mistake", "wrong", "raised", "timed out", "not attempted", "missing", "no notebook")


class Student(NamedTuple):
    """A student's notebook: `name` (their folder's, or the collected file's stem), the notebook, and
    the folder their code runs in."""

    name: str
    notebook: Path
    folder: Path


class Row(NamedTuple):
    """A student's verdicts: `cells` maps each exercise (a key of TASKS) to its verdict, a dict with
    "state" (one of STATES), "mistakes" (the checker's codes), "failed" ([code, message, hint] of each
    failed check), "function" (the name checked) and "notes" (sentences); `notes` are the notebook's
    own (cells that raised or ran out of time, a function defined twice, what the guard refused);
    `seconds` the worker's wall time."""

    student: str
    cells: dict
    notes: list
    seconds: float


def students(folder: Path | None = None, collected: Path | None = None) -> list[Student]:
    """The class: `folder`'s student folders (each holding exercise.ipynb, as `make class` makes them),
    and `collected`'s notebooks (NAME.ipynb, or NAME/exercise.ipynb), sorted by name."""
    found = {}
    for place, flat in ((folder, False), (collected, True)):
        if place is None:
            continue
        place = Path(place).expanduser()
        if not place.is_dir():
            raise NotADirectoryError(f"folder: {place} is not a folder of students' notebooks")
        for child in sorted(place.iterdir()):
            if child.name.startswith("."):
                continue
            if child.is_dir() and (child / NOTEBOOK).is_file():
                found[child.name] = Student(child.name, child / NOTEBOOK, child)
            elif flat and child.suffix == ".ipynb" and child.is_file():
                found[child.stem] = Student(child.stem, child, child.parent)
    return [found[name] for name in sorted(found)]


def _missing(state: str, note: str) -> dict:
    return {"state": state, "mistakes": [], "failed": [], "function": "", "notes": [note]}


def _strings(value, size: int = 2000) -> list[str]:
    return [str(item)[:size] for item in value] if isinstance(value, list) else []


def _cell(line: dict) -> dict | None:
    """A worker's verdict line as a cell, or None when it is not one. The worker's output comes from
    the process that ran the student's code: only known states and exercises, strings and lists of
    strings are taken from it (a line a student's code wrote there is taken, or dropped, no more)."""
    if line.get("task") not in TASKS or line.get("state") not in STATES:
        return None
    failed = [_strings(f, 4000)[:3] for f in line.get("failed", []) if isinstance(f, list) and len(f) == 3]
    return {
        "task": line["task"],
        "state": line["state"],
        "mistakes": _strings(line.get("mistakes"), 80),
        "failed": failed[:12],
        "function": str(line.get("function", ""))[:80],
        "notes": _strings(line.get("notes"))[:12],
    }


class Stopped(Exception):
    """The report was stopped (`Report.stop`) while checking."""


def check(
    student: Student, timeout: float = DEFAULT_TIMEOUT, memory: int = MEMORY, limit=None, running=None
) -> Row:
    """One student's Row: their notebook through a worker, killed after `limit` seconds (by default
    12 checks' time, at least 120 s; what it had checked by then is kept, the rest "timed out").
    `running`, a set, holds the worker while it runs (Report.stop kills what it holds)."""
    limit = limit or max(120.0, 12 * timeout)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="scanlab-report-") as scratch:
        folder = student.folder
        if student.notebook.name != NOTEBOOK:  # a collected file: a folder of its own, with a copy
            folder = Path(scratch) / student.name
            folder.mkdir()
            shutil.copyfile(student.notebook, folder / NOTEBOOK)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
        # The student's programs are not the engine's: nothing of theirs goes into the shared cache.
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        command = [sys.executable, "-m", "serving.class_report.worker", NOTEBOOK,
                   f"--timeout={timeout}", f"--memory={memory}"]  # fmt: skip
        errors = Path(scratch) / "stderr"
        with errors.open("wb") as stderr, subprocess.Popen(
            command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=stderr,
            stdin=subprocess.DEVNULL, start_new_session=True,
        ) as worker:  # fmt: skip
            if running is not None:
                running.add(worker)
            try:
                output, _ = worker.communicate(timeout=limit)
                ended = f"its process ended with exit code {worker.returncode} before checking it"
            except subprocess.TimeoutExpired:
                signal_group(worker, signal.SIGKILL)
                output, _ = worker.communicate()
                ended = f"the notebook's run took over {limit:g} s and was stopped"
            finally:
                if running is not None:
                    running.discard(worker)
        said = errors.read_bytes()[-2000:].decode(errors="replace").strip().splitlines()
    cells, notes = {}, []
    for text in output.decode(errors="replace").splitlines():
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue
        if not isinstance(line, dict):
            continue
        if "notebook" in line:
            cells = {task: _missing("no notebook", str(line["notebook"])[:300]) for task in TASKS}
        elif "task" in line:
            cell = _cell(line)
            if cell is not None:
                cells[cell["task"]] = cell
        else:
            notes = [*_strings(line.get("notes"))[:20], *_strings(line.get("refused"))[:20]]
    if not output and said:  # the worker itself failed (not the student's code): say how
        notes.append(f"the checking process failed: {said[-1][:300]}")
    state = "timed out" if "took over" in ended else "raised"
    for task in TASKS:
        cells.setdefault(task, _missing(state, ended))
    return Row(student.name, cells, notes, time.monotonic() - started)


def fingerprint(student: Student) -> str:
    """What a verdict depends on: the notebook's bytes (a student's save)."""
    try:
        return hashlib.sha256(student.notebook.read_bytes()).hexdigest()
    except OSError:
        return ""


def hurried(row: Row) -> bool:
    """Whether a row holds a verdict the machine's load may have made (a time limit reached): it is
    checked again at the next update, saved or not."""
    timed = any(cell["state"] == "timed out" for cell in row.cells.values())
    return timed or any("ran past" in note for note in row.notes)


class Report:
    """The class's rows, checked again only where a notebook changed (`update`); `stop()` ends an
    update under way (its workers killed)."""

    def __init__(self, folder=None, collected=None, workers: int | None = None, **limits):
        self.folder, self.collected, self.limits = folder, collected, limits
        self.workers = workers or os.cpu_count() or 1
        self.rows: dict[str, Row] = {}
        self._seen: dict[str, str] = {}
        self._stopped = threading.Event()
        self._running: set = set()
        self.checked_at, self.seconds, self.rechecked = None, 0.0, 0

    def _check(self, student: Student, seen: str) -> tuple[Row, str]:
        if self._stopped.is_set():
            raise Stopped
        try:
            row = check(student, running=self._running, **self.limits)
        except Exception as exc:  # noqa: BLE001 - one student's row, never the class's report
            row = Row(
                student.name, {t: _missing("raised", f"not checked: {exc}"[:300]) for t in TASKS}, [], 0.0
            )
        return row, seen

    def update(self) -> Report:
        """Check every notebook that is new or changed since the last update (or whose last verdict
        met a time limit); drop students gone. Raises Stopped after `stop()`."""
        started = time.monotonic()
        class_ = students(self.folder, self.collected)
        prints = {s.name: fingerprint(s) for s in class_}
        due = [s for s in class_ if self._seen.get(s.name) != prints[s.name] or s.name not in self.rows]
        rows = dict(self.rows)  # the page reads self.rows meanwhile: it is replaced whole, at the end
        with ThreadPoolExecutor(self.workers) as pool:
            futures = [pool.submit(self._check, s, prints[s.name]) for s in due]
            try:
                for future in futures:
                    row, seen = future.result()
                    rows[row.student] = row
                    self._seen[row.student] = "" if hurried(row) else seen
            finally:
                for future in futures:
                    future.cancel()
        names = {s.name for s in class_}
        self.checked_at, self.seconds, self.rechecked = time.time(), time.monotonic() - started, len(due)
        self.rows = {name: rows[name] for name in sorted(rows) if name in names}
        return self

    def stop(self) -> None:
        """End an update under way: no new worker starts, the running ones are killed."""
        self._stopped.set()
        for worker in list(self._running):  # one just ended and reaped is not signalled
            signal_group(worker, signal.SIGKILL)

    def counts(self, rows: dict | None = None) -> dict:
        """Per exercise (of `rows`, by default the report's): {"pass": n, "passed": [students],
        "students": n, "bars": {label: [students]}}: a bar for each named mistake, largest first,
        then one for each other state but pass, in the order of STATES."""
        rows = self.rows if rows is None else rows
        rank = {state: i for i, state in enumerate(STATES)}
        summary = {}
        for task in TASKS:
            bars: dict[str, list[str]] = {}
            for row in rows.values():
                cell = row.cells[task]
                labels = cell["mistakes"] if cell["state"] == "mistake" else [cell["state"]]
                for label in labels:
                    if label not in ("pass", "error"):
                        bars.setdefault(label, []).append(row.student)
            passed = [row.student for row in rows.values() if row.cells[task]["state"] == "pass"]
            ordered = dict(
                sorted(
                    bars.items(),
                    key=lambda item: (item[0] in rank, rank.get(item[0], -len(item[1])), item[0]),
                )
            )
            summary[task] = {"pass": len(passed), "passed": passed, "students": len(rows), "bars": ordered}
        return summary

    def as_json(self) -> dict:
        return {
            "checked_at": self.checked_at,
            "seconds": self.seconds,
            "exercises": list(TASKS),
            "rows": [row._asdict() for row in self.rows.values()],
            "counts": self.counts(),
        }


def cell_text(cell: dict) -> str:
    """A verdict in a few words: "pass", "mistake: accumulated_gradients", "raised", ..."""
    if cell["state"] == "mistake":
        return ", ".join(code for code in cell["mistakes"] if code != "error")
    return cell["state"]


def write(report: Report, out: Path) -> list[Path]:
    """report.json, report.csv (student x exercise) and report.html in `out`, and a Gradescope
    results.json per student under out/gradescope/; the paths written."""
    from serving.class_report import gradescope, page

    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json", out / "report.csv", out / "report.html"]
    written[0].write_text(json.dumps(report.as_json(), indent=1))
    with written[1].open("w", newline="") as table:
        rows = csv.writer(table)
        rows.writerow(["student", *TASKS])
        rows.writerows(
            [row.student, *(cell_text(row.cells[t]) for t in TASKS)] for row in report.rows.values()
        )
    written[2].write_text(page.html_page(report))
    written += gradescope.write(report, out / "gradescope")
    return written
