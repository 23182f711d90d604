"""The served dashboard: `make run PORT=<free port>` in its own process group, as the README says to
serve it, for the tests and the benchmarks alike.

    with Server(args=["MAX_KERNELS=2"], log=path) as server:  # ready: Voila answers
        urllib.request.urlopen(server.url)

`Server` starts make at once; `wait_ready` (or `with`) waits until Voila answers. `stop` sends SIGTERM
to the group (make and voila; Voila then shuts its kernels down), SIGKILL after a timeout, and kills
by pid whatever of its kernels is left: jupyter_client starts each kernel in a session of its own, out
of the group's reach. `free_port`, `wait_until_answers` and `stop_group` serve other servers started
the same way (JupyterLab, the hub's server extension).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from serving.groups import signal_group

ROOT = Path(__file__).resolve().parent.parent


# Voila serves a page in about 100 MB. Once, in CI under the faults tests (2026-12-07), one grew to
# 18 GB before the kernel's OOM killer ended it, taking the memory of every other test's processes.
# Past this, a Server stops its voila with SIGABRT, which Python's faulthandler (PYTHONFAULTHANDLER)
# answers with every thread's stack in the log, and `stop` raises with them: where it grew.
VOILA_MEMORY = 3 << 30
WATCH_S = 2.0


class ServerError(RuntimeError):
    """A server that exited, or did not answer in time (with the end of its log, when it has one)."""


def free_port() -> int:
    """A loopback TCP port free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(count: int) -> int:
    """A loopback port PORT with PORT..PORT+count all free now, below the kernel's ephemeral range
    (32768 and up here), where `free_port` and every kernel's own ports are drawn: a class's
    servers take PORT+1..PORT+count, and a run of ephemeral ports could be taken between this
    check and their start by any other process (seen under xdist: "port already in use")."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20000, 32000 - count)
        try:
            with contextlib.ExitStack() as stack:
                for port in range(base, base + count + 1):
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count + 1} consecutive free ports between 20000 and 32000")


def is_kernel(cmdline: list[str]) -> bool:
    """Whether a process's command line is a kernel's: make run's (serving/dashboard_kernel.py, from
    serving/kernelspecs) or the stock one's (`python -m ipykernel_launcher`)."""
    line = " ".join(cmdline)
    return "dashboard_kernel.py" in line or "ipykernel_launcher" in line


def stop_group(process: subprocess.Popen, pids=(), timeout: float = 30.0) -> None:
    """Stop a server started with start_new_session: SIGTERM to its process group, SIGKILL after
    `timeout` (nothing to a group whose leader was already reaped). Then each kernel among `pids`
    (processes seen under it) that is still running 10 s later is killed: jupyter_client starts
    each kernel in a session of its own, out of the group's reach, and a server that was killed
    leaves its kernels behind."""
    import psutil

    signal_group(process, signal.SIGTERM)  # not once it is reaped: serving/groups.py says why
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        signal_group(process, signal.SIGKILL)
        process.wait(timeout=10)
    deadline = time.monotonic() + 10
    for pid in sorted(pids):
        with contextlib.suppress(psutil.NoSuchProcess):
            kernel = psutil.Process(pid)
            if not is_kernel(kernel.cmdline()):
                continue
            with contextlib.suppress(psutil.TimeoutExpired):
                kernel.wait(max(deadline - time.monotonic(), 0.1))
                continue
            kernel.kill()


