"""Pages in a Chromium of their own, driven from asyncio (Playwright's async API), for the tests of
updates a page could miss: `visit(scenario)` runs `await scenario(browser)` in a fresh browser process
(the conftest's `visit` fixture hands it to a test), and the readouts are typed into as a visitor does.
SETTLE_S is how long a page's charts may take to catch up."""

from __future__ import annotations

import asyncio
import re

from harness.chromium import CHROMIUM, CHROMIUM_ARGS

SETTLE_S = 30


def visit(scenario):
    """Run `scenario(page)` in a browser process of its own; what went wrong comes back."""
    from playwright.async_api import async_playwright

    async def run():
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                return await scenario(browser)
            finally:
                await browser.close()

    return asyncio.run(run())


def readout(page, name: str):
    slider = page.locator(".widget-slider").filter(
        has=page.locator("label", has_text=re.compile(f"^{re.escape(name)}$"))
    )
    return slider.locator(".widget-readout")


async def type_value(page, name: str, value: str) -> None:
    field = readout(page, name)
    await field.fill(value, timeout=60_000)
    await field.press("Enter")


async def charts_shown(page, timeout_ms: float = 120_000) -> None:
    await page.wait_for_function(
        "() => document.querySelectorAll('.js-plotly-plot').length >= 6", timeout=timeout_ms, polling=100
    )
