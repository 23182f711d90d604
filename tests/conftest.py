"""Test-wide settings: the strictest JAX promotion rules, so core never relies on implicit casts."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def count_compiles():
    """Count XLA backend compiles while the returned context is open (harness.compiles.counting)."""
    from harness.compiles import counting

    return counting


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through Playwright, one per test module (the browser tests)."""
    from playwright.sync_api import sync_playwright

    from harness.chromium import CHROMIUM, CHROMIUM_ARGS

    assert os.path.exists(CHROMIUM), "Chromium is missing: .ci/run installs it (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
