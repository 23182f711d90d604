"""The Makefile as the tests read it: `dry_run` lists the commands `make -n ARGS` would run, and READY
is the line `make run` logs once every preheated kernel waits for its visitor (serving/kernels.py)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

READY = re.compile(r"The dashboard is ready for (\d+) visitors? at (\S+):")


def dry_run(*args: str) -> list[str]:
    """The commands `make -n ARGS` would run, one per line."""
    done = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()
