"""The class report's time for a class: 30 students' notebooks (harness.support.class_notebooks:
right, wrong in every named way, broken in each way a class breaks them) checked by
serving.class_report with its defaults (the checker's 10 s per check and per cell, 4 GiB each, as
many workers as cores), then checked again with nothing changed.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.class_report [--students 30] [--rounds 3]

Target (issue 54): <= 60 s for 30 students on this project's 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path

from harness.support.class_notebooks import build
from serving.class_report import Report

TARGET_S = 60.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="fresh classes checked, one after another")
    args = parser.parse_args(argv)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} cores")
    totals = []
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory() as folder:
            build(Path(folder), args.students)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            report = Report(Path(folder)).update()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            seconds = sorted(row.seconds for row in report.rows.values())
            took = report.seconds
            again = report.update().seconds
        totals.append(took)
        print(
            f"round {round_ + 1}: {len(report.rows)} notebooks in {took:.1f} s with"
            f" {report.workers} workers (CPU {cpu:.0f} s); a notebook p50"
            f" {statistics.median(seconds):.1f} s, max {seconds[-1]:.1f} s;"
            f" again, nothing changed: {again:.2f} s"
        )
    worst = max(totals)
    median = statistics.median(totals)
    verdict = "met" if worst <= TARGET_S else "NOT met"
    print(f"class report, {args.students} students: median {median:.1f} s, worst {worst:.1f} s", end="")
    print(f" (target <= {TARGET_S:g} s): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
