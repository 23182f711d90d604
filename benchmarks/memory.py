"""Memory of dashboard kernels: `make run` on a free port, pages opened in headless Chromium at
N = 1000, B = 512, then every kernel's RSS, its anonymous (private, heap) part, and its PSS (shared
pages split between the processes that map them) from /proc/PID/smaps_rollup. Prints figures; asserts
nothing.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.memory [--pages 3] [--json PATH]

Kernels are the kernel processes under this server (`harness.server.Server.kernels`), including the
preheated one waiting in the pool for the next visitor. It starts its own `make run` (one notebook, as
a class gets it): benchmarks.browser's server serves the whole folder, where Voila preheats a kernel
for every notebook.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.server import Server

QUERY = "?N=1000&B=512&lr=0.001"


def rollup(pid: int) -> dict:
    """A process's RSS, PSS and anonymous memory in MB, from /proc/PID/smaps_rollup (OSError when
    the process is gone)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0]) / 1024
    return {"rss": fields["Rss"], "pss": fields["Pss"], "anonymous": fields["Anonymous"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3, help="dashboard pages to open (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    with Server() as server:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            pages = []
            for _ in range(args.pages):
                page = browser.new_page()
                page.goto(server.url + QUERY, timeout=120_000)
                page.wait_for_function(
                    "() => document.querySelectorAll('.js-plotly-plot .scatterlayer .trace').length > 0",
                    timeout=120_000,
                )
                pages.append(page)
                time.sleep(4)  # the pool refills: its next kernel warms up
            time.sleep(6)
            kernels = {p.pid: rollup(p.pid) for p in server.kernels()}
            browser.close()
    print(f"{len(kernels)} kernels ({args.pages} pages open at {QUERY[1:]}, and the preheated pool):")
    print("     pid     RSS MB   anonymous MB   PSS MB")
    for pid, m in sorted(kernels.items()):
        print(f"  {pid:>6} {m['rss']:10.0f} {m['anonymous']:14.0f} {m['pss']:8.0f}")
    if kernels:
        total_pss = sum(m["pss"] for m in kernels.values())
        print(f"  total PSS of the kernels: {total_pss:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps({"pages": args.pages, "kernels": list(kernels.values())}, indent=1))


if __name__ == "__main__":
    main()
