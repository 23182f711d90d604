"""JupyterLab for the tests and benchmarks that open a notebook in it: `LabServer(root)` serves a
folder (its app on `window.jupyterapp`, kernels importing this checkout's `core` and `widgets`), and
can be stopped and started again, on a new port, as a restarted server may be."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.server import free_port, stop_group, wait_until_answers
from serving.classroom import LAB_SETTINGS

ROOT = Path(__file__).resolve().parent.parent
# Not resolved: a venv's python is a link to the base interpreter, whose folder has no jupyter.
JUPYTER = (
    ROOT / os.environ["LAB_VENV"] / "bin" if "LAB_VENV" in os.environ else Path(sys.executable).parent
) / "jupyter"


class LabServer:
    """JupyterLab serving `root` with `token` ("" for none), its own settings under root/home, the
    option JupyterLab's own browser tests use (`expose_app_in_browser`); `start()`, `stop()`, `url`."""

    def __init__(self, root: Path, token: str = ""):
        self.root, self.token = root, token
        self.process: subprocess.Popen | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> LabServer:
        if not JUPYTER.exists():
            raise FileNotFoundError(
                f"{JUPYTER} is missing: `make test` (or `make lab-env`) installs JupyterLab"
            )
        self.port = free_port()
        home = self.root / "home"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
            "JAX_PLATFORMS": "cpu",
        }
        self.process = subprocess.Popen(
            [str(JUPYTER), "lab", "--no-browser", f"--port={self.port}", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.root_dir={self.root}", f"--IdentityProvider.token={self.token}",
             "--ServerApp.password=", "--LabApp.expose_app_in_browser=True",
             f"--LabApp.app_settings_dir={LAB_SETTINGS}", "--allow-root"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            wait_until_answers(self.url + "api", self.process, 120, "JupyterLab")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_group(self.process)
            self.process = None
