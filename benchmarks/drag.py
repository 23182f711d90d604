"""A drag of a slider's handle, as a hand makes it, against a bare ipywidgets echo on the same server.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.drag [--controls lr N w0] [--drags 3] [--json PATH]

The mouse goes down on the handle and moves it across the slider over `--seconds` (default 2 s) in
small steps at about 60 per second, then goes up: on the echo page (benchmarks/echo.ipynb, a slider
whose kernel-side observer copies its value into a label) and on the explorer's slider of each
control. The pages count, from the mouse going down, every distinct change they paint (drag.js): the
echo's label text, and the run the explorer's trajectory chart draws, read at each of Plotly's
drawing events (two events of one move, a relayout's and an animate's, count once). Printed per
control, median over the drags:

- redraws per second while the handle moves, the explorer's against the echo's label (issue 35's
  target: at least 0.5x);
- settling: from the mouse going up to the last change painted, each page (the target: the
  explorer's within 100 ms of the echo's).

Both pages are served by `make run` through benchmarks.browser's server (the repository directory),
one page at a time, each in a fresh browser context at 1280x900. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from benchmarks.browser import APP, ECHO, serving
from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.js import call
from harness.stats import summary

HERE = Path(__file__).resolve().parent
VIEWPORT = {"width": 1280, "height": 900}
STEP_S = 1 / 60  # a mouse event per frame, as a hand's drag gives them
SETTLE_S = 3.0  # wait after the mouse goes up for the last change
# Where each control's drag starts and ends, as fractions of its slider's width: lr from 0.001 across
# to about 0.1, N from 100 to about 600, w0 from 0 to about 8.
SPANS = {"lr": (0.25, 0.75), "N": (0.1, 0.6), "w0": (0.5, 0.9), "B": (0.05, 0.5)}


def _slider(page, label: str):
    slider = page.locator(".widget-slider").filter(
        has=page.locator("label", has_text=re.compile(f"^{re.escape(label)}$"))
    )
    if slider.count() != 1:
        raise SystemExit(f"expected one slider labelled {label!r}, found {slider.count()}")
    return slider


def _drag(page, slider, span: tuple[float, float], seconds: float) -> float:
    """Drag the slider's handle from `span[0]` to `span[1]` of its track; returns the time (page
    clock, ms) the mouse went up."""
    track = slider.locator(".noUi-target, .slider-container").first.bounding_box()
    handle = slider.locator(".noUi-handle").bounding_box()
    y = handle["y"] + handle["height"] / 2
    start, end = (track["x"] + track["width"] * f for f in span)
    # To the start first (a click there moves the handle), then settle before the drag proper.
    page.mouse.move(handle["x"] + handle["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(start, y, steps=5)
    page.mouse.up()
    time.sleep(SETTLE_S)
    page.evaluate("() => window.__drag.arm()")
    page.mouse.move(start, y)
    page.mouse.down()
    steps = max(2, round(seconds / STEP_S))
    began = time.perf_counter()
    for i in range(1, steps + 1):
        page.mouse.move(start + (end - start) * i / steps, y)
        pause = began + i * STEP_S - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    page.mouse.up()
    up = page.evaluate("() => performance.now()")
    time.sleep(SETTLE_S)
    return up


def measure(browser, url: str, label: str, kind: str, span, seconds: float) -> dict:
    """One drag on a fresh page: {"rate": changes per second while moving, "settle": ms from the
    mouse going up to the last change painted, "changes": how many}."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(call(HERE / "drag.js", {"kind": kind}))
    page = context.new_page()
    try:
        page.goto(url, timeout=60_000)
        if kind == "echo":
            page.wait_for_selector(".echo", timeout=90_000)
        else:
            page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 6", timeout=90_000
            )
        time.sleep(2.0)  # the map from its worker, the page at rest
        slider = _slider(page, label)
        up = _drag(page, slider, span, seconds)
        changes = page.evaluate("() => window.__drag.changes()")  # [{t, value}] in page ms
        down = page.evaluate("() => window.__drag.downAt()")
        moving = [c for c in changes if down <= c["t"] <= up]
        last = max((c["t"] for c in changes), default=up)
        return {
            "rate": len(moving) / ((up - down) / 1000) if up > down else 0.0,
            "settle": last - up,
            "changes": len(changes),
        }
    finally:
        context.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--controls", nargs="+", default=["lr", "N", "w0"], choices=sorted(SPANS))
    parser.add_argument("--drags", type=int, default=3, help="drags per control and page (default 3)")
    parser.add_argument("--seconds", type=float, default=2.0, help="how long a drag takes (default 2)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = {"seconds": args.seconds, "drags": args.drags, "controls": {}}
    with serving([], 240) as (server, _), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            print(f"a {args.seconds:g} s drag, {args.drags} per control and page: median (each drag)")
            for control in args.controls:
                runs = {"echo": [], "explorer": []}
                for _ in range(args.drags):
                    for kind, url, label in (
                        ("echo", server.url + ECHO, "echo"),
                        ("explorer", server.url + APP, control),
                    ):
                        runs[kind].append(measure(browser, url, label, kind, SPANS[control], args.seconds))
                        print(f"  {control} {kind}: {runs[kind][-1]}", file=sys.stderr)
                figures = {
                    kind: {key: summary([r[key] for r in drags])["median"] for key in ("rate", "settle")}
                    for kind, drags in runs.items()
                }
                rate = (
                    figures["explorer"]["rate"] / figures["echo"]["rate"] if figures["echo"]["rate"] else 0.0
                )
                late = figures["explorer"]["settle"] - figures["echo"]["settle"]
                mine, echo = figures["explorer"], figures["echo"]
                print(
                    f"  {control:>3}: redraws {mine['rate']:5.1f}/s against the echo's {echo['rate']:5.1f}/s "
                    f"({rate:.2f}x); settled {mine['settle']:.0f} ms after the mouse went up, the echo "
                    f"{echo['settle']:.0f} ms ({late:+.0f} ms)"
                )
                results["controls"][control] = {
                    "runs": runs,
                    **figures,
                    "rate_ratio": rate,
                    "settle_late_ms": late,
                }
        finally:
            browser.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
