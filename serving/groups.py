"""A signal to the process group a child leads, never to a stranger's.

A child started with `start_new_session=True` leads a group whose id is its pid. Once the child has
been reaped (Popen.poll or wait saw it end), that pid is free: Linux hands it to a new process, and
with pid_max at 32768 (a common default) and a test suite or a class's report forking tens of
thousands, the next process to lead a group under that id can be anyone's. So the group is
signalled only while its leader is still ours: running, or ended and not yet reaped.
"""

from __future__ import annotations

import contextlib
import os
import subprocess


def signal_group(process: subprocess.Popen, sign: int) -> bool:
    """Send `sign` to the group `process` leads if it has not been reaped; whether it was sent.
    Not `poll()`: it would reap a leader that has just ended, and its group's other members (a
    server's children) would go unsignalled."""
    if process.returncode is not None:  # set when reaped
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sign)
    return True
