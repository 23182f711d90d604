"""A classroom's network and server fail (issue 55), tried in Chromium against `make run`, a few of
each kind (`make faults` runs hundreds: benchmarks/faults.py, docs/faults.md).

The page goes through a proxy of this test (harness.faults.Proxy) that drops its connections and
refuses new ones, as a school's Wi-Fi does when it goes; Chromium is told it is offline too. After
each fault the page must be true again (harness.faults.truth: every chart the kernel's run for the
settings its share link names, every readout that link's value, nothing said about the connection);
while its connection is down for more than a moment, it must say so.

Before the page kept its connection itself (serving/jupyter/voila/templates/scanlab/connection.js),
cuts of 0.5 to 6 s left about half the pages on the old run for 12 to 25 s more, with nothing said
(the connection library's random, doubling waits), and a server started again left every page on
its old run until the library gave up its seven tries.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
import time
from pathlib import Path

from playwright.async_api import TimeoutError as PlaywrightTimeout

from harness.faults import (
    BANNER,
    LOST,
    Proxy,
    drag,
    lost_move,
    network_down,
    open_page,
    play,
    reached,
    says_down,
    share_link,
    truth,
    typed,
    words_seen,
)
from harness.saves import KINDS, TOKEN, open_exercise, save_fault
from harness.support.visits import charts_shown, type_value
from widgets.model import Model

SAID_S = 3.0  # a page whose connection is down must say so within this (it waits 0.7 s, then asks)
ROOT = Path(__file__).resolve().parent.parent
TRUE_S = 30.0  # and be true within this once the network is back (measured: 0.2 to 4.4 s; Play, 10 s)


def test_a_page_says_when_its_network_is_down_and_is_true_once_it_is_back_or_awake(faulted_server, visit):
    rng = random.Random(55)

    async def scenario(browser):
        proxy = await Proxy(faulted_server.port).start()
        try:
            page, errors = await open_page(browser, proxy.url)
            model = Model()
            wrong, _ = await truth(page, model, TRUE_S)
            problems = [f"the first page: {wrong}"] if wrong else []
            faults = [
                ("a value typed just before a cut of 2 s", 2.0, True, "before"),
                ("a value typed during a cut of 3 s", 3.0, True, "during"),
                ("a drag cut for 2 s, the server alone unreachable", 2.0, False, "drag"),
                ("the map's work cut for 1.5 s", 1.5, True, "map"),
                ("Play cut for 2 s", 2.0, True, "play"),
            ]
            figures = []
            for name, seconds, offline, when in faults:
                move = None  # typed before the cut, or during it: the kernel must have it after
                if when == "before":
                    move = await typed(page, rng, "lr")
                elif when == "map":
                    move = await typed(page, rng, "N")  # the stability map is computed again on its thread
                elif when == "play":
                    await play(page)
                cut = asyncio.ensure_future(network_down(page, proxy, seconds, offline))
                if when == "drag":
                    await drag(page, "w0", rng, seconds=1.0)
                said = await says_down(page, SAID_S)
                if when == "during":
                    move = await typed(page, rng, "w0")
                await cut
                # Play runs on for its play time, each frame a run: a loaded machine lags behind it.
                # A move typed during the cut must reach the kernel; one typed just before may be lost
                # on its way, and then the page must say so (the "sent, or put back with a word").
                told = asyncio.ensure_future(words_seen(page, 12))
                wrong, took = await truth(page, model, 3 * TRUE_S if when == "play" else TRUE_S)
                lost = await lost_move(page, move, told)
                if lost == "unsaid" or (lost and when == "during"):
                    wrong.append(f"{move[0]} = {move[1]} lost{', nothing said' if lost == 'unsaid' else ''}")
                figures.append(f"{name}: said after {said}, true {took:.1f} s after")
                if said is None:
                    problems.append(f"{name}: the page never said its connection was down")
                if wrong:
                    problems.append(f"{name}: {wrong[:4]}")
            # A laptop's lid closed: the tab frozen (no task, no timer) and its network gone, then
            # both back.
            move = await typed(page, rng, "B")
            session = await page.context.new_cdp_session(page)
            await session.send("Page.setWebLifecycleState", {"state": "frozen"})
            await network_down(page, proxy, 6.0)
            await session.send("Page.setWebLifecycleState", {"state": "active"})
            wrong, took = await truth(page, model, TRUE_S, done=reached(*move))
            figures.append(f"asleep 6 s: true {took:.1f} s after")
            problems += [f"asleep: {wrong[:4]}"] if wrong else []
            print("\n".join(figures))
            return problems + errors
        finally:
            await proxy.close()

    assert visit(scenario) == []


def test_a_change_lost_with_the_connection_is_told_and_its_control_still_works(faulted_server, visit):
    # The page's last messages lost on their way (the proxy swallows them), then the network drops.
    # ipywidgets' model waits for the kernel's answer to its last message before it sends the next:
    # without serving/jupyter/voila/templates/scanlab/unstick.js, w0 and Play never sent again
    # (measured: Play stopped at step 97 of 100, and a press of Play after did nothing).
    async def lost(page, proxy, change) -> list[str]:
        proxy.swallow()
        await change()
        await asyncio.sleep(0.5)
        await network_down(page, proxy, 2.0)
        start = time.monotonic()
        while time.monotonic() - start < 10:  # the word stays 8 s
            said = await page.locator(BANNER).all_inner_texts()
            if any(LOST in words for words in said):
                return said
            await asyncio.sleep(0.1)
        return []

    async def scenario(browser):
        proxy = await Proxy(faulted_server.port).start()
        try:
            page, errors = await open_page(browser, proxy.url)
            model = Model()
            problems = []
            said = await lost(page, proxy, lambda: type_value(page, "w0", "1.25"))
            if not any("w0 is back at 0.00" in words for words in said):
                problems.append(f"the page did not say the lost w0 was put back ({said})")
            wrong, _ = await truth(page, model, TRUE_S)
            problems += [f"after the lost w0: {wrong}"] if wrong else []
            await type_value(page, "w0", "-1.5")  # w0 still reaches the kernel
            wrong, _ = await truth(page, model, TRUE_S, done=lambda settings: settings.w0 == -1.5)
            problems += [f"w0 moved after: {wrong}"] if wrong else []

            said = await lost(page, proxy, lambda: play(page))
            wrong, _ = await truth(page, model, TRUE_S)  # stopped at a step: drawn at that step
            problems += [f"after the lost Play: {wrong}"] if wrong else []
            await play(page)  # Play still plays, to the end
            try:
                await page.wait_for_function(
                    "() => document.querySelector('.widget-play .fa-pause') === null && "
                    "[...document.querySelectorAll('.widget-slider')].some((s) => "
                    "s.querySelector('label')?.textContent === 'step' && "
                    "s.querySelector('.widget-readout').textContent === '100')",
                    timeout=3 * TRUE_S * 1000,
                )
            except PlaywrightTimeout:
                problems.append("Play pressed after the lost one did not play to the end")
            wrong, _ = await truth(page, model, TRUE_S)
            problems += [f"Play pressed after: {wrong}"] if wrong else []
            return problems + errors
        finally:
            await proxy.close()

    assert visit(scenario) == []


def test_the_widget_internals_unstick_js_reaches_into_are_those_it_was_checked_against():
    # unstick.js reads and writes WidgetModel._pending_msgs and calls _handle_status; checked
    # against this bundle. Another version may count messages otherwise: read it again, then
    # update the version here and in unstick.js.
    manager = Path(sys.prefix) / "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager"
    assert json.loads((manager / "package.json").read_text())["version"] == "5.0.16"
    code = "".join(path.read_text() for path in (manager / "static").glob("*.js"))
    assert "this._pending_msgs>=1){" in code and "return this._pending_msgs++," in code
    assert (
        '_handle_status(e){if(void 0!==this.comm&&"idle"===e.content.execution_state&&'
        "(this._pending_msgs--," in code
    )
    assert "null!==this._msg_buffer&&this._pending_msgs<1)" in code


def test_a_restarted_server_is_told_on_each_page_and_a_reload_brings_back_its_settings(
    make_run, visit, tmp_path
):
    # The server stopped while two pages are open, then started again (on another port: the proxy
    # is the address the pages know). Each page says the server cannot be reached, then that its
    # kernel stopped; its Reload opens its share link, and the new kernel draws those settings.
    rng = random.Random(3)

    async def scenario(browser, servers):
        proxies = [await Proxy(servers[0].port).start() for _ in range(2)]
        problems = []
        try:
            pages = [await open_page(browser, proxy.url) for proxy in proxies]
            for page, _ in pages:
                await typed(page, rng, "lr")
                await typed(page, rng, "N")
            models = [Model() for _ in pages]
            shares = []
            for (page, _), model in zip(pages, models, strict=True):
                wrong, _ = await truth(page, model, TRUE_S)
                problems += [f"before the stop: {wrong}"] if wrong else []
                shares.append(await share_link(page))
            await asyncio.to_thread(servers[0].stop)
            for page, _ in pages:
                if await says_down(page, SAID_S + 5) is None:
                    problems.append("a page never said the server could not be reached")
            servers.append(await asyncio.to_thread(start_server))
            for proxy in proxies:
                proxy.target = servers[1].port
            start = time.monotonic()
            for (page, errors), share in zip(pages, shares, strict=True):
                notice = page.locator(".scanlab-kernel-stopped")
                await notice.wait_for(timeout=30_000)
                told = time.monotonic() - start
                print(f"told {told:.1f} s after the server answered again: {await notice.inner_text()}")
                await page.get_by_role("button", name="Reload").click()
                await charts_shown(page)
                now = await share_link(page)
                if now.split("?")[1] != share.split("?")[1]:
                    problems.append(f"the reload drew {now}, the page had {share}")
                wrong, _ = await truth(page, Model(), TRUE_S)
                problems += wrong + errors
            return problems
        finally:
            for proxy in proxies:
                await proxy.close()

    def start_server():
        server = make_run(args=["POOL_SIZE=1"], log=tmp_path / f"server{time.monotonic_ns()}.log")
        server.wait_ready()
        return server

    servers = [start_server()]
    try:
        assert visit(lambda browser: scenario(browser, servers)) == []
    finally:
        for server in servers:
            server.stop()


def test_a_page_whose_widgets_answers_are_lost_asks_again_and_draws(faulted_server, visit):
    # A page of the class test that never drew, made to happen. ipywidgets' manager asks the kernel
    # for every widget's state in one message; when the page has not handled the answer 4 s later,
    # it asks each widget instead and waits for every answer, with no time limit. Pages of a class of
    # six arriving at once with their CPU throttled 8x (CDP) fell back so, lost the last answers of
    # that burst (the kernel's log had them sent) and drew nothing for minutes. Here the one answer is
    # held 6 s and 20 of the single answers are lost: the page must ask for them again and draw.
    async def scenario(browser):
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        page = await context.new_page()
        errors, held, asked, lost = [], [], [], set()
        page.on("pageerror", lambda error: errors.append(str(error)))

        def route(socket):
            server = socket.connect_to_server()

            def to_server(message):
                data = message if isinstance(message, bytes) else message.encode()
                if b'"request_state"' in data:  # the header, with the message's id, comes first
                    asked.append(re.search(rb'"msg_id": ?"([^"]+)"', data).group(1))
                server.send(message)

            def to_page(message):
                data = message if isinstance(message, bytes) else message.encode()
                if b'"method": "update_states"' in data and not held:
                    held.append(message)
                    asyncio.get_running_loop().call_later(6.0, socket.send, message)
                    return
                if b'"method": "update"' in data:
                    for ident in asked[100:120]:  # the first answer to each of these is lost
                        if ident in data and ident not in lost:
                            lost.add(ident)
                            return
                socket.send(message)

            socket.on_message(to_server)
            server.on_message(to_page)

        await page.route_web_socket(re.compile(r"/api/kernels/[^/?]+/channels"), route)
        await page.goto(faulted_server.url, timeout=120_000)
        try:
            await charts_shown(page)
        except PlaywrightTimeout:
            return [f"no 6 charts after 120 s ({len(asked)} single requests, {len(lost)} answers lost)"]
        wrong, _ = await truth(page, Model(), TRUE_S)
        if not held or len(lost) < 20:
            wrong.append(f"the fault did not happen: {len(asked)} single requests, {len(lost)} answers lost")
        return wrong + errors

    assert visit(scenario) == []


def test_a_page_missing_a_widget_loads_again_once_and_has_them_all(faulted_server, visit):
    # Seen once in CI and once in 8 loaded runs here of tests/test_class.py: one page's last cells'
    # outputs read "Error displaying widget: model not found" for good. Here, on the first load
    # only, the last widget output names a widget its kernel does not have (changed in the page
    # before Voila's app renders it); the page must load again, once, and be whole.
    break_once = """document.addEventListener('DOMContentLoaded', () => {
        if (sessionStorage.getItem('broken-once')) return;
        sessionStorage.setItem('broken-once', '1');
        const outputs = [...document.querySelectorAll(
            'script[type="application/vnd.voila.cell-output+json"]')]
            .filter((s) => s.textContent.includes('model_id'));
        const last = outputs[outputs.length - 1];
        const none = '"model_id": "' + '0'.repeat(32) + '"';
        last.textContent = last.textContent.replace(/"model_id": ?"[0-9a-f]+"/, none);
    });"""

    async def scenario(browser):
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        errors, loads = [], []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("load", lambda _: loads.append(1))
        await page.add_init_script(break_once)
        await page.goto(faulted_server.url, timeout=120_000)
        try:
            await page.wait_for_function(
                "() => performance.getEntriesByType('navigation')[0].type === 'reload'", timeout=90_000
            )
        except PlaywrightTimeout:
            return [f"the page never loaded again ({len(loads)} loads)"]
        await charts_shown(page)
        await page.wait_for_timeout(2000)  # the last outputs rendered
        missing = await page.locator(".jupyter-widgets", has_text="model not found").count()
        return ([f"{missing} outputs without their widget after the reload"] if missing else []) + errors

    assert visit(scenario) == []


def test_an_exercise_save_holds_through_each_fault(lab_server, visit, tmp_path):
    # A student's exercise.ipynb in JupyterLab, edited and saved as each fault strikes (harness.saves):
    # the next save after it must hold, the edit on disk.
    folder = tmp_path / "student-01"
    folder.mkdir()
    (folder / "exercise.ipynb").write_bytes((ROOT / "exercise.ipynb").read_bytes())
    lab = lab_server(folder, TOKEN)

    async def scenario(browser):
        proxy = await Proxy(lab.port).start()
        try:
            page = await open_exercise(browser, proxy, lab)
            return [await save_fault(page, proxy, lab, kind, 2.0, TRUE_S) for kind in KINDS]
        finally:
            await proxy.close()

    outcomes = visit(scenario)
    assert [o.kind for o in outcomes] == list(KINDS)
    assert [(o.kind, o.wrong) for o in outcomes if o.wrong] == [], outcomes
    for outcome in outcomes:
        assert outcome.said[0] != "the first save: saved", outcome  # the fault struck the first save
