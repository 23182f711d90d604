"""The class report (serving.class_report): 30 students' notebooks built from the learner corpus
(harness.support.class_notebooks: right, wrong in every named way, broken in each way a class breaks
them), each checked in a worker process of its own; every cell must be the checker's verdict for
that function. Then the teacher's page in Chromium (a student's token refused), the Gradescope
export and the command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from core.exercises import EXERCISES
from core.exercises.guard import Guard
from harness.server import free_port
from harness.support.axe import violations
from harness.support.class_notebooks import build
from serving.class_report import Report, gradescope, students, write
from serving.class_report import notebook as nb
from serving.class_report.page import html_page
from serving.class_report.server import TeacherPage

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 3  # seconds per check and per cell: the never-ending ones wait this long, not the default 10


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """(the class's folder, what each cell must say, the Report), checked once for the module."""
    folder = tmp_path_factory.mktemp("class")
    expected = build(folder)
    return folder, expected, Report(folder, timeout=TIMEOUT).update()


def said(row, cell) -> str:
    return " ".join([*cell["notes"], *(message for _code, message, _hint in cell["failed"]), *row.notes])


def test_every_cell_is_the_checkers_verdict(checked):
    folder, expected, report = checked
    assert list(report.rows) == sorted(expected)
    for student, tasks in expected.items():
        row = report.rows[student]
        for task, (kind, *rest) in tasks.items():
            cell = row.cells[task]
            where = (student, task, cell["state"], cell["mistakes"], said(row, cell))
            if kind == "codes":
                codes, *words = rest
                # The corpus's codes are the checker's verdict for that function (test_learner_corpus).
                assert cell["mistakes"] == sorted(codes), where
                assert (cell["state"] == "pass") == (not codes), where
                assert cell["state"] in (("pass",) if not codes else ("mistake", "raised", "timed out")), (
                    where
                )
            else:
                assert cell["state"] == kind, where
                words = rest
            for word in words:
                assert word in said(row, cell), where
    # The class holds every named mistake of every exercise, each counted under its code.
    for task, exercise in EXERCISES.items():
        counted = report.counts()[task]["bars"]
        named = {code for code in counted if code in exercise.mistakes}
        assert named == set(exercise.mistakes) - {"error"}, (task, set(exercise.mistakes) - named)


def test_a_students_code_runs_in_their_folder_and_nowhere_else(checked):
    folder, _expected, report = checked
    refused = [note for note in report.rows["student-14"].notes if "lets a student's code" in note]
    assert refused == [
        f"the class report lets a student's code read only its own folder and Python's, not "
        f"{folder / 'student-02' / 'exercise.ipynb'}"
    ]
    # Prints went nowhere, and the report's own folder holds nothing the workers wrote.
    assert sorted(p.name for p in (folder / "student-17").iterdir()) == ["exercise.ipynb"]


def test_the_counts_and_the_page(checked, browser):
    folder, expected, report = checked
    counts = report.counts()
    scan = counts["scan_training_step"]
    passing = [
        s for s, tasks in expected.items() if tasks["scan_training_step"][:2] == ("codes", frozenset())
    ]
    assert scan["pass"] == len(passing) and scan["students"] == 30
    assert scan["bars"]["not attempted"] == ["student-25"] and scan["bars"]["no notebook"] == ["student-24"]
    token, port = "teacher-secret", free_port()
    # Every 2 s, not 60: the server checks what was saved since, the page takes the report again.
    page_server = TeacherPage(("127.0.0.1", port), report, token, every=2).start()
    try:
        base = f"http://127.0.0.1:{port}/"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "?token=a-students-token", timeout=10)
        assert refused.value.code == 403
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        page.goto(base + f"?token={token}")
        page.get_by_text(f"{scan['pass']} of 30 pass").first.wait_for(timeout=30_000)
        sections = page.locator("section")
        assert sections.count() == 4
        text = sections.nth(0).inner_text()
        for label, who in scan["bars"].items():
            assert f"{label}: {len(who)}" in text and ", ".join(who) in text, label
        assert violations(page) == []
        rows = page.locator("tbody tr")
        assert rows.count() == 30
        assert rows.nth(23).locator("td").first.inner_text() == "no notebook"
        # Students save right answers: student-25 (all "not attempted"), then student-24 (no notebook).
        # The page follows by itself; paused, it follows "Check now". The module's last use of both.
        book = (folder / passing[0] / "exercise.ipynb").read_text()
        (folder / "student-25" / "exercise.ipynb").write_text(book)
        page.get_by_text(f"{scan['pass'] + 1} of 30 pass").wait_for(timeout=60_000)
        assert report.rows["student-25"].cells["scan_training_step"]["state"] == "pass"
        page.get_by_label("Take the report again every 2 s").uncheck()
        (folder / "student-24" / "exercise.ipynb").write_text(book)
        page.wait_for_timeout(8_000)  # the server has checked it; the paused page still shows the old
        assert page.get_by_text(f"{scan['pass'] + 1} of 30 pass").count() == 1
        page.get_by_role("button", name="Check now").click()
        page.get_by_text(f"{scan['pass'] + 2} of 30 pass").wait_for(timeout=60_000)
        context.close()
    finally:
        page_server.shutdown()
    with pytest.raises(OSError):  # stopped with the class
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)


