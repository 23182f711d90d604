"""Faults a classroom meets, injected into a dashboard page in Chromium, and whether the page comes
back to the truth: used by tests/test_faults.py (a few of each kind) and benchmarks/faults.py
(`make faults`, hundreds).

A page is opened through a `Proxy` of its own: a TCP relay on a port of this process in front of the
`make run` server, which can drop every connection and refuse new ones for a while (a school's Wi-Fi
gone; the page's websocket closes, its reconnects fail, the server cannot be reached), and which can
be pointed at another server (one started again on another port). With `offline`, Chromium is told
the network is gone too, as a laptop's is, and fires `online` when it is back.

After each fault, `truth(page, model)` says whether the page is true: every chart holds the run its
share link names as its kernel computed it (harness.pages), the readouts of lr, N, B and w0 are
those of that link (no chart disagrees with its controls), and no notice says the connection is
down.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import re
import time

from harness.pages import PAGE_STATE, differences, drawn_frame, expected_charts, page_settings
from harness.support.visits import charts_shown, type_value
from widgets.model import Model

CONTROLS = ("lr", "N", "B", "w0")

# What the page says while its connection is down, and once its kernel has stopped
# (serving/jupyter/voila/templates/scanlab/connection.js).
BANNER = ".scanlab-reconnecting"
STOPPED = ".scanlab-kernel-stopped"

# In the page: each control's readout, and what the page says about its connection.
PAGE_WORDS = f"""() => {{
  const readouts = {{}};
  for (const slider of document.querySelectorAll('.widget-slider')) {{
    const label = slider.querySelector('label');
    const field = slider.querySelector('.widget-readout');
    if (label && field) readouts[label.innerText.trim()] = field.innerText.trim();
  }}
  const said = (selector) => (document.querySelector(selector) || {{}}).innerText || '';
  const playing = document.querySelector('.widget-play .fa-pause') !== null;
  return {{ readouts, playing, banner: said({BANNER!r}), stopped: said({STOPPED!r}) }};
}}"""


class Proxy:
    """A TCP relay from `port` (its own, on 127.0.0.1) to `target` (a server's port), run on the
    caller's event loop. `cut()` drops every connection through it and refuses new ones until
    `restore()`; `target` may be changed at any time (new connections go there)."""

    def __init__(self, target: int):
        self.target = target
        self.down = False
        self.swallowing = False  # what the browser sends is dropped, the connections stay up
        self.deaf = False  # what the server answers is dropped
        self.deaf_after_save = False  # ... from the next file save (a PUT to the contents API) on
        self.port = 0
        self._server = None
        self._writers: set = set()

    async def start(self) -> Proxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    async def _serve(self, reader, writer) -> None:
        if self.down:
            writer.transport.abort()  # refused, as a dead network would
            return
        try:
            upstream_reader, upstream = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:  # the server is down: the browser sees the connection fail
            writer.transport.abort()
            return
        pair = {writer, upstream}
        self._writers |= pair
        try:
            await asyncio.gather(
                _pipe(reader, upstream, lambda: self.swallowing, self._sent),
                _pipe(upstream_reader, writer, lambda: self.deaf),
            )
        finally:
            self._writers -= pair
            for w in pair:
                w.transport.abort()

    def cut(self) -> None:
        self.down = True
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def swallow(self, replies: bool = False) -> None:
        """From now until `restore()`, what the browser sends goes nowhere: a message the page sends is
        lost on its way, as one in flight when a network drops is. With `replies`, what the server
        answers is lost instead, from the next file save's request on (a PUT to the contents API):
        the save arrived, its answer did not."""
        if replies:
            self.deaf_after_save = True
        else:
            self.swallowing = True

    def _sent(self, data: bytes) -> None:
        if self.deaf_after_save and data.startswith(b"PUT ") and b"/api/contents/" in data[:300]:
            self.deaf = True

    def restore(self) -> None:
        self.down = False
        self.swallowing = self.deaf = self.deaf_after_save = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)


async def _pipe(reader, writer, swallowing=lambda: False, sent=lambda data: None) -> None:
    try:
        while data := await reader.read(65536):
            if swallowing():
                continue
            writer.write(data)
            await writer.drain()
            sent(data)
    except (ConnectionError, OSError, asyncio.CancelledError):
        pass
    finally:
        writer.transport.abort()


async def network_down(page, proxy: Proxy, seconds: float, offline: bool = True) -> None:
    """The page's network gone for `seconds`: every connection dropped, none made (and, with
    `offline`, Chromium told so), then back. What the proxy was swallowing is lost."""
    proxy.cut()
    if offline:
        await page.context.set_offline(True)
    await asyncio.sleep(seconds)
    if offline:
        await page.context.set_offline(False)
    proxy.restore()


async def open_page(browser, url: str):
    """A page of the dashboard at `url` in a context of its own, its charts drawn; (page, the page's
    uncaught errors as they come)."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(url, timeout=180_000)
    await charts_shown(page)
    return page, errors


async def share_link(page) -> str:
    """The page's share link, as PAGE_STATE reads it."""
    return (await page.evaluate(PAGE_STATE))["share"]


def _shown(text: str) -> float | None:
    try:
        return float(text.replace("\u2212", "-"))  # a readout's minus sign is U+2212
    except ValueError:
        return None


def readouts_differ(readouts: dict, settings) -> list[str]:
    """The controls whose readout does not show the value of `settings` (as the readout rounds it)."""
    out = []
    for name in CONTROLS:
        text = readouts.get(name)
        value = None if text is None else _shown(text)
        want = getattr(settings, name)
        decimals = len(text.split(".")[1]) if text and "." in text else 0
        if value is None or not math.isclose(value, round(want, decimals), abs_tol=0.51 * 10**-decimals):
            out.append(f"the {name} readout shows {text!r}, the run is of {name} = {want:g}")
    return out


