"""What `make run` prints on the terminal: the first install says what it does, a visit logs no warning
that is expected (Voila's "not trusted", the kernel's "TCP without encryption"), and stopping the
server prints no traceback (it once printed a ZMQError from the preheated kernel).

Each visit is a plain HTTP GET of the page, which takes a kernel as a browser's visit does (the
pool's preheated one, then a new one); no browser is needed to see what the server logs.
"""

import re
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from harness.support.make import dry_run
from serving.trust import trust

ROOT = Path(__file__).resolve().parent.parent

EXPECTED_WARNINGS = ("is not trusted", "without encryption")


def _announced_before(lines: list[str], announcement: str, command: str) -> bool:
    said = [i for i, line in enumerate(lines) if "echo" in line and announcement in line]
    ran = [i for i, line in enumerate(lines) if command in line and "echo" not in line]
    return bool(said) and bool(ran) and said[0] < ran[0]


def test_a_first_make_run_says_what_it_installs_and_how_long(tmp_path):
    venv = tmp_path / "venv"  # not there: make run would create and fill it
    lines = dry_run("run", f"VENV={venv}")
    assert _announced_before(lines, f"Creating {venv}", "-m venv")
    assert _announced_before(lines, "Installing the dashboard's packages", "install -r requirements.lock")
    assert any("takes a few minutes" in line for line in lines), lines
    # pip itself runs quietly, and no install command is echoed raw in place of the words.
    assert not [line for line in lines if "pip" in line and "-q" not in line and "echo" not in line]


def test_the_test_tools_install_says_so_too(tmp_path):
    venv = tmp_path / "venv"
    lines = dry_run(f"{venv}/.installed-test", f"VENV={venv}")
    assert _announced_before(lines, "Installing the test tools", "install -r requirements-test.lock")


def test_a_changed_notebook_is_signed_again(tmp_path):
    notebook = tmp_path / "app.ipynb"
    content = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("one")])
    nbformat.write(content, notebook)
    notary = tmp_path / "notary"
    assert trust(str(notebook), str(notary)) is True
    assert trust(str(notebook), str(notary)) is False  # signed already
    content.cells[0].source = "two"
    nbformat.write(content, notebook)
    assert trust(str(notebook), str(notary)) is True


def _kernels_started(log: str) -> int:
    return len(re.findall(r"Kernel started: ", log))


@pytest.fixture(scope="module")
def served(make_run, tmp_path_factory):
    """make run visited twice and stopped with the preheated pool refilled (a kernel waiting for its
    visitor inside a cell, the state whose shutdown printed the ZMQError): its log before and after
    the stop."""
    log = tmp_path_factory.mktemp("terminal") / "server.log"
    server = make_run(log=log)
    try:
        server.wait_ready()
        for _ in range(2):
            with urllib.request.urlopen(server.url, timeout=240) as page:
                assert page.status == 200 and b"jupyter-config-data" in page.read()
        deadline = time.monotonic() + 120
        while _kernels_started(server.log_text()) < 3 or not server.pool_ready():
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.5)
        before = server.log_text()
    finally:
        server.stop()
    return before, server.log_text()


def test_visits_log_no_expected_warning(served):
    before, _ = served
    assert _kernels_started(before) >= 3, before  # the pool's, and one for each visit or refill
    for warning in EXPECTED_WARNINGS:
        assert warning not in before, before


def test_stopping_the_server_prints_no_traceback(served):
    _, after = served
    assert "Kernel shutdown" in after, after  # the kernels were shut down, and the log kept
    for sign in ("Traceback", "ZMQError", "ERROR"):
        assert sign not in after, after
