"""The loops panel's measurement runner: `core.timing`'s command line in a fresh Python process, on
a thread, with a timeout and a Stop, at most MEASURING_SLOTS at once on the machine (lock files).

No widgets here: the runner hands each record the process prints, and then how it ended, to the
callbacks of whoever started it (widgets.hood.loops draws them)."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

import core

MEASURING_SLOTS = 2
"""How many timing processes may run at once on this machine, over every kernel: an unrolled compile
at N = 200 takes a core and about 700 MB for 15 s, and a class pressing Measure together must not
starve everyone's sliders."""

SYNC_EVERY = (1, 10, 100, None)
"""How often the host-sync loop reads the loss: every k steps, None for only at the end."""
SYNC_N = 1000
"""The host-sync loop's number of steps."""

BUSY = "busy"
"""How a run ended that found no free slot: no process was started."""


def take_slot(folder: str | None = None):
    """An open file holding an exclusive lock on one of MEASURING_SLOTS lock files shared by every
    process on the machine, or None when all are taken. Closing the file frees the slot, and so
    does the kernel's death."""
    folder = folder or tempfile.gettempdir()
    for slot in range(MEASURING_SLOTS):
        handle = open(os.path.join(folder, f"scanlab-timing-{slot}.lock"), "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except OSError:
            handle.close()
    return None


def measurement_command(ns, *, sync: bool = True) -> list[str]:
    """The command that measures every way at `ns` (and the host syncs): `core.timing`'s command
    line in a fresh Python, so a timeout can kill it and no cache of this kernel distorts a compile."""
    arguments = ["--ways", ",".join(core.WAYS), "--ns", ",".join(str(n) for n in ns)]
    if sync:
        every = ",".join("none" if k is None else str(k) for k in SYNC_EVERY)
        arguments += ["--sync-every", every, "--sync-n", str(SYNC_N)]
    # -c rather than -m: `core` imports core.timing, and runpy warns about running a loaded module.
    return [sys.executable, "-c", "import sys; from core.timing import main; sys.exit(main())", *arguments]


class Runner:
    """One measuring process at a time, run on a thread so that the kernel's controls stay live."""

    def __init__(self):
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, command: list[str], root: str, timeout: float, on_record, on_end, slot_folder=None):
        """Run `command` in folder `root` on a new thread, for `timeout` seconds at most.

        Each JSON line the process prints goes, decoded, to `on_record(record, elapsed_s)` as it
        comes; other lines are skipped. Then `on_end(ended, elapsed_s, returncode)` is called once:
        `ended` is "finished", "stopped", "timeout", "failed (<error>)" or BUSY (every slot in
        `slot_folder`, by default the temporary folder, was taken, and nothing ran), `returncode`
        the process's (negative when killed), None when none ran. Both are called from the thread.
        """
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run,
            args=(command, root, timeout, on_record, on_end, slot_folder),
            daemon=True,
            name="loop-timing",
        )
        self._thread.start()

    def stop(self) -> None:
        """End a running measurement: its process is killed, and its records so far stay given."""
        self._stop.set()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until the running measurement has ended, or `timeout` seconds have passed."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self, command, root, timeout: float, on_record, on_end, slot_folder) -> None:
        start = time.monotonic()
        ended = "finished"
        environment = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
        environment.pop("JAX_COMPILATION_CACHE_DIR", None)
        lines: queue.Queue = queue.Queue()
        process = reader = None
        slot = take_slot(slot_folder)
        if slot is None:
            on_end(BUSY, 0.0, None)
            return
        try:
            process = subprocess.Popen(
                command,
                cwd=root,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
            reader.start()
            while True:
                if self._stop.is_set():
                    ended = "stopped"
                    break
                if time.monotonic() - start > timeout:
                    ended = "timeout"
                    break
                try:
                    line = lines.get(timeout=0.1)
                except queue.Empty:
                    continue
                if line is None:  # the process closed its output
                    break
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                on_record(record, time.monotonic() - start)
        except Exception as error:  # a measurement is a view: say so, keep the panel usable
            ended = f"failed ({type(error).__name__}: {error})"
        finally:
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.wait()
                if reader is not None:
                    reader.join(5)  # the pipe ends with the process
                process.stdout.close()
            slot.close()
            on_end(ended, time.monotonic() - start, process.returncode if process else None)


def _read_lines(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


__all__ = ["BUSY", "MEASURING_SLOTS", "SYNC_EVERY", "SYNC_N", "Runner", "measurement_command", "take_slot"]