async def truth(page, model: Model, timeout: float, done=lambda settings: True) -> tuple[list[str], float]:
    """Poll the page until it is true (module docstring) and `done(settings)` holds for the settings
    its share link names; ([], seconds it took) then, or what is still wrong after `timeout`
    seconds. The landscape's range of w is read from the page (its kernel ran runs this process
    did not: the drag's, the fault's)."""
    start = time.monotonic()
    expected = {}
    while True:
        state = await page.evaluate(PAGE_STATE)
        words = await page.evaluate(PAGE_WORDS)
        wrong = []
        if words["banner"]:
            wrong.append(f"the page says: {words['banner'][:60]}")
        if words["stopped"]:
            wrong.append(f"the page says: {words['stopped'][:60]}")
        if not state["share"]:
            wrong.append("no share link")
        else:
            settings = page_settings(state)
            frame = drawn_frame(state)
            # Play stopped before the end (its press lost with the connection) shows its step.
            shown = _shown(words["readouts"].get("step", ""))
            step = None if shown is None or words["playing"] else int(shown)
            key = (settings, step, None if frame is None else tuple(frame))
            if key not in expected:
                if frame is not None:
                    model.frame = frame
                expected[key] = await asyncio.to_thread(expected_charts, model, settings, step)
            wrong += differences(state, expected[key]) + readouts_differ(words["readouts"], settings)
            if not done(settings):
                wrong.insert(0, "not moved")
            if words["playing"]:
                wrong.insert(0, f"Play is playing, at step {words['readouts'].get('step')} of {settings.N}")
        if not wrong or time.monotonic() - start > timeout:
            return wrong, time.monotonic() - start
        await asyncio.sleep(0.2)


async def says_down(page, timeout: float) -> float | None:
    """Seconds until the page says its connection is down or its kernel stopped, None if it never
    did within `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        words = await page.evaluate(PAGE_WORDS)
        if words["banner"] or words["stopped"]:
            return time.monotonic() - start
        await asyncio.sleep(0.1)
    return None


async def words_seen(page, seconds: float) -> list[str]:
    """What the page's connection notice said over the next `seconds` (each text once)."""
    seen: list[str] = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        for text in await page.locator(BANNER).all_inner_texts():
            if text not in seen:
                seen.append(text)
        await asyncio.sleep(0.1)
    return seen


LOST = "did not reach the server"  # the page's word for a change lost on its way (connection.js)


async def lost_move(page, move, words) -> str | None:
    """After a fault, once the page is true: None when `move` ((name, value) as typed, or None) is
    in the page's settings; else "told" when the page said, while `words` (a `words_seen` task begun
    when the network came back) watched, that a change did not reach the server, or "unsaid".
    `words` is cancelled when the move arrived: waited out after each fault, its seconds were most
    of a fault's time in tests/test_faults.py."""
    if move is None or reached(*move)(page_settings(await page.evaluate(PAGE_STATE))):
        words.cancel()
        return None
    return "told" if any(LOST in text for text in await words) else "unsaid"


def reached(name: str, value: str):
    """`done` for `truth`: the settings hold `value` (as typed) for `name`."""
    return lambda settings: math.isclose(getattr(settings, name), float(value), rel_tol=1e-9)


async def drag(page, name: str, rng: random.Random, seconds: float = 1.0) -> None:
    """The mouse pressed on `name`'s handle, moved along its track for about `seconds`, released."""
    handle = (
        page.locator(".widget-slider")
        .filter(has=page.locator("label", has_text=re.compile(f"^{re.escape(name)}$")))
        .locator(".noUi-handle")
    )
    box = await handle.bounding_box()
    track = await handle.locator("xpath=ancestor::*[contains(@class,'noUi-target')][1]").bounding_box()
    if box is None or track is None:
        return
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    await page.mouse.move(x, y)
    await page.mouse.down()
    steps = 12
    to = track["x"] + track["width"] * rng.uniform(0.1, 0.9)
    for i in range(1, steps + 1):
        await page.mouse.move(x + (to - x) * i / steps, y)
        await asyncio.sleep(seconds / steps)
    await page.mouse.up()


VALUES = {
    "lr": lambda rng: f"{rng.choice([0.002, 0.005, 0.01, 0.02, 0.05, 0.1]) * rng.uniform(0.8, 1.2):.4f}",
    "N": lambda rng: str(rng.randrange(20, 200)),
    "B": lambda rng: str(rng.randrange(1, 64)),
    "w0": lambda rng: f"{rng.uniform(-3, 3):.1f}",  # the slider's step: 0.1
}


async def typed(page, rng: random.Random, name: str | None = None) -> tuple[str, str]:
    """A value typed into a readout, as a visitor types one; (name, value)."""
    name = name or rng.choice(CONTROLS)
    value = VALUES[name](rng)
    await type_value(page, name, value)
    return name, value


async def play(page) -> None:
    """Play pressed: the scan drawn step by step over its play time (10 s), as the page's Play
    widget ticks (its first button)."""
    await page.locator(".widget-play button").first.click(timeout=10_000)


__all__ = [
    "BANNER",
    "CONTROLS",
    "LOST",
    "STOPPED",
    "Proxy",
    "drag",
    "lost_move",
    "network_down",
    "open_page",
    "play",
    "reached",
    "readouts_differ",
    "says_down",
    "share_link",
    "truth",
    "typed",
    "words_seen",
]
