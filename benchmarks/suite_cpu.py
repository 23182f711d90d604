"""Where the suite's CPU goes: a pytest plugin that writes each test's CPU seconds, and a report.

    PYTEST_ADDOPTS="-p benchmarks.suite_cpu" make test      # writes .cache/suite-cpu/<worker>.jsonl
    .venv/bin/python -m benchmarks.suite_cpu [FOLDER]       # modules and test functions by CPU

On two cores `make test` is CPU-bound (docs/testing.md), so its wall time falls only with its CPU,
and the CPU of a page test is mostly not pytest's: Chromium's renderer, the kernel, Voila. A test's
CPU here is that of its worker's whole process tree over the test (setup and teardown included):
each live process's user and system time plus what it has reaped of its children, summed at the
test's start and end. A process that ends without being reaped inside the tree (an orphaned kernel)
takes its time with it, so a module's last test can come out below zero; the sum came within a
tenth of make's own user and system time (docs/testing.md).
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parent.parent / ".cache" / "suite-cpu"

_out = None


def tree_cpu() -> float:
    """CPU seconds of this process and every live descendant, with what each has reaped."""
    import psutil

    me = psutil.Process()
    try:
        processes = [me, *me.children(recursive=True)]
    except psutil.Error:
        processes = [me]
    total = 0.0
    for process in processes:
        try:
            t = process.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _folder() -> Path:
    return Path(os.environ.get("SUITE_CPU_DIR", FOLDER))


def pytest_configure(config):  # noqa: ARG001 - pytest's signature
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the run's first process: no older run's workers
        for old in _folder().glob("*.jsonl"):
            old.unlink()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001 - pytest's signature
    global _out
    if _out is None:
        folder = _folder()
        folder.mkdir(parents=True, exist_ok=True)
        _out = (folder / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl").open("w")
    cpu, wall = tree_cpu(), time.monotonic()
    yield
    line = {"id": item.nodeid, "cpu": round(tree_cpu() - cpu, 2), "wall": round(time.monotonic() - wall, 2)}
    _out.write(json.dumps(line) + "\n")
    _out.flush()


def pytest_sessionfinish(session):  # noqa: ARG001 - pytest's signature
    if _out is not None:
        _out.close()


def report(folder: Path, top: int = 25) -> str:
    """Modules, then test functions (their parameters together), by CPU seconds, with wall seconds."""
    rows = [
        json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()
    ]
    if not rows:
        raise SystemExit(f"no tests recorded in {folder}: run the suite with -p benchmarks.suite_cpu")
    cpu, wall = sum(r["cpu"] for r in rows), sum(r["wall"] for r in rows)
    lines = [f"{len(rows)} tests: {cpu:.0f} CPU s, {wall:.0f} s of wall"]
    for title, key in (("module", lambda i: i.split("::")[0]), ("function", lambda i: i.split("[")[0])):
        cpu, wall, count = collections.Counter(), collections.Counter(), collections.Counter()
        for r in rows:
            cpu[key(r["id"])] += r["cpu"]
            wall[key(r["id"])] += r["wall"]
            count[key(r["id"])] += 1
        lines += ["", f"{'CPU s':>7} {'wall s':>7} {'tests':>5}  {title}"]
        lines += [f"{c:7.1f} {wall[k]:7.1f} {count[k]:5d}  {k}" for k, c in cpu.most_common(top)]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER))
