"""The ways a page could miss an update, each tried in a real Chromium: the page's charts must come to
draw the run its share link names, as its kernel computed it (harness.pages), every time.

- Plotly.js arrives late: the page is built, and a control moved, before the charts' code has
  loaded (what a class arriving at once did to every page; tests/test_class.py tries the class).
- A tab in the background: Chromium freezes it (no task, no animation frame); the answer to a move
  made just before, and the stability map computed meanwhile, are drawn when it is back.
- Moves faster than frames: a burst of key presses, each a new run while the last is drawn.
- A network blip: the kernel's answers are lost on the way before the page's websocket drops (the
  page's widget manager asks for every widget's state when it connects again: this checks it
  does). A move just before a cut, and the other cuts: tests/test_faults.py.
"""

from __future__ import annotations

import asyncio
import re

import pytest

from harness.pages import PAGE_STATE, page_settings, settled
from harness.support.visits import SETTLE_S, charts_shown, readout, type_value
from widgets.model import Model
from widgets.settings import DEFAULTS


@pytest.fixture
def url(dashboard_url):
    return dashboard_url


@pytest.fixture
def model():
    """A Model of the test's own, that has computed the first page's run, as the page's kernel has
    (harness.pages: the landscape's frame depends on the runs before)."""
    model = Model()
    model.compute(DEFAULTS)
    return model


def test_a_page_whose_charts_load_late_draws_the_run_moved_to_meanwhile(url, model, visit):
    async def scenario(browser):
        page = await browser.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))

        async def late(route):  # Plotly.js, 6 s late: longer than anywidget waits for a model
            await asyncio.sleep(6)
            await route.continue_()

        await page.route("**/plotly-*.min.js", late)
        await page.goto(url, timeout=120_000)
        await readout(page, "lr").wait_for(timeout=60_000)
        assert await page.locator(".js-plotly-plot").count() == 0  # the move comes before any chart
        await type_value(page, "lr", "0.0051")
        await charts_shown(page)
        wrong, settings = await settled(page, model, lambda s: s.lr == 0.0051, SETTLE_S)
        return wrong + errors

    assert visit(scenario) == []


def test_a_page_in_the_background_draws_on_its_return(url, model, visit):
    async def scenario(browser):
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(url, timeout=120_000)
        await charts_shown(page)
        await settled(page, model, lambda s: True, SETTLE_S)  # the page's first run, in the model
        await type_value(page, "N", "40")  # a new run, and a new stability map on the kernel's worker
        # The tab frozen at once, as Chromium freezes a tab in the background (a headless page behind
        # another still draws frames): no task, no frame, while the kernel's answer arrives.
        cdp = await context.new_cdp_session(page)
        await cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
        await asyncio.sleep(4)
        await cdp.send("Page.setWebLifecycleState", {"state": "active"})
        wrong, _ = await settled(page, model, lambda s: s.N == 40, SETTLE_S)
        return wrong

    assert visit(scenario) == []


def test_a_burst_of_moves_ends_on_the_last_run(url, model, visit):
    async def scenario(browser):
        page = await browser.new_page()
        await page.goto(url, timeout=120_000)
        await charts_shown(page)
        first, _ = await settled(page, model, lambda s: True, SETTLE_S)
        for name in ("lr", "N", "w0"):
            handle = (
                page.locator(".widget-slider")
                .filter(has=page.locator("label", has_text=re.compile(f"^{name}$")))
                .locator(".noUi-handle")
            )
            await handle.focus()
            for _ in range(12):  # no wait between keys: each move's run arrives while one is drawn
                await page.keyboard.press("ArrowLeft")
        await asyncio.sleep(1)
        # The kernel ran some of the burst's moves, which `model` has not: their runs moved the
        # landscape's range of w (kept_range), so that range is read from the page.
        wrong, settings = await settled(page, model, lambda s: True, SETTLE_S, frame_known=False)
        return first + wrong + ([] if settings.N == 88 else [f"N = {settings.N}"])

    assert visit(scenario) == []


async def drop_and_reconnect(sockets: list) -> list[str]:
    """Close the page's newest kernel websocket on both sides (the network drops) and wait until the
    page has opened another; what went wrong. `sockets`: (route, server) pairs, one per socket."""
    opened = len(sockets)
    route, server = sockets[-1]
    await server.close()
    await route.close()
    deadline = asyncio.get_running_loop().time() + SETTLE_S
    while len(sockets) == opened and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
    return [] if len(sockets) > opened else ["the page never opened its websocket again"]


def test_a_page_that_lost_the_kernels_answers_asks_again_when_it_reconnects(url, model, visit):
    # Messages the kernel sends in the moment the socket goes down are lost: jupyter_server keeps
    # them for the page only once it has seen the socket close. Here every answer to a move is lost
    # on its way (the relay drops them; the socket stays up), then the network drops: the page that
    # connects again must ask for what it missed, and draw the move.
    async def scenario(browser):
        page = await browser.new_page()
        sockets, dropping = [], []

        def relay(route):
            server = route.connect_to_server()
            sockets.append((route, server))
            server.on_message(lambda message: None if dropping else route.send(message))

        await page.route_web_socket(re.compile(r".*/api/kernels/.*/channels.*"), relay)
        await page.goto(url, timeout=120_000)
        await charts_shown(page)
        await settled(page, model, lambda s: True, SETTLE_S)
        dropping.append(True)
        await type_value(page, "N", "40")
        await asyncio.sleep(3)  # the line charts' answer and the map's, all lost
        if page_settings(await page.evaluate(PAGE_STATE)).N == 40:
            return ["the relay did not drop the kernel's answers"]
        dropping.clear()
        lost = await drop_and_reconnect(sockets)
        if lost:
            return lost
        wrong, _ = await settled(page, model, lambda s: s.N == 40, SETTLE_S)
        return wrong

    assert visit(scenario) == []


def test_plotly_js_is_fetched_once_by_the_page_and_again_when_that_fails(url, model, visit):
    # The page's template starts loading Plotly.js once the page has loaded, before it connects to
    # its kernel; the charts wait for that copy, and load one of their own only when it failed.
    async def scenario(browser):
        wrong = []
        for fails in (0, 1):
            page = await browser.new_page()
            requests = []

            def counter(fails, requests):
                async def count(route):
                    requests.append(route.request.url)
                    await (route.abort() if len(requests) <= fails else route.continue_())

                return count

            await page.route("**/plotly-*.min.js", counter(fails, requests))
            sockets = []  # how many Plotly.js requests had been made when each websocket opened
            page.on(
                "websocket", lambda _socket, requests=requests, sockets=sockets: sockets.append(len(requests))
            )
            await page.goto(url, timeout=120_000)
            await charts_shown(page)
            drawn, _ = await settled(page, model, lambda s: True, SETTLE_S)
            scripts = await page.evaluate(
                "() => [...document.querySelectorAll('script[data-scanlab-plotly]')]"
                ".map((s) => [s.parentElement.tagName, s.src])"
            )
            expected = [["HEAD", requests[0]]] * (1 + fails)
            if len(requests) != 1 + fails or scripts != expected or sockets[:1] != [1]:
                wrong.append(f"{fails} failed: requests {requests}, scripts {scripts}, sockets {sockets}")
            wrong += drawn
            await page.close()
        return wrong

    assert visit(scenario) == []