def wait_until_answers(url: str, process: subprocess.Popen, timeout: float, what: str, log=None) -> None:
    """Poll `url` until it answers; ServerError naming `what` if `process` exits first or `timeout`
    seconds pass, with the end of `log()` (a str) when given."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except OSError:
            if process.poll() is not None:
                problem = f"{what} exited with {process.returncode}"
            elif time.monotonic() > deadline:
                problem = f"{what} did not answer {url} in {timeout:.0f} s"
            else:
                time.sleep(0.5)
                continue
        raise ServerError(problem + (f":\n{log()}" if log else "")) from None


class Server:
    """`make run PORT=<free port> ARGS...` from the repository root, its output in `log` (if given).

    `env` adds to make's environment (e.g. XLA_FLAGS), `args` to its command line (MAX_KERNELS=2,
    BIN=... for another python); voila is stopped past `memory` bytes resident (VOILA_MEMORY, looked
    at every WATCH_S; `peak_rss` the most seen).
    `url` ends with "/". `kernels()` lists its kernel processes (psutil), `voila()` the voila
    process; `log_text()` is Voila's output so far."""

    def __init__(
        self,
        *,
        env: dict | None = None,
        args: list[str] = (),
        log: Path | None = None,
        memory: int = VOILA_MEMORY,
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = log
        self._log = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"PORT={self.port}", *args],
            cwd=ROOT,
            env={**os.environ, "PYTHONFAULTHANDLER": "1", **(env or {})},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # make and voila share the group: one signal stops both
        )
        self._seen: set[int] = set()
        self.runaway = ""  # what the memory watch saw, once it stopped voila
        self.peak_rss = 0  # the most voila held at one of the watch's looks (bytes)
        self._stopping = threading.Event()
        self._watch = threading.Thread(
            target=self._watch_memory, args=(memory,), daemon=True, name="voila-memory"
        )
        self._watch.start()

    def _watch_memory(self, memory: int) -> None:
        import psutil

        while not self._stopping.wait(WATCH_S):
            if self.process.returncode is not None:  # make reaped: its pid may be a stranger's now
                return
            with contextlib.suppress(psutil.Error, AttributeError):
                voila = self.voila()
                rss = voila.memory_info().rss
                self.peak_rss = max(self.peak_rss, rss)
                if rss > memory:
                    voila.send_signal(signal.SIGABRT)
                    # A SIGTERM to the group before voila has run faulthandler's handler kills it
                    # with no stacks written (seen in CI on a loaded machine): stop() waits for this.
                    with contextlib.suppress(psutil.TimeoutExpired):
                        voila.wait(timeout=30)
                    self.runaway = (
                        f"voila grew to {rss >> 20} MB (over {memory >> 20} MB) and was stopped with"
                        " SIGABRT; its threads' stacks, when it had a log, are at the end of it"
                    )
                    return

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Until Voila answers (its static file; the page itself would claim a kernel)."""
        wait_until_answers(
            self.url + "voila/static/voila.js", self.process, timeout, "make run", self.log_tail
        )

    def log_text(self) -> str:
        """What make and Voila have written so far ("" without a log)."""
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def log_tail(self, n: int = 3000) -> str:
        """The last `n` characters of the log, colours stripped."""
        return re.sub(r"\x1b\[[0-9;]*m", "", self.log_text())[-n:]

    def _tree(self) -> list:
        """make and every process under it (psutil.Process); the kernels among them remembered."""
        import psutil

        try:
            processes = [psutil.Process(self.process.pid)]
            processes += processes[0].children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        for p in processes:
            with contextlib.suppress(psutil.Error):
                if is_kernel(p.cmdline()):
                    self._seen.add(p.pid)
        return processes

    def voila(self):
        """The voila process under make (psutil.Process), or None."""
        import psutil

        for child in self._tree()[1:]:
            with contextlib.suppress(psutil.Error):
                if any("voila" in part for part in child.cmdline()[:3]):
                    return child
        return None

    def kernels(self) -> list:
        """The server's kernel processes (psutil.Process), the preheated pool's included."""
        import psutil

        found = []
        for child in self._tree()[1:]:
            with contextlib.suppress(psutil.Error):
                if is_kernel(child.cmdline()):
                    found.append(child)
        return found

    def pool_ready(self) -> bool:
        """Whether the preheated kernel has reached `wait_for_request` (its CPU has gone quiet)."""
        kernels = self.kernels()
        return bool(kernels) and all(k.cpu_percent(interval=0.5) < 5 for k in kernels)

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) used so far by make, voila and the kernels running now."""
        import psutil

        total = 0.0
        for p in self._tree():
            with contextlib.suppress(psutil.NoSuchProcess):
                times = p.cpu_times()
                total += times.user + times.system
        return total

    def wait_idle(self, timeout: float, *, at_least: float = 1.5, window: float = 1.0, cores: float = 0.1):
        """Until the server and its kernels have used under `cores` of a CPU for `window` seconds
        (a preheated pool refilled); ServerError after `timeout` seconds."""
        time.sleep(at_least)
        deadline = time.monotonic() + timeout
        last, since = self.cpu_seconds(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.25)
            now, used = time.monotonic(), self.cpu_seconds()
            if used - last > cores * (now - since) + 0.02:
                last, since = used, now
            elif now - since >= window:
                return
        raise ServerError(f"the server never went idle within {timeout:.0f} s")

    def stop(self, timeout: float = 30.0) -> None:
        """Stop make, voila and the kernels; ServerError if the memory watch had to stop voila."""
        self._stopping.set()
        self._watch.join(timeout=40)  # a voila it has just signalled writes its stacks first
        self._tree()  # remember the kernels: once voila is gone they are orphans
        stop_group(self.process, self._seen, timeout)
        if self._log is not subprocess.DEVNULL:
            self._log.close()
        if self.runaway:
            raise ServerError(f"{self.runaway}:\n{self.log_tail(8000)}")

    def __enter__(self) -> Server:
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
