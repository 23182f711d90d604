"""Slow laptops arriving at once: which widget-state answers never reach a page's browser?

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.lost_answers [--rounds 2] [--pages 6] [--throttle 8]

Starts `make run` on a free port with a preheated kernel per page, then, each round, opens `--pages`
dashboard pages at once in one Chromium, each with its CPU throttled `--throttle` times (the DevTools
protocol's `Emulation.setCPUThrottlingRate`), and records every websocket frame the browser sends and
receives (`Network.webSocketFrame*`). A starved page's widget manager falls back to one
`request_state` per widget; `connection.js` sends one again when its answer has not come 5 s after
the last answer (docs/design.md, "A page whose widgets never came"). Printed per page: seconds to six
charts, single requests, their answers seen at the browser's network, requests sent again, and how
many of those had their answer at the network before being sent again (0 means the answer was lost
beyond the browser, not in the page).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import time

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.protocol import Message
from harness.server import Server
from harness.support.visits import charts_shown


def ids(frame: bytes) -> tuple[str, str]:
    """(msg_id, the parent's msg_id) of a kernel websocket frame, in Jupyter's v1 binary protocol
    (the harness's reader) or the older JSON one; "" where there is none."""
    if frame[:1] == b"{":
        message = json.loads(frame)
        return message["header"].get("msg_id", ""), message["parent_header"].get("msg_id", "")
    message = Message.from_frame(frame)
    return message.header.get("msg_id", ""), message.parent_id or ""


def _payload(event: dict) -> bytes:
    response = event["response"]
    data = response["payloadData"]
    return base64.b64decode(data) if response["opcode"] == 2 else data.encode()


async def page_round(browser, url: str, throttle: float) -> dict:
    """One page's figures (see the module's docstring)."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await cdp.send("Network.enable")
    await cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
    asked, answered, again = {}, {}, {}  # msg_id -> monotonic time first seen

    def sent(event):
        frame = _payload(event)
        if b'"request_state"' in frame:
            ident, _ = ids(frame)
            (again if ident in asked else asked).setdefault(ident, time.monotonic())

    def received(event):
        frame = _payload(event)
        if b'"update"' in frame:
            _, parent = ids(frame)
            answered.setdefault(parent, time.monotonic())

    cdp.on("Network.webSocketFrameSent", sent)
    cdp.on("Network.webSocketFrameReceived", received)
    began = time.monotonic()
    await page.goto(url, timeout=180_000)
    try:
        await charts_shown(page, timeout_ms=240_000)  # 8x throttled pages took 130 to 180 s
        drawn = round(time.monotonic() - began, 1)
    except Exception:  # noqa: BLE001 - a page that never draws is a figure, not an error
        drawn = None
    await asyncio.sleep(2)
    await context.close()
    return {
        "charts_s": drawn,
        "single_requests": len(asked),
        "answers_seen": sum(ident in answered for ident in asked),
        "asked_again": len(again),
        "answered_before_asked_again": sum(answered.get(i, float("inf")) < t for i, t in again.items()),
    }


async def run(rounds: int, pages: int, throttle: float) -> None:
    from playwright.async_api import async_playwright

    with Server(args=[f"POOL_SIZE={pages}"]) as server:
        async with async_playwright() as playwright:
            while len(server.kernels()) < pages:
                await asyncio.sleep(1)
            await asyncio.sleep(15)  # the pool's kernels reach their wait for a visitor
            print("round page charts_s single_requests answers_seen asked_again answered_before_asked_again")
            for round_ in range(rounds):
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                figures = await asyncio.gather(
                    *(page_round(browser, server.url, throttle) for _ in range(pages))
                )
                for number, row in enumerate(figures):
                    print(round_, number, *row.values(), flush=True)
                await browser.close()
                await asyncio.sleep(20)  # the pool refilled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--throttle", type=float, default=8.0)
    args = parser.parse_args()
    if args.rounds < 1 or args.pages < 1 or args.throttle < 1:
        parser.error("--rounds and --pages must be at least 1, --throttle at least 1 (no slowing)")
    asyncio.run(run(args.rounds, args.pages, args.throttle))


if __name__ == "__main__":
    main()
