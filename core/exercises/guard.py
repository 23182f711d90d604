"""A tripwire for a learner's code run outside a notebook (the class report's worker): an audit hook
(sys.addaudithook) that, while `on`, refuses with a PermissionError that says so to open files
outside the learner's folder and the Python installation, to write outside the folder, to start a
program or to open a network connection. It stops honest mistakes (a path into another student's
folder, a read of the teacher's files), not an attacker: ctypes or a C extension can go around it.

It lives in the checker's package so that a refusal is told as the learner's line that asked
(core.exercises.sandbox.describe_error skips this package's frames).
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

PROCESSES = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
             "os.forkpty", "os.kill", "os.killpg", "pty.spawn", "ctypes.dlopen")  # fmt: skip
NETWORK = ("socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo")
WRITES = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.truncate",
          "os.chmod", "os.chown", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move")  # fmt: skip
READS = ("os.listdir", "os.scandir", "glob.glob", "os.chdir")


def _metadata() -> list[Path]:
    """The distributions' metadata folders (NAME.dist-info, NAME.egg-info) in sys.path's folders."""
    found = []
    for entry in filter(None, sys.path):
        try:
            names = os.listdir(entry)
        except OSError:  # not a folder (a zip), or gone
            continue
        found += [Path(entry, name) for name in names if name.endswith((".dist-info", ".egg-info"))]
    return found


class Guard:
    """The audit hook (install with sys.addaudithook(guard)): while `on`, refuses what the module's
    docstring lists, and keeps what it refused in `refused` (sentences)."""

    def __init__(self, folder: Path, readable=()):
        """`folder`: the learner's; `readable`: other folders their code may read (the checker's)."""
        self.folder = folder.resolve()
        prefixes = {
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            sys.base_exec_prefix,
            *site.getsitepackages(),
        }
        # Python reads the metadata of every distribution on sys.path (JAX looks up its plugins'
        # entry points at first use), and a checkout built or installed in place holds
        # scanlab.egg-info beside core/: those folders, and nothing else of the checkout's.
        readable = {self.folder, Path(__file__).parent, *map(Path, readable), *map(Path, prefixes)}
        readable |= set(_metadata())
        self.readable = tuple(os.path.join(os.path.realpath(p), "") for p in readable)
        # Read as written, before realpath (which makes /proc/self/... /proc/<pid>/...); /dev/null
        # may be written too.
        self.devices = ("/dev/null", "/dev/urandom", "/dev/random", "/proc/self/", f"/proc/{os.getpid()}/")
        self.on, self.refused = False, []

    def _path(self, path) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return os.path.realpath(os.path.join(os.getcwd(), os.fspath(path)))

    def _inside(self, path: str, roots) -> bool:
        return path.startswith(roots) or os.path.join(path, "") in roots

    def refuse(self, what: str):
        sentence = f"the class report lets a student's code {what}"
        self.refused.append(sentence)
        raise PermissionError(sentence)

    def __call__(self, event: str, args):
        if not self.on:
            return
        if event == "open":
            path, mode = self._path(args[0]), args[1] or "r"
            flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
            if path is None:
                return
            given = os.path.abspath(os.fsdecode(args[0]))
            if given == os.devnull or path == os.devnull:
                return
            writing = any(c in str(mode) for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            mine = os.path.join(str(self.folder), "")
            if writing and not self._inside(path, (mine,)):
                self.refuse(f"write only in its own folder, not {path}")
            device = given.startswith(self.devices) or path.startswith(self.devices)
            if not writing and not (self._inside(path, self.readable) or device):
                self.refuse(f"read only its own folder and Python's, not {path}")
        elif event in READS and args and self._path(args[0]) is not None:
            path = self._path(args[0])
            if not self._inside(path, self.readable):
                self.refuse(f"look only in its own folder, not {path}")
        elif event in WRITES:
            for path in filter(
                None, map(self._path, [a for a in args if isinstance(a, (str, bytes, os.PathLike))])
            ):
                if not self._inside(path, (os.path.join(str(self.folder), ""),)):
                    self.refuse(f"change files only in its own folder, not {path}")
        elif event.startswith(PROCESSES):
            self.refuse(f"start no other program ({event})")
        elif event in NETWORK:
            self.refuse("open no network connection")
