"""Test-wide settings: the strictest JAX promotion rules, so core never relies on implicit casts."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def count_compiles():
    """Count XLA backend compiles while the returned context is open."""
    import contextlib

    from jax import monitoring

    @contextlib.contextmanager
    def counting():
        events = []

        def listener(event, duration, **kwargs):
            if event == "/jax/core/compile/backend_compile_duration":
                events.append(duration)

        monitoring.register_event_duration_secs_listener(listener)
        try:
            yield events
        finally:
            monitoring.unregister_event_duration_listener(listener)

    return counting


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium through Playwright, one per test module (the browser tests)."""
    from playwright.sync_api import sync_playwright

    from benchmarks.protocol import CHROMIUM, CHROMIUM_ARGS

    assert os.path.exists(CHROMIUM), "Chromium is missing: .ci/run installs it (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
