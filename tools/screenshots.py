"""The README's pictures, taken from the running dashboard: `make screenshots`.

Starts `make run` on a free port (harness.server.Server), opens each view in Debian's Chromium at its
size, waits until every chart has drawn and the page is still, and writes docs/<name>.png: what a
visitor sees on the first screen, not the whole page. `screenshot-explore` is a notebook's instead:
`explore(fn)` of a wrong loop in JupyterLab (`make lab-env` installs it), the view alone.

  python -m tools.screenshots            all of them
  python -m tools.screenshots screenshot-phone      one of them (names: VIEWS, EXPLORE)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.server import Server
from harness.support.lab import ACCUMULATED, lab, notebook_text, open_notebook, run_all

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

# explore(fn) in JupyterLab: a loop with the first exercise's best-known mistake, drawn beside the
# lesson's (the picture of the README's "Your own loop, drawn").
EXPLORE = ("screenshot-explore", (1440, 900))
EXPLORE_CELLS = [ACCUMULATED + "\nfrom widgets import explore", "explore(scan_training_step)"]

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


def take_explore(browser) -> Path:
    """docs/screenshot-explore.png: `explore(fn)`'s view of a wrong loop, in JupyterLab."""
    name, (width, height) = EXPLORE
    with tempfile.TemporaryDirectory() as folder, lab(Path(folder)) as url:
        (Path(folder) / "explore.ipynb").write_text(notebook_text(EXPLORE_CELLS))
        context, page, _ = open_notebook(browser, url, "explore.ipynb")
        try:
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_function(
                "() => jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
                timeout=120_000,
            )
            run_all(page, {})
            page.wait_for_function(
                "() => document.querySelector('.scanlab-parting')?.textContent.includes('They part')",
                timeout=120_000,
            )
            view = page.locator(".jp-OutputArea-output", has=page.locator(".scanlab-parting")).first
            view.scroll_into_view_if_needed()
            page.wait_for_timeout(2000)
            path = ROOT / "docs" / f"{name}.png"
            view.screenshot(path=str(path))
            return path
        finally:
            context.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of {', '.join(VIEWS)}; all when none")
    every = [*VIEWS, EXPLORE[0]]
    names = parser.parse_args(argv).names or every
    unknown = sorted(set(names) - set(every))
    if unknown:
        parser.error(f"NAME must be one of {', '.join(every)}; got {', '.join(unknown)}")
    served = [name for name in names if name in VIEWS]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            if served:
                with Server() as server:
                    for name in served:
                        print(take(browser, server.url, name).relative_to(ROOT))
            if EXPLORE[0] in names:
                print(take_explore(browser).relative_to(ROOT))
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
