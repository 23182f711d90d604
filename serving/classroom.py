"""The exercise for a class on one machine: `make class STUDENTS=30 HOST=0.0.0.0` runs this.

    python -m serving.classroom --students 30 [--dir ~/scanlab-class] [--host 0.0.0.0] [--port 8900]
        [--ServerApp.option=value ...]  (any other option goes to every JupyterLab server)

The dashboard never runs a visitor's code; the exercise is nothing but a learner's code. So each
student gets a JupyterLab server of their own (port PORT+1, PORT+2, ...), with its own token and its
own folder, DIR/student-NN, holding their copy of exercise.ipynb: their kernel, their notebook, and no
other student's in their file browser. The copy is made the first time and never overwritten after,
so the class can be stopped and started again (or the machine rebooted) without losing an answer.
Kernels find `core` and `widgets` on PYTHONPATH, since their working folder is the student's. Tokens
are kept in DIR/links.txt, so the links stay the same from one start to the next.

Every student runs code as the user who started this, on this machine: run it on an account and a
machine that hold nothing else, on the class's network only (docs/classroom.md). Terminals are off,
which keeps only the casual shell away (a notebook cell can still run `!ls`).

It prints "The exercise is ready for N students" with the links once every server answers, and
the teacher's link to the class report (serving.class_report: every student's exercise checked, the
common mistakes counted), on PORT itself with a token of its own, kept in DIR/teacher.txt. It stops
them all on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from serving.class_report import Report
from serving.class_report.server import TeacherPage
from serving.groups import signal_group
from widgets.notebooks import keep_copy

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "exercise.ipynb"
LINKS = "links.txt"
TEACHER = "teacher.txt"
# JupyterLab's settings for every served lab (make lab's LAB_OPTIONS too): no "Jupyter news?" pop-up.
LAB_SETTINGS = ROOT / "serving" / "jupyter" / "lab-settings"


def address(host: str) -> str:
    """The address students type: HOST itself, or for every interface (0.0.0.0) the one this
    machine reaches the network through."""
    if host not in ("0.0.0.0", "::", ""):
        return f"[{host}]" if ":" in host else host
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        return probe.getsockname()[0]
    return socket.gethostname()


def tokens(folder: Path, count: int) -> list[str]:
    """Each student's token: the ones already in folder/.tokens.json, new ones for new students."""
    path = folder / ".tokens.json"
    known = json.loads(path.read_text()) if path.exists() else []
    known += [secrets.token_urlsafe(16) for _ in range(count - len(known))]
    private(path, json.dumps(known))
    return known[:count]


def command(jupyter: str, root: Path, host: str, port: int, token: str, extra=()) -> list[str]:
    return [
        jupyter, "lab", "--no-browser", f"--port={port}", "--port-retries=0", f"--ServerApp.ip={host}",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
        "--ServerApp.default_url=/lab/tree/exercise.ipynb", "--ServerApp.terminals_enabled=False",
        f"--LabApp.app_settings_dir={LAB_SETTINGS}",
        *(["--allow-root"] if os.geteuid() == 0 else []), *extra,
    ]  # fmt: skip


def teacher_token(folder: Path) -> str:
    """The teacher's token for the class report: the one in folder/.teacher-token, or a new one."""
    path = folder / ".teacher-token"
    token = path.read_text().strip() if path.exists() else ""
    if not token:  # none yet, or an empty file
        token = secrets.token_urlsafe(24)
        private(path, token)
    return token


def private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by this user alone from its first byte (tokens, links)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # a file already there keeps its mode otherwise
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def environment(state: Path) -> dict[str, str]:
    """A server's environment: this one's (make's JAX settings) with the repository importable and
    JupyterLab's settings and workspaces its own, so one student's layout never shows up in another's
    (they would otherwise share ~/.jupyter/lab)."""
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else ""),
        "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(state / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces"),
    }


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).close()
        return True
    except OSError:
        return False


