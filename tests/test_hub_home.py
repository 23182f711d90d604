"""The hub's home volume (issue 40): a student's exercise.ipynb survives culling, restarts and image upgrades.

On the hub each server starts from the image, whose home folder holds the repository (repo2docker), with
the student's volume mounted at work/ inside it (deploy/jupyterhub/config.yaml). `start` runs
serving/keep_exercise.sh before the server. No cluster here: a folder stands for the image's home, with
copies of `start`, the script and exercise.ipynb in it; "a new container" is that folder put back as the
image has it, the volume's folder kept.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import yaml

from harness.server import free_port, stop_group, wait_until_answers
from harness.support.lab import ACCUMULATED, JUPYTER, run_all

ROOT = Path(__file__).resolve().parent.parent
KEEP = ROOT / "serving" / "keep_exercise.sh"
HUB = ROOT / "deploy" / "jupyterhub" / "config.yaml"


def image_home(home: Path) -> Path:
    """`home` as a new container from the image has it: the repository's files, exercise.ipynb a plain
    file again. What is under home/work (the volume) is left as it is."""
    (home / "serving").mkdir(parents=True, exist_ok=True)
    for name in ("start", "exercise.ipynb", "serving/keep_exercise.sh"):
        target = home / name
        if target.is_symlink() or target.exists():
            target.unlink()
        shutil.copy2(ROOT / name, target)
    return home


def start(home: Path, *command: str, saved: Path | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    if saved is not None:
        env["SCANLAB_SAVED_DIR"] = str(saved)
    return subprocess.run([str(home / "start"), *command], env=env, capture_output=True, text=True, cwd=home)


def answer(path: Path, text: str) -> None:
    """A student's answer: the first exercise's function cell rewritten, as JupyterLab saves it."""
    notebook = json.loads(path.read_text())
    cell = next(c for c in notebook["cells"] if "def scan_training_step" in "".join(c["source"]))
    cell["source"] = text
    path.write_text(json.dumps(notebook))


def function_cell(path: Path) -> str:
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    return next(source for source in sources if "def scan_training_step" in source)


def test_the_first_start_copies_the_exercise_to_the_volume_and_links_it(tmp_path):
    home = image_home(tmp_path / "home")
    saved = home / "work"
    done = start(home, "true", saved=saved)
    assert done.returncode == 0, done.stderr
    assert (saved / "exercise.ipynb").read_bytes() == (ROOT / "exercise.ipynb").read_bytes()
    link = home / "exercise.ipynb"
    assert link.is_symlink() and os.readlink(link) == "work/exercise.ipynb", "relative, inside the home"
    assert not list(saved.glob("*.partial"))


def test_answers_survive_a_restart_and_an_image_upgrade(tmp_path):
    home = image_home(tmp_path / "home")
    saved = home / "work"
    assert start(home, "true", saved=saved).returncode == 0
    answer(home / "exercise.ipynb", "def scan_training_step(w, lr, x, y):\n    return w  # mine\n")
    assert "# mine" in function_cell(saved / "exercise.ipynb"), "written through the link, onto the volume"

    # The same container started again (the server restarted): nothing is copied over the answer.
    assert start(home, "true", saved=saved).returncode == 0
    assert "# mine" in function_cell(home / "exercise.ipynb")

    # Culled, then started from a newer image: its exercise.ipynb differs, the student's is kept.
    image_home(home)
    answer(home / "exercise.ipynb", "def scan_training_step(w, lr, x, y):\n    return 0  # the new image\n")
    done = start(home, sys.executable, "-c", "print(open('exercise.ipynb').read())", saved=saved)
    assert done.returncode == 0, done.stderr
    assert "# mine" in done.stdout and "the new image" not in done.stdout
    assert (home / "exercise.ipynb").is_symlink()


def test_a_volume_that_cannot_be_written_still_starts_the_server(tmp_path):
    home = image_home(tmp_path / "home")
    blocked = tmp_path / "file"
    blocked.write_text("a file where the volume's folder should be")
    done = start(home, sys.executable, "-c", "print('server')", saved=blocked / "work")
    assert done.returncode == 0 and done.stdout.strip() == "server"
    assert "answers will not survive a restart" in done.stderr
    assert not (home / "exercise.ipynb").is_symlink(), "the image's exercise stays usable"


def test_without_a_volume_start_leaves_the_home_as_it_is(tmp_path):
    # Binder, and `start` run by hand: no SCANLAB_SAVED_DIR, nothing copied or linked.
    home = image_home(tmp_path / "home")
    assert start(home, "true").returncode == 0
    assert not (home / "exercise.ipynb").is_symlink() and not (home / "work").exists()


def _server(jupyter_server, home: Path, saved: Path):
    """jupyter_server started through the home's `start`, as the hub starts a student's server
    (`jupyter_server`: the fixture)."""
    port = free_port()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "SCANLAB_SAVED_DIR": str(saved)}
    process = jupyter_server(
        [str(home / "start"), sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root",
         f"--ServerApp.root_dir={home}", "--ServerApp.disable_check_xsrf=True"],
        cwd=home, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/api/contents/exercise.ipynb"
    wait_until_answers(url, process, 120, "jupyter_server")
    return process, url


def _contents(url: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_a_save_from_the_server_lands_on_the_volume_and_outlives_it(jupyter_server, tmp_path):
    # What JupyterLab does on Ctrl-S and on autosave: PUT /api/contents/exercise.ipynb. The server
    # writes through the link (jupyter_server's atomic write follows it), so the volume has it.
    home = image_home(tmp_path / "home")
    saved = home / "work"
    process, url = _server(jupyter_server, home, saved)
    try:
        model = _contents(url + "?content=1")
        cell = next(c for c in model["content"]["cells"] if "def scan_training_step" in c["source"])
        cell["source"] = "def scan_training_step(w, lr, x, y):\n    return w  # saved by the server\n"
        _contents(url, "PUT", {"type": "notebook", "format": "json", "content": model["content"]})
    finally:
        stop_group(process)
    assert (home / "exercise.ipynb").is_symlink()
    assert "saved by the server" in function_cell(saved / "exercise.ipynb")

    image_home(home)  # culled; the next start is a new container from the image
    process, url = _server(jupyter_server, home, saved)
    try:
        cells = _contents(url + "?content=1")["content"]["cells"]
    finally:
        stop_group(process)
    assert any("saved by the server" in c["source"] for c in cells)


def test_the_hub_mounts_the_volume_under_the_home_and_tells_start_where():
    singleuser = yaml.safe_load(HUB.read_text())["singleuser"]
    storage, env = singleuser["storage"], singleuser["extraEnv"]
    assert storage["type"] == "dynamic"
    # Under the home, not over it: the repository (the dashboard, core/, widgets/) stays visible.
    mount = Path(storage["homeMountPath"])
    assert mount.parent == Path("/home/jovyan"), mount
    assert env["SCANLAB_SAVED_DIR"] == str(mount)
    assert singleuser["defaultUrl"] == "/voila/render/app.ipynb", "the dashboard stays the landing page"
    assert os.access(KEEP, os.X_OK) and KEEP.read_text().startswith("#!/bin/bash\n")
    assert subprocess.run(["bash", "-n", str(KEEP)]).returncode == 0


def test_the_checker_runs_in_the_hubs_exercise_and_the_save_lands_on_the_volume(
    browser, jupyter_server, tmp_path
):
    # The hub as a student meets it: JupyterLab started through `start`, the kernel in the home
    # (the repository's core/ and widgets/ beside the notebook, as in the image), exercise.ipynb the
    # link to the volume's copy. Its checks run; Ctrl-S writes the volume's copy.
    home = image_home(tmp_path / "home")
    for name in ("core", "widgets", "data"):
        (home / name).symlink_to(ROOT / name)
    saved = home / "work"
    port = free_port()
    env = {**os.environ, "HOME": str(home), "SCANLAB_SAVED_DIR": str(saved), "JAX_PLATFORMS": "cpu"}
    env.pop("PYTHONPATH", None)
    env["JUPYTER_RUNTIME_DIR"] = str(home / ".local" / "runtime")
    process = jupyter_server(
        [str(home / "start"), str(JUPYTER), "lab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={home}", "--IdentityProvider.token=",
         "--ServerApp.password=", "--LabApp.expose_app_in_browser=True", "--allow-root"],
        cwd=home, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_answers(url + "api", process, 120, "JupyterLab")
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        page.goto(url + "lab/tree/exercise.ipynb", timeout=60_000)
        page.wait_for_function("() => window.jupyterapp && jupyterapp.shell.currentWidget", timeout=90_000)
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        page.wait_for_function(
            "() => jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
            timeout=120_000,
        )
        page.evaluate(
            """source => jupyterapp.shell.currentWidget.content.widgets
                .find(cell => cell.model.sharedModel.getSource().includes('def scan_training_step'))
                .model.sharedModel.setSource(source)""",
            ACCUMULATED + "# kept on the volume\n",
        )
        run_all(page, {"Not yet: accumulated_gradients": 1})
        page.evaluate("() => jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
        context.close()
    finally:
        stop_group(process)
    assert (home / "exercise.ipynb").is_symlink()
    assert "# kept on the volume" in function_cell(saved / "exercise.ipynb")