def test_the_gradescope_export_names_the_mistake(checked, tmp_path):
    _folder, expected, report = checked
    written = write(report, tmp_path / "out")
    assert {p.name for p in written[:3]} == {"report.json", "report.csv", "report.html"}
    results = json.loads((tmp_path / "out" / "gradescope" / "student-01" / "results.json").read_text())
    assert [t["name"] for t in results["tests"]] == list(EXERCISES)
    row = report.rows["student-01"]
    assert results["score"] == sum(c["state"] == "pass" for c in row.cells.values())
    for test in results["tests"]:
        cell = row.cells[test["name"]]
        assert test["output"] == gradescope.feedback(cell) and test["max_score"] == 1.0
        for code in cell["mistakes"]:
            assert code in test["output"]
    csv_rows = (tmp_path / "out" / "report.csv").read_text().splitlines()
    assert csv_rows[0] == "student," + ",".join(EXERCISES) and len(csv_rows) == 31


def test_reading_a_notebook_never_runs_it(tmp_path):
    path = tmp_path / "exercise.ipynb"
    placeholder = ["def momentum_training_step(*a):\n", "    '''x'''\n", "    raise NotImplementedError"]
    path.write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["def scan_train_step(w, lr, x_batches, y_batches):\n", "  pass\n"]},
        {"cell_type": "markdown", "source": "text"},
        {"cell_type": "code", "source": "!rm -rf /\nimport os\nos._exit(1)"},
        {"cell_type": "code", "source": placeholder},
    ]}))  # fmt: skip
    cells = nb.code_cells(path)
    assert [c.number for c in cells] == [1, 3, 4] and "get_ipython().system" in cells[1].source
    bound = nb.defined(cells)
    assert bound == {"scan_train_step": [1], "os": [3], "momentum_training_step": [4]}
    assert nb.renamed("scan_training_step", bound, EXERCISES) == "scan_train_step"
    assert nb.renamed("pytree_training_step", bound, EXERCISES) is None
    assert nb.placeholders(cells) == {("<cell 1>", 1), ("<cell 4>", 1)}
    path.write_text("[1, 2]")
    with pytest.raises(nb.NotANotebook, match="no list of cells"):
        nb.code_cells(path)