def _interrupt(signum, frame):
    # Once: make passes its SIGTERM on, and a teacher may press Ctrl-C twice; a second signal must
    # not cut the stopping of the servers short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--dir", type=Path, default=Path.home() / "scanlab-class")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8900, help="student N gets PORT+N")
    parser.add_argument("--jupyter", default=str(Path(sys.executable).with_name("jupyter")))
    parser.add_argument("--timeout", type=float, default=300, help="seconds for every server to answer")
    args, extra = parser.parse_known_args(argv)

    folder = args.dir.expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    shown = address(args.host)
    servers, links, logs, page = [], [], [], None
    signal.signal(signal.SIGTERM, _interrupt)  # make's SIGTERM stops the class as Ctrl-C does
    signal.signal(signal.SIGINT, _interrupt)
    try:
        for number, token in enumerate(tokens(folder, args.students), start=1):
            name = f"student-{number:02d}"
            root = folder / name
            copied = keep_copy(EXERCISE, root / "exercise.ipynb")
            state = folder / ".jupyter" / name
            port = args.port + number
            state.mkdir(parents=True, exist_ok=True)
            log = open(folder / ".jupyter" / f"{name}.log", "ab")  # noqa: SIM115 - closed at the end
            logs.append(log)
            servers.append(
                subprocess.Popen(
                    command(args.jupyter, root, args.host, port, token, extra),
                    env=environment(state),
                    cwd=root,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            links.append(f"{name}: http://{shown}:{port}/lab/tree/exercise.ipynb?token={token}")
            print(f"{name}: {'a new copy of' if copied else 'kept'} {root / 'exercise.ipynb'}", flush=True)
        private(folder / LINKS, "\n".join(links) + "\n")
        started = time.monotonic()
        # Asked where they listen: a server bound to one address does not answer on 127.0.0.1.
        probe = "127.0.0.1" if args.host in ("0.0.0.0", "::", "") else shown
        waiting = {i: f"http://{probe}:{args.port + i + 1}/api" for i in range(len(servers))}
        while waiting:
            for i, url in list(waiting.items()):
                if servers[i].poll() is not None:
                    name = f"student-{i + 1:02d}"
                    sys.exit(f"{name}'s server exited; see {folder}/.jupyter/{name}.log")
                if answers(url):
                    del waiting[i]
            if time.monotonic() - started > args.timeout:
                sys.exit(f"{len(waiting)} servers did not answer within {args.timeout:.0f} s")
            time.sleep(0.5)
        took = time.monotonic() - started
        token = teacher_token(folder)
        teacher = f"http://{shown}:{args.port}/?token={token}"
        try:
            page = TeacherPage((args.host, args.port), Report(folder), token).start()
        except OSError as exc:  # the port taken: the class goes on, the report is a command away
            teacher = f"(not served: port {args.port}: {exc}; make class-report writes it as a file)"
        private(folder / TEACHER, teacher + "\n")
        print(
            f"\nThe exercise is ready for {len(servers)} students, {took:.0f} s after the start."
            f" Give each student their link (also in {folder / LINKS}):\n" + "\n".join(links),
            flush=True,
        )
        print(
            f"\nThe class's answers, for you alone (every exercise checked each minute; also in"
            f" {folder / TEACHER}):\n{teacher}",
            flush=True,
        )
        print("Ctrl-C stops every server; the notebooks stay in " + str(folder), flush=True)
        while all(server.poll() is None for server in servers):
            time.sleep(1)
        print("A student's server exited; stopping the others.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if page is not None:
            page.shutdown()
        for server in servers:  # a server that exited was reaped above: its pid is not ours now
            signal_group(server, signal.SIGTERM)
        for server in servers:
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                signal_group(server, signal.SIGKILL)
        for log in logs:
            log.close()
        if servers:
            print(f"Stopped {len(servers)} servers.", flush=True)


if __name__ == "__main__":
    sys.exit(main())
