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
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from core.exercises.report import DEFAULT_TIMEOUT
from core.exercises.tasks import TASKS

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "exercise.ipynb"
MEMORY = 4 << 30
"""Bytes of address space a worker may take: one that ran the four checks peaked at 1.7 GB (VmPeak)."""
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
    for place in filter(None, (folder, collected)):
        place = Path(place).expanduser()
        if not place.is_dir():
            raise NotADirectoryError(f"folder: {place} is not a folder of students' notebooks")
        for child in sorted(place.iterdir()):
            if child.name.startswith("."):
                continue
            if child.is_dir() and (child / NOTEBOOK).is_file():
                found[child.name] = Student(child.name, child / NOTEBOOK, child)
            elif place == collected and child.suffix == ".ipynb" and child.is_file():
                found[child.stem] = Student(child.stem, child, child.parent)
    return [found[name] for name in sorted(found)]


def _missing(state: str, note: str) -> dict:
    return {"state": state, "mistakes": [], "failed": [], "function": "", "notes": [note]}


def check(
    student: Student, timeout: float = DEFAULT_TIMEOUT, memory: int = MEMORY, limit: float = 120.0
) -> Row:
    """One student's Row: their notebook through a worker, killed after `limit` seconds (what it had
    checked by then is kept; the rest "timed out")."""
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
        with subprocess.Popen(
            command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, start_new_session=True,
        ) as worker:  # fmt: skip
            try:
                output, _ = worker.communicate(timeout=limit)
                ended = f"its process ended with exit code {worker.returncode} before checking it"
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, 9)
                output, _ = worker.communicate()
                ended = f"the notebook's run took over {limit:g} s and was stopped"
    cells, notes = {}, []
    for text in output.decode(errors="replace").splitlines():
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue
        if "notebook" in line:
            cells = {task: _missing("no notebook", line["notebook"]) for task in TASKS}
        elif "task" in line:
            cells[line["task"]] = {"mistakes": [], "failed": [], "function": "", **line}
        else:
            notes = [*line.get("notes", []), *line.get("refused", [])]
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


class Report:
    """The class's rows, checked again only where a notebook changed (`update`)."""

    def __init__(self, folder=None, collected=None, workers: int | None = None, **limits):
        self.folder, self.collected, self.limits = folder, collected, limits
        self.workers = workers or os.cpu_count() or 1
        self.rows: dict[str, Row] = {}
        self._seen: dict[str, str] = {}
        self.checked_at, self.seconds, self.rechecked = None, 0.0, 0

    def update(self) -> Report:
        """Check every notebook that is new or changed since the last update; drop students gone."""
        started = time.monotonic()
        class_ = students(self.folder, self.collected)
        due = [s for s in class_ if self._seen.get(s.name) != fingerprint(s) or s.name not in self.rows]
        prints = {s.name: fingerprint(s) for s in due}
        rows = dict(self.rows)  # the page reads self.rows meanwhile: it is replaced whole, at the end
        with ThreadPoolExecutor(self.workers) as pool:
            for row in pool.map(lambda s: check(s, **self.limits), due):
                rows[row.student] = row
        self._seen.update(prints)
        names = {s.name for s in class_}
        self.rows = {name: rows[name] for name in sorted(rows) if name in names}
        self.checked_at, self.seconds, self.rechecked = time.time(), time.monotonic() - started, len(due)
        return self

    def counts(self) -> dict:
        """Per exercise: {"pass": n, "students": n, "bars": {label: [students]}}: a bar for each named
        mistake, largest first, then one for each other state but pass, in the order of STATES."""
        summary = {}
        for task in TASKS:
            bars: dict[str, list[str]] = {}
            for row in self.rows.values():
                cell = row.cells[task]
                labels = cell["mistakes"] if cell["state"] == "mistake" else [cell["state"]]
                for label in labels:
                    if label not in ("pass", "error"):
                        bars.setdefault(label, []).append(row.student)
            passed = sum(row.cells[task]["state"] == "pass" for row in self.rows.values())
            rank = {state: i for i, state in enumerate(STATES)}
            ordered = dict(
                sorted(
                    bars.items(),
                    key=lambda item: (item[0] in rank, rank.get(item[0], -len(item[1])), item[0]),
                )
            )
            summary[task] = {"pass": passed, "students": len(self.rows), "bars": ordered}
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
