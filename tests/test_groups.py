"""serving/groups.py: a process group is signalled while its leader is ours, never after it was
reaped (its pid, and so the group's id, may be a stranger's by then)."""

import os
import signal
import subprocess
import sys
import time

import psutil

from serving.groups import signal_group


def _leader(seconds: float) -> subprocess.Popen:
    command = [sys.executable, "-c", f"import time; time.sleep({seconds})"]
    return subprocess.Popen(command, start_new_session=True)


def test_a_running_leader_and_its_group_get_the_signal():
    process = _leader(60)
    assert signal_group(process, signal.SIGTERM)
    assert process.wait(10) == -signal.SIGTERM


def test_a_reaped_leader_gets_nothing_sent():
    process = _leader(0)
    process.wait(10)
    assert not signal_group(process, signal.SIGKILL)


def test_a_leader_ended_but_not_reaped_still_has_its_group_signalled():
    # make ended, voila still running in its group: the group is still ours until make is reaped.
    sleeper = "[sys.executable, '-c', 'import time; time.sleep(60)']"
    child = f"import subprocess, sys; print(subprocess.Popen({sleeper}).pid)"
    process = subprocess.Popen(
        [sys.executable, "-c", child], stdout=subprocess.PIPE, start_new_session=True, text=True
    )
    member = psutil.Process(int(process.stdout.readline()))
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # ended, left unreaped
    assert signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and member.is_running() and member.status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.05)
    assert not member.is_running() or member.status() == psutil.STATUS_ZOMBIE
    process.wait(10)
    process.stdout.close()
