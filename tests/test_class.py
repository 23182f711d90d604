"""A class arriving at once: several students, each in a Chromium of their own, open the dashboard
together and type new values; every chart on every page must draw its own kernel's current run.

Pages built together on a 2-core machine are slow to build: the charts' front end loads while the
kernels, the server and the other browsers share the CPU. That is when charts stopped following
the controls while the status line did (the stale-charts race: anywidget refused every message to a
chart whose code took more than 2 s to load; a chart's state is now its whole figure,
widgets/surface.py, and anywidget stays below 0.9.17, which gives up on such a model for good and
logs "[anywidget] Failed to initialize model.", which fails the test); a page opened alone never
showed it. Each page is a browser process of its own, as each student's is: pages of one browser
share its main threads, and a page that is not in front does not draw at all.

After the first page and after each move, every page's charts must come to hold exactly what the
explorer computes for the settings that page's share link names, and its status line must describe
the same run (harness.pages). A chart that keeps an older run fails the test.

A page must also have every output: Voila renders a cell's outputs from the messages its kernel
sends within nbclient's IOPub timeout, and at its default of 4 s a class on two cores lost the
controls or the first charts of about one page in two runs (the log's "Timeout waiting for IOPub
output"; voila.json sets 60 s). A missing panel fails the first move; the log is read too.
"""

from __future__ import annotations

import asyncio
import re
import time

from playwright.async_api import TimeoutError as PlaywrightTimeout

from harness.pages import settled
from harness.support.make import READY
from widgets.model import Model

STUDENTS = 6
MOVES = [("lr", "0.0051"), ("N", "40"), ("B", "3"), ("w0", "-1.5")]  # typed into each readout
GAVE_UP = "[anywidget] Failed to initialize model"
SETTLE_S = 30  # a page whose charts have not caught up by then is behind


# What a page holds when its charts did not come: its title, its charts (drawn, or the width of the
# box they wait for), its cells, the outputs Voila's app has not rendered and the stills still up,
# whether that app has started, and the first and last words of its text (a busy page, a dead
# kernel's notice, an output's error).
PAGE_HELD = """() => ({
  title: document.title,
  charts: [...document.querySelectorAll('.scanlab-chart')].map((c) =>
    c.classList.contains('js-plotly-plot') ? 'drawn' : `waiting (width ${c.clientWidth})`),
  cells: document.querySelectorAll('.jp-Cell').length,
  unrendered: document.querySelectorAll('script[type="application/vnd.voila.cell-output+json"]').length,
  stills: document.querySelectorAll('.scanlab-still').length,
  shell: Boolean(document.querySelector('.jp-LabShell')),
  end: document.body ? document.body.innerText.replace(/\\s+/g, ' ').slice(-600) : '',
  text: document.body ? document.body.innerText.replace(/\\s+/g, ' ').slice(0, 300) : '',
})"""


async def page_held(page) -> str:
    try:
        return str(await page.evaluate(PAGE_HELD))
    except Exception as error:  # a page that cannot even be read says so
        return f"the page could not be read ({error})"


async def student(playwright, chromium: dict, url: str, model: Model, number: int) -> list[str]:
    """One student's visit: open the page, make every move, and say what went wrong (nothing: []).
    `model` is this student's own (harness.pages: it computes the page's runs in its order)."""
    browser = await playwright.chromium.launch(**chromium)
    problems = []
    try:
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        # anywidget's word that it gave up on a model (docs/design.md, "anywidget below 0.9.17").
        page.on("console", lambda m: m.type == "error" and GAVE_UP in m.text and errors.append(m.text))
        await page.goto(url, timeout=300_000, wait_until="commit")
        try:
            await page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot').length >= 6", timeout=300_000, polling=250
            )
        except PlaywrightTimeout:
            # Say what the page held instead, so that a failure can be told apart from a slow machine.
            held = await page_held(page)
            problems.append(f"student {number}, the first page: no 6 charts after 300 s; {held}")
            return problems + [f"student {number}: {error}" for error in errors]
        wrong, _ = await settled(page, model, lambda settings: True, SETTLE_S)
        if wrong:
            problems.append(f"student {number}, the first page: {wrong}")
        for name, value in MOVES:
            slider = page.locator(".widget-slider").filter(
                has=page.locator("label", has_text=re.compile(f"^{re.escape(name)}$"))
            )
            readout = slider.locator(".widget-readout")
            await readout.fill(value, timeout=120_000)
            await readout.press("Enter")

            def moved(settings, name=name, value=value):
                return getattr(settings, name) == float(value)

            wrong, _ = await settled(page, model, moved, SETTLE_S)
            if wrong:
                problems.append(f"student {number}, {name} = {value}: {wrong}")
        problems += [f"student {number}: {error}" for error in errors]
    finally:
        await browser.close()
    return problems


def test_every_page_of_a_class_arriving_at_once_draws_its_own_run(make_run, chromium, tmp_path):
    from playwright.async_api import async_playwright

    models = [Model() for _ in range(STUDENTS)]

    async def visit(url):
        async with async_playwright() as playwright:
            students = (student(playwright, chromium, url, models[i], i) for i in range(STUDENTS))
            return await asyncio.gather(*students)

    # A kernel per student, the preheated one and its refill. The class arrives when make run says
    # the preheated kernel is ready: it has compiled the engine into JAX's cache (a fresh clone has
    # none, and seven kernels compiling it at once on two cores kept pages from answering for minutes).
    log = tmp_path / "voila.log"
    with make_run(args=[f"MAX_KERNELS={STUDENTS + 2}"], log=log) as server:
        deadline = time.monotonic() + 300
        while not READY.search(server.log_text()) and time.monotonic() < deadline:
            time.sleep(0.5)
        ready = bool(READY.search(server.log_text()))
        found = asyncio.run(visit(server.url))
    text = log.read_text(errors="replace")
    lost = text.count("Timeout waiting for IOPub output")
    assert lost == 0, f"Voila rendered {lost} cells before their outputs arrived"
    behind = sum(bool(problems) for problems in found)
    # The server's warnings and errors go with a failure: a kernel that died, a refused start.
    said = [line for line in text.splitlines() if re.search(r"\[[WE] |Error|Traceback", line)]
    came = "came" if ready else "never came"
    assert behind == 0, (
        f"{behind} of {STUDENTS} pages fell behind (the ready line {came}):\n"
        + "\n".join(sum(found, []))
        + "\nVoila's warnings and errors:\n"
        + "\n".join(said[-40:])
    )