def test_the_command_line(tmp_path):
    flat = tmp_path / "collected"
    flat.mkdir()
    (flat / "ada.ipynb").write_text((ROOT / "exercise.ipynb").read_text())
    (flat / "notes.txt").write_text("not a notebook's name")
    assert [s.name for s in students(collected=flat)] == ["ada"]
    command = [sys.executable, "-m", "serving.class_report"]
    out = ["--out", str(tmp_path / "out")]
    run = subprocess.run([*command, "--collected", str(flat), *out], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "ada" in run.stdout and "not attempted" in run.stdout and "1 notebooks checked" in run.stdout
    assert (tmp_path / "out" / "gradescope" / "ada" / "results.json").exists()
    assert sorted(p.name for p in flat.iterdir()) == ["ada.ipynb", "notes.txt"], "nothing written beside them"
    room = tmp_path / "class"  # make class's folder, and no --out: the report goes into DIR/report
    (room / "student-01").mkdir(parents=True)
    (room / "student-01" / "exercise.ipynb").write_text((ROOT / "exercise.ipynb").read_text())
    run = subprocess.run([*command, "--dir", str(room)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert {"report.html", "report.csv", "report.json"} <= {p.name for p in (room / "report").iterdir()}
    for bad, words in ((["--dir", str(tmp_path / "none")], "is not a folder"), ([], "give --dir")):
        run = subprocess.run([*command, *bad], cwd=ROOT, capture_output=True, text=True)
        assert run.returncode == 2 and words in run.stderr, run.stderr


def test_the_guard_lets_python_read_the_metadata_on_its_path_and_nothing_else_there(tmp_path, monkeypatch):
    # JAX reads every distribution's entry points when it first runs; a checkout built in place (as
    # tests/test_package.py's build once left it, in CI) holds scanlab.egg-info beside core/.
    checkout, student = tmp_path / "checkout", tmp_path / "student-01"
    (checkout / "scanlab.egg-info").mkdir(parents=True)
    student.mkdir()
    for name in ("scanlab.egg-info/entry_points.txt", "notes.txt"):
        (checkout / name).write_text("")
    monkeypatch.syspath_prepend(str(checkout))
    guard = Guard(student)
    guard.on = True
    guard("open", (str(checkout / "scanlab.egg-info" / "entry_points.txt"), "r", 0))
    with pytest.raises(PermissionError, match="read only its own folder"):
        guard("open", (str(checkout / "notes.txt"), "r", 0))
    said = "the class report lets a student's code read only its own folder and Python's, not "
    assert guard.refused == [f"{said}{checkout / 'notes.txt'}"]


def test_magics_lines_a_student_forges_and_the_guards_edges(tmp_path):
    # One notebook: IPython's magics before the imports, a line forged onto the report's descriptor,
    # /dev/null written and /proc/self read (allowed), a file written outside the folder (refused).
    book = json.loads((ROOT / "exercise.ipynb").read_text())
    first = next(c for c in book["cells"] if c["cell_type"] == "code")
    first["source"] = "%matplotlib inline\n!pip install optax\n" + "".join(first["source"])
    forged = json.dumps({"task": "pytree_training_step", "state": 'pass"><script>alert(1)</script>'})
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    book["cells"].insert(2, {**cell, "source": (
        "import os\n"
        f"for fd in range(3, 12):\n    try:\n        os.write(fd, {(forged + chr(10)).encode()!r})\n"
        "    except OSError:\n        pass\n"
        "open('/dev/null', 'w').write('x')\nopen('/proc/self/status').read()\n"
        f"open({str(tmp_path / 'outside.txt')!r}, 'w').write('x')\n"
    )})  # fmt: skip
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "exercise.ipynb").write_text(json.dumps(book))
    report = Report(tmp_path, timeout=TIMEOUT).update()
    row = report.rows["ada"]
    assert {t: c["state"] for t, c in row.cells.items()} == dict.fromkeys(EXERCISES, "not attempted"), row
    assert "skipped the shell command !pip install optax" in row.notes
    # /dev/null and /proc/self passed: the cell stopped at its last line, the write outside.
    assert any(n.startswith("cell 3 raised PermissionError at line 9") for n in row.notes), row.notes
    refused = [n for n in row.notes if n.startswith("the class report lets")]
    assert refused == [
        f"the class report lets a student's code write only in its own folder, not {tmp_path / 'outside.txt'}"
    ]
    assert not (tmp_path / "outside.txt").exists()
    assert "<script>" not in html_page(report)
