"""`python -m serving.class_report` (`make class-report`): check the class's notebooks once, print the
table and write report.json, report.csv, report.html and gradescope/<student>/results.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.exercises.report import DEFAULT_TIMEOUT
from core.exercises.tasks import TASKS
from serving.class_report import MEMORY, Report, cell_text, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving.class_report", description=__doc__)
    parser.add_argument("--dir", type=Path, help="the class's folder, as make class makes it (student-NN/)")
    parser.add_argument("--collected", type=Path, help="a folder of collected notebooks (NAME.ipynb)")
    parser.add_argument("--out", type=Path, help="where to write the files (default: DIR/report)")
    parser.add_argument("--workers", type=int, help="notebooks checked at once (default: the cores)")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per check and per cell"
    )
    parser.add_argument(
        "--memory", type=float, default=MEMORY / 2**30, help="GiB of address space per notebook"
    )
    args = parser.parse_args(argv)
    if args.dir is None and args.collected is None:
        parser.error("give --dir (the class's folder) or --collected (a folder of notebooks)")
    if args.timeout <= 0 or args.memory <= 0 or (args.workers is not None and args.workers < 1):
        parser.error("--timeout, --memory and --workers must be positive")
    try:
        report = Report(
            args.dir, args.collected, args.workers, timeout=args.timeout, memory=int(args.memory * 2**30)
        )
        report.update()
    except NotADirectoryError as exc:
        parser.error(str(exc))
    out = args.out or (args.dir or args.collected).expanduser() / "report"
    written = write(report, out)
    width = max([len("student"), *(len(name) for name in report.rows)])
    print("student".ljust(width), *TASKS, sep="  ")
    for row in report.rows.values():
        print(row.student.ljust(width), *(cell_text(row.cells[t]).ljust(len(t)) for t in TASKS), sep="  ")
    print(
        f"\n{len(report.rows)} notebooks checked in {report.seconds:.1f} s. Written: {out}/report.html,"
        f" report.csv, report.json and {len(written) - 3} Gradescope results.json under {out}/gradescope."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
