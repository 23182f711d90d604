"""The exercise for a class on one machine (`make class`, serving/classroom.py): a JupyterLab server per
student, each with its own token and its own copy of exercise.ipynb, kept from one start to the next;
and the checker's cells run from a student's link, in Chromium, as that student would run them."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.server import free_ports
from harness.support.lab import run_all
from serving.groups import signal_group
from widgets.notebooks import copy, keep_copy

ROOT = Path(__file__).resolve().parent.parent
JUPYTER = Path(sys.executable).parent / "jupyter"  # make test adds JupyterLab to its environment


def test_a_copy_is_made_once_and_never_overwritten(tmp_path):
    source, target = tmp_path / "exercise.ipynb", tmp_path / "student-01" / "exercise.ipynb"
    source.write_text("the exercise")
    assert keep_copy(source, target) is True and target.read_text() == "the exercise"
    target.write_text("my answers")
    source.write_text("a newer exercise")
    assert keep_copy(source, target) is False and target.read_text() == "my answers"
    assert sorted(p.name for p in target.parent.iterdir()) == ["exercise.ipynb"], "no partial copy left"


def test_the_packages_notebooks_are_written_once_unless_overwritten(tmp_path):
    # python -m widgets.notebooks DIR: the same never-overwriting copy, for both notebooks.
    folder = tmp_path / "course"
    assert copy(folder) == {"written": [folder / "app.ipynb", folder / "exercise.ipynb"], "kept": []}
    assert (folder / "app.ipynb").read_bytes() == (ROOT / "app.ipynb").read_bytes()
    (folder / "exercise.ipynb").write_text("my answers")
    assert copy(folder)["kept"] == [folder / "app.ipynb", folder / "exercise.ipynb"]
    assert (folder / "exercise.ipynb").read_text() == "my answers"
    assert len(copy(folder, overwrite=True)["written"]) == 2
    assert (folder / "exercise.ipynb").read_bytes() == (ROOT / "exercise.ipynb").read_bytes()
    (tmp_path / "a file").write_text("")
    with pytest.raises(NotADirectoryError, match="folder: .*a file is a file, not a folder"):
        copy(tmp_path / "a file")


class Class:
    """`python -m serving.classroom` for `students` (or `make class`, with `make=True`), its output
    read as it comes."""

    def __init__(self, folder: Path, students: int, *extra: str, port: int | None = None, make=False):
        self.port = port or free_ports(students)
        self.lines: list[str] = []
        self.ready = threading.Event()
        command = (
            ["make", "--no-print-directory", "class", f"STUDENTS={students}", f"CLASS_DIR={folder}",
             f"CLASS_PORT={self.port}", f"VENV={Path(sys.executable).parent.parent}",
             f"CLASS_ARGS={' '.join(extra)}"]
            if make else
            [sys.executable, "-m", "serving.classroom", f"--students={students}", f"--dir={folder}",
             f"--port={self.port}", f"--jupyter={JUPYTER}", *extra]
        )  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env={**os.environ, "JAX_PLATFORMS": "cpu"}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("Ctrl-C stops every server"):  # printed after the links
                self.ready.set()

    def links(self) -> list[str]:
        assert self.ready.wait(180), "".join(self.lines)
        return [m.group(1) for line in self.lines if (m := re.match(r"student-\d+: (http://\S+)$", line))]

    def teacher(self) -> str:
        """The teacher's link to the class report, as printed."""
        assert self.ready.wait(180), "".join(self.lines)
        return next(line.strip() for line in self.lines if re.match(r"http://\S+/\?token=\S+$", line.strip()))

    def stop(self, sign=signal.SIGTERM) -> int:
        """Stop it as make (SIGTERM) or a teacher's Ctrl-C (SIGINT to every process of the group) does."""
        signal_group(self.process, sign)  # stopped twice (a test's finally): the second is nothing
        code = self.process.wait(60)
        self.reader.join(10)  # it reads to the end of the output, then the pipe is closed
        self.process.stdout.close()
        return code


