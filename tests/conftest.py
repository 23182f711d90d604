"""Test-wide settings: the strictest JAX promotion rules, so core never relies on implicit casts; the
fixtures that start what a test needs outside its process (a browser, `make run`, a Jupyter server);
and each test's marks, set from those fixtures rather than by hand.

    make quick   -m "not browser and not served and not lab and not slow"
    make check   -m "not browser and not served and not lab"

A test that uses a fixture of MARKS[mark] (directly or through another fixture) gets that mark; a test
named in SLOW (its module, or its function) gets `slow` (both in harness/support/marks.py). Helpers
shared by test modules live in harness/support/ (tests only) or harness/ (tests and benchmarks); no test
module imports another.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

from harness.support.marks import GROUPS, MARKS, SECONDS, SLOW  # noqa: E402


def scope(item) -> str:
    """The scope xdist runs whole in one process: the test's module, or its GROUPS name."""
    return GROUPS.get(item.path.stem, item.path.stem)


def pytest_collection_modifyitems(config, items):
    # The longest scopes first (SECONDS; the Makefile turns xdist's own order, by number of tests,
    # off), each scope's tests in their order.
    items.sort(key=lambda item: -SECONDS.get(scope(item), 0))
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for mark, fixtures in MARKS.items():
            if used & fixtures:
                item.add_marker(mark)
        if {item.path.stem, f"{item.path.stem}::{item.originalname}"} & SLOW:
            item.add_marker("slow")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadscope` (each module whole in one process, its tests in order), with the modules of
    GROUPS together as one scope. (xdist's own loadgroup marks a test's id, which pytest 9 no
    longer lets it change.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupedScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return GROUPS.get(module.rsplit("/", 1)[-1].removesuffix(".py"), super()._split_scope(nodeid))

    return GroupedScopes(config, log)


@pytest.fixture
def count_compiles():
    """Count XLA backend compiles while the returned context is open (harness.compiles.counting)."""
    from harness.compiles import counting

    return counting


@pytest.fixture(scope="session")
def chromium():
    """How to launch Debian's headless Chromium: `playwright.chromium.launch(**chromium)`, for a test
    that starts browsers of its own (one per student, say)."""
    from harness.chromium import CHROMIUM, CHROMIUM_ARGS

    assert os.path.exists(CHROMIUM), "Chromium is missing: .ci/run installs it (apt-get install chromium)"
    return {"executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="module")
def browser(chromium):
    """Debian's headless Chromium through Playwright, one per test module (the browser tests)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def visit(chromium):
    """`visit(scenario)` runs `await scenario(browser)` in a Chromium of its own, from asyncio
    (harness.support.visits.visit)."""
    from harness.support.visits import visit

    return visit


@pytest.fixture(scope="session")
def make_run():
    """`make run` on a free port (harness.server.Server): `with make_run(args=[...]) as server:`
    waits until Voila answers, and stops it with its kernels at the end."""
    from harness.server import Server

    return Server


# The dashboard server the page tests share: preheated kernels for the pages they open one after
# another (each would otherwise wait 5 to 9 s for its kernel), and a kernel left without a page (a
# context closed without its page's unload) shut down after 2 minutes rather than 10. A kernel
# waiting in the pool is busy, and a page's own is connected: the culler leaves both alone.
DASHBOARD_ARGS = ["POOL_SIZE=3", "CULL_IDLE_TIMEOUT=120", "CULL_INTERVAL=10"]


def _dashboard(make_run, tmp_path_factory, name: str, args=DASHBOARD_ARGS):
    """A `make run` with `args`, its log kept in pytest's folder (NAME*/voila.log) for a test that
    fails on its server."""
    with make_run(args=args, log=tmp_path_factory.mktemp(name) / "voila.log") as server:
        yield server


@pytest.fixture(scope="session")
def dashboard_server(make_run, tmp_path_factory):
    """One `make run` for every test that only opens pages of the dashboard (one per xdist process).
    A test that counts kernels, reads the log or needs other settings starts its own (make_run)."""
    yield from _dashboard(make_run, tmp_path_factory, "dashboard")


@pytest.fixture(scope="module")
def faulted_server(make_run, tmp_path_factory):
    """dashboard_server's like, for one module at a time: a module that cuts a server's connections
    or kills its kernels on purpose (tests/test_faults.py, tests/test_page_plugin.py) harms no other
    module's pages if its faults harm the server. Its tests open a page or two at a time: one
    preheated kernel."""
    yield from _dashboard(make_run, tmp_path_factory, "faulted", ["POOL_SIZE=1", *DASHBOARD_ARGS[1:]])


@pytest.fixture(scope="session")
def dashboard_url(dashboard_server):
    """The address of the shared dashboard server. It is ready when Voila serves its static files:
    asking for the page would take a preheated kernel."""
    return dashboard_server.url


@pytest.fixture(scope="module")
def pages_to_read(browser, dashboard_url):
    """The module's pages of the dashboard that tests only read (harness.support.dashboard.PagesToRead)."""
    from harness.support.dashboard import PagesToRead

    pages = PagesToRead(browser, dashboard_url)
    yield pages
    pages.close()


@pytest.fixture
def page_to_read(pages_to_read):
    """`page_to_read(query="", viewport=(1280, 900), **context options)`: a page of the dashboard at
    that address, opened once for the module's tests that only read it; the test fails if it sends
    the page's kernel a widget message or the page logs an error."""
    yield pages_to_read.lend
    problems = pages_to_read.hand_back()
    assert problems == [], problems


@pytest.fixture
def checked_tasks(monkeypatch):
    """`exercise(fn, task=...)` (widgets.exercise) answering from harness.support.checker.checked: each
    exercise's checker runs once per process for a function, however many tests read its report."""
    from harness.support.checker import checked
    from widgets.exercise import TASKS

    for task, (check, done) in list(TASKS.items()):
        monkeypatch.setitem(TASKS, task, (lambda fn, check=check: checked(check, fn), done))


@pytest.fixture(scope="session")
def jupyter_lab():
    """JupyterLab serving a folder: `with jupyter_lab(root) as url:` (harness.support.lab.lab)."""
    from harness.support.lab import lab

    return lab


@pytest.fixture
def lab_server():
    """`lab_server(root, token)`: a started harness.lab.LabServer (which can be stopped and started
    again); each is stopped at the end of the test."""
    from harness.lab import LabServer

    servers = []

    def start(root, token=""):
        servers.append(LabServer(root, token).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def jupyter_server():
    """Start a Jupyter server (`jupyter lab`, `jupyter_server`, through `start` or not):
    `jupyter_server(command, cwd=..., env=...)` is subprocess.Popen in a session of its own, its output
    dropped unless given; each still running at the end of the test is stopped with its group."""
    import subprocess

    from harness.server import stop_group

    started = []

    def start(command, **options):
        options = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, **options}
        process = subprocess.Popen(command, start_new_session=True, **options)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            stop_group(process)
