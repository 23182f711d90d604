"""serving/groups.py: a process group is signalled while its leader is ours, never after it was
reaped (its pid, and so the group's id, may be a stranger's by then)."""

import signal
import subprocess
import sys

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
