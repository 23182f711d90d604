"""The README's pictures, taken from the running dashboard: `make screenshots`.

Starts `make run` on a free port (harness.server.Server), opens each view in Debian's Chromium at its
size, waits until every chart has drawn and the page is still, and writes docs/<name>.png: what a
visitor sees on the first screen, not the whole page.

  python -m tools.screenshots            all of them
  python -m tools.screenshots phone      one of them (names: VIEWS)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.server import Server

ROOT = Path(__file__).resolve().parent.parent

# name -> (the page's query, the window's width and height, a phone's touch and scaling, and the
# title a chart's starts with to take that chart alone, None for the first screen)
VIEWS = {
    "screenshot": ("", (1440, 900), False, None),
    "screenshot-projector": ("?view=projector", (1024, 768), False, None),
    "screenshot-phone": ("", (390, 844), True, None),
    "screenshot-diverging": ("?preset=diverging", (1440, 900), False, None),
    "screenshot-valley": ("?preset=narrow-valley", (1440, 900), False, "Loss landscape: the steps on L(w"),
    "screenshot-valley-projector": ("?view=projector&preset=narrow-valley", (1024, 768), False, None),
}

# Every chart drawn (the five line charts and the map), and no chart waiting for its box's width.
_DRAWN = """() => {
    const charts = [...document.querySelectorAll('.js-plotly-plot')];
    return charts.length >= 6 && charts.every(gd => gd.querySelector('.main-svg'));
}"""


def take(browser, url: str, name: str) -> Path:
    """docs/<name>.png of the view VIEWS[name] at `url` (the server's root)."""
    query, (width, height), phone, chart = VIEWS[name]
    context = browser.new_context(
        viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone, device_scale_factor=1
    )
    try:
        page = context.new_page()
        page.goto(url + query, timeout=60_000)
        page.wait_for_function(_DRAWN, timeout=90_000, polling=200)
        # The map comes from a worker thread after the line charts; a resize redraw may follow.
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(2000)
        path = ROOT / "docs" / f"{name}.png"
        if chart is None:
            page.screenshot(path=str(path))
        else:  # below the first screen: the chart alone, scrolled to
            page.locator(".js-plotly-plot", has_text=chart).first.screenshot(path=str(path))
        return path
    finally:
        context.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of {', '.join(VIEWS)}; all when none")
    names = parser.parse_args(argv).names or list(VIEWS)
    unknown = sorted(set(names) - set(VIEWS))
    if unknown:
        parser.error(f"NAME must be one of {', '.join(VIEWS)}; got {', '.join(unknown)}")
    with Server() as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for name in names:
                print(take(browser, server.url, name).relative_to(ROOT))
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