@pytest.fixture
def classroom():
    """`classroom(folder, students, ...)` starts `make class`'s servers (Class); the test stops them."""
    return Class


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_each_student_has_a_server_a_token_and_a_copy_kept_across_starts(classroom, tmp_path):
    if not JUPYTER.exists():
        pytest.fail(f"{JUPYTER} is missing: `make test` (or `make lab-env`) installs JupyterLab first")
    folder = tmp_path / "class"
    room = classroom(folder, 2)
    try:
        links = room.links()
        assert len(links) == 2 and all("/lab/tree/exercise.ipynb?token=" in link for link in links)
        api = [link.replace("/lab/tree/", "/api/contents/") for link in links]
        assert [_status(url) for url in api] == [200, 200]
        # A student's token opens no other student's server.
        mine, other = api[0].split("?"), api[1].split("?")
        assert _status(f"{mine[0]}?{other[1]}") == 403
        listed = (folder / "links.txt").read_text().splitlines()
        assert listed == [f"student-{i + 1:02d}: {link}" for i, link in enumerate(links)]
        # No "Jupyter news?" pop-up in a student's lab.
        base, token = links[0].split("/lab/tree/")[0], links[0].split("?")[1]
        notification = f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification?{token}"
        with urllib.request.urlopen(notification, timeout=30) as response:
            schema = json.load(response)["schema"]["properties"]  # overrides.json sets the defaults
        news = {name: schema[name]["default"] for name in ("fetchNews", "checkForUpdates")}
        assert news == {"fetchNews": "false", "checkForUpdates": False}, news
        # The class report, for the teacher's token alone (kept in teacher.txt, readable by the teacher).
        teacher = room.teacher()
        assert teacher.startswith(f"http://127.0.0.1:{room.port}/?token=")
        assert (folder / "teacher.txt").read_text().strip() == teacher
        assert (folder / "teacher.txt").stat().st_mode & 0o777 == 0o600
        assert _status(teacher) == 200
        assert _status(f"http://127.0.0.1:{room.port}/?{token}") == 403, "a student's token"
    finally:
        assert room.stop() == 0
    assert "Stopped 2 servers." in "".join(room.lines)
    copy = folder / "student-01" / "exercise.ipynb"
    assert copy.read_bytes() == (ROOT / "exercise.ipynb").read_bytes()
    mine = copy.read_text().replace("raise NotImplementedError", "raise NotImplementedError  # mine", 1)
    copy.write_text(mine)

    # The next lesson, from make: the same links, the answers kept, and Ctrl-C stops it cleanly.
    room = classroom(folder, 2, port=room.port, make=True)
    try:
        assert room.links() == links and room.teacher() == teacher
        assert "kept" in "".join(room.lines)
    finally:
        room.stop(signal.SIGINT)
    said = "".join(room.lines)
    assert "Stopped 2 servers." in said and "make: ***" not in said, said
    assert "# mine" in copy.read_text()


def test_the_checker_runs_from_a_students_link(browser, classroom, tmp_path):
    room = classroom(tmp_path / "class", 1, "--LabApp.expose_app_in_browser=True")
    try:
        (link,) = room.links()
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(link, timeout=60_000)
        page.wait_for_function("() => window.jupyterapp && jupyterapp.shell.currentWidget", timeout=90_000)
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        page.wait_for_function(
            "() => jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
            timeout=120_000,
        )
        # The kernel's folder is the student's; it imports the checker from the repository all the same.
        run_all(page, {"Not yet: error.": 3})
        assert errors == [], errors
        # The teacher's page counts that student's notebook (four exercises not attempted).
        report = context.new_page()
        report.goto(room.teacher())
        report.get_by_text("0 of 1 pass").first.wait_for(timeout=90_000)  # taken again each minute
        assert report.locator("tbody td.not-attempted").count() == 4
        context.close()
    finally:
        room.stop()
