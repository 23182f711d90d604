"""The served dashboard in a real Chromium: `make run` serves app.ipynb and the chart shows core's numbers.

Chromium is Debian's (/usr/bin/chromium, installed by .ci/run); Playwright drives it. The server is
started with the README's own command, `make run PORT=...`, on loopback.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import core
from widgets.trajectory import RunSettings

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]
pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dashboard_url():
    port = _free_port()
    server = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # make's child voila shares the group, so one signal stops both
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "make run did not serve the dashboard:\n" + server.stdout.read().decode()[-3000:]
                )
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        server.stdout.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert os.path.exists(CHROMIUM), "Chromium is missing: .ci/run installs it (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def test_dashboard_shows_the_default_trajectory(dashboard_url, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(dashboard_url, timeout=60_000)
    page.wait_for_selector(".js-plotly-plot .scatterlayer .trace", timeout=60_000)
    drawn = page.evaluate(
        "() => { const gd = document.querySelector('.js-plotly-plot'); return gd.data.map(t => t.y); }"
    )
    page.screenshot(
        path=os.environ.get("SCANLAB_SCREENSHOT", str(tmp_path / "dashboard.png")), full_page=True
    )

    settings = RunSettings()
    x, y = core.make_batches(settings.N, settings.B, seed=settings.seed, noise=settings.noise)
    weights = core.training_history(settings.w0, settings.lr, x, y).weights
    np.testing.assert_allclose(np.asarray(drawn[0], dtype=np.float64), weights, rtol=1e-6)
    assert drawn[1][0] == pytest.approx(core.optimum(x, y), rel=1e-9)
    assert "regime: monotone" in page.inner_text("body")
    assert errors == []
    # Voila strips sources by default: a visitor sees the output, not the code.
    assert "build_app" not in page.content()
    page.close()
