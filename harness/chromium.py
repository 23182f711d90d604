"""Debian's Chromium, as the tests and the benchmarks launch it through Playwright (its own download
is not reachable here): `browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)`."""

import shutil

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
