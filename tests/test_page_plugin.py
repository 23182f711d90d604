"""The page's plugin (serving/jupyter/voila/labextensions/scanlab-page): Voila's app starts, and so
renders the cells' widget outputs, only once the widget manager has restored the kernel's widgets
(docs/design.md, "An output without its widget")."""

from __future__ import annotations

import os
import re
import signal
import time

from playwright.async_api import TimeoutError as PlaywrightTimeout

from harness.support.visits import charts_shown

PLUGIN = "scanlab-page:widgets-before-outputs"

# When the manager (handed over by the plugin) restored the kernel's widgets, and when the first
# output's renderer started: ipywidgets' renderer writes "Loading widget..." before it asks the
# manager for its model.
ORDER = """(() => {
    const order = window.scanlabOrder = {};
    window.addEventListener('scanlab-widget-manager', ({ detail: manager }) => {
        order.handed = performance.now();
        const stamp = () => { order.restored ??= performance.now(); };
        if (manager.restoredStatus) stamp(); else manager.restored.connect(stamp);
    });
    new MutationObserver((records, observer) => {
        for (const record of records) for (const node of record.addedNodes) {
            if ((node.textContent || '').includes('Loading widget')) {
                order.rendered = performance.now();
                return observer.disconnect();
            }
        }
    }).observe(document, { subtree: true, childList: true });
})();"""


def test_outputs_are_rendered_once_the_widgets_are_restored(faulted_server, visit):
    # Rendered before, an output's renderer asks for its model while the restore is under way, and
    # ipywidgets' manager can give up on a model it has just restored (its 2 s deadline passing on a
    # busy page): the output reads "Error displaying widget: model not found" for good. Seen in CI
    # and in full `make test` runs on 2 cores; here the order itself is checked. Without the
    # plugin's wait the first output rendered 0.4 s before the restore ended (2.8 to 2.9 s on 6
    # pages starved 2.5 s as the widgets' states arrived).
    async def scenario(browser):
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: message.type == "error" and errors.append(message.text))
        await page.add_init_script(ORDER)
        await page.goto(faulted_server.url, timeout=120_000)
        await charts_shown(page)
        order = await page.evaluate("() => window.scanlabOrder")
        active = await page.evaluate(f"() => window.jupyterapp.isPluginActivated({PLUGIN!r})")
        if not active or "handed" not in order:
            return [f"the plugin did not run: activated {active}, {order}"] + errors
        if not order.get("restored") or not order.get("rendered") or order["rendered"] < order["restored"]:
            errors.append(f"an output was rendered before the widgets were restored: {order}")
        missing = await page.locator(".jupyter-widgets", has_text="model not found").count()
        return ([f"{missing} outputs without their widget"] if missing else []) + errors

    assert visit(scenario) == []


NOTICE = """new MutationObserver((records, observer) => {
    if (!document.querySelector('.scanlab-kernel-stopped')) return;
    window.scanlabToldBeforeStart = !window.jupyterapp;
    observer.disconnect();
}).observe(document, { subtree: true, childList: true });"""


def test_a_kernel_killed_while_the_page_restores_its_widgets_is_told_at_once(faulted_server, visit):
    # The app waits for the restore; the wait ends when the kernel dies, and the page's connection
    # watch (connection.js) is handed the manager before the start. The kernel's widget states are
    # held back and the kernel killed as they come: the page must say its kernel stopped within
    # seconds (1.9 s here, not the wait's 30 s: 30.3 s with neither the early end nor the handover),
    # before its app has started (the handover), and the app must start (the early end).
    async def scenario(browser):
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        killed = []

        def route(socket):
            server = socket.connect_to_server()
            kernel_id = re.search(r"/api/kernels/([^/?]+)/channels", socket.url).group(1)

            def to_page(message):
                data = message if isinstance(message, bytes) else message.encode()
                if b'"method": "update_states"' in data:  # held for good; the kernel killed
                    if not killed:
                        for process in faulted_server.kernels():
                            if f"kernel-{kernel_id}.json" in " ".join(process.cmdline()):
                                os.kill(process.pid, signal.SIGKILL)
                                killed.append(time.monotonic())
                    return
                socket.send(message)

            socket.on_message(server.send)
            server.on_message(to_page)

        await page.add_init_script(NOTICE)
        await page.route_web_socket(re.compile(r"/api/kernels/[^/?]+/channels"), route)
        await page.goto(faulted_server.url, timeout=120_000)
        try:
            await page.locator(".scanlab-kernel-stopped").wait_for(timeout=60_000)
            said = time.monotonic() - killed[0]
            await page.wait_for_function("() => window.jupyterapp", timeout=10_000)
        except (PlaywrightTimeout, IndexError) as error:
            return [f"killed {len(killed)}: {type(error).__name__}: {str(error)[:200]}"]
        text = await page.locator(".scanlab-kernel-stopped").inner_text()
        early = await page.evaluate("() => window.scanlabToldBeforeStart")
        told = said < 10 and "kernel stopped" in text
        wrong = [] if told else [f"told {said:.1f} s after the kill: {text}"]
        return wrong + ([] if early else ["told only once the app had started"])

    assert visit(scenario) == []
