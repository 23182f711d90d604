"""The kernel's side of Voila's preheated kernels (widgets/preheat.py), against Voila's own function;
what a dashboard kernel imports; and the heap it hands back (widgets/heap.py)."""

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import voila.utils
import websockets
from traitlets.utils.importstring import import_item

from widgets import preheat

ROOT = Path(__file__).resolve().parent.parent
VOILA_ENVIRONMENT = {
    "VOILA_PREHEAT": "True",
    "VOILA_APP_IP": "10.1.2.3",
    "VOILA_APP_PORT": "9999",
    "VOILA_SERVER_URL": "/user/ana/",
    "VOILA_KERNEL_ID": "4f1c",
}


@pytest.mark.parametrize(
    "environment",
    [
        VOILA_ENVIRONMENT,
        {**VOILA_ENVIRONMENT, "VOILA_WS_PROTOCOL": "wss", "VOILA_WS_BASE_URL": "/ws/"},
        {"VOILA_PREHEAT": "True", "VOILA_KERNEL_ID": "k"},  # Voila's defaults for the rest
    ],
)
def test_the_query_address_is_voilas(monkeypatch, environment):
    asked = []

    async def request_info(url):
        asked.append(url)

    for name in (
        "VOILA_WS_PROTOCOL",
        "VOILA_WS_BASE_URL",
        "VOILA_APP_IP",
        "VOILA_APP_PORT",
        "VOILA_SERVER_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(voila.utils, "_get_request_info", request_info)
    # Voila's function leaves its event loop open; collected later, the loop's sockets could go
    # first, and its close then raised in whichever test the collection fell (ValueError: Invalid
    # file descriptor: -1, once in CI's suite). Closed here, it is closed whole.
    loops, new_event_loop = [], asyncio.new_event_loop
    monkeypatch.setattr(asyncio, "new_event_loop", lambda: loops.append(new_event_loop()) or loops[-1])
    voila.utils.wait_for_request()
    assert asked == [preheat.query_url(os.environ)]
    assert len(loops) == 1
    loops[0].close()


def test_only_a_preheated_kernel_waits(monkeypatch):
    asked = []

    async def receive(url):
        asked.append(url)

    monkeypatch.setattr(preheat, "_receive", receive)
    monkeypatch.delenv("VOILA_PREHEAT", raising=False)
    preheat.wait_for_request()  # JupyterLab
    monkeypatch.setenv("VOILA_PREHEAT", "False")
    preheat.wait_for_request()  # Voila, a kernel started for its visitor
    assert asked == []
    monkeypatch.setenv("VOILA_PREHEAT", "True")
    preheat.wait_for_request()
    assert asked == [preheat.query_url(os.environ)]


def test_a_preheated_kernel_takes_the_requests_details(monkeypatch):
    details = {
        "QUERY_STRING": "lr=0.3&N=40",
        "SERVER_NAME": "hub.example",
        "SCRIPT_NAME": "/voila/render/app.ipynb",
    }
    paths, ready, stop = [], threading.Event(), None

    async def answer(socket):
        paths.append(socket.request.path)
        await socket.send(json.dumps(details))

    async def serve():
        nonlocal stop
        stop = asyncio.get_running_loop().create_future()
        async with websockets.serve(answer, "127.0.0.1", 0) as server:
            monkeypatch.setenv("VOILA_APP_PORT", str(server.sockets[0].getsockname()[1]))
            ready.set()
            await stop

    for name, value in {**VOILA_ENVIRONMENT, "VOILA_APP_IP": "127.0.0.1"}.items():
        monkeypatch.setenv(name, value)  # the port is the server's, below
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # a proxy that is not there: not used
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    for name in details:  # recorded, so that what wait_for_request sets is undone afterwards
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),))
    thread.start()
    try:
        assert ready.wait(10)

        async def in_a_running_loop():  # as in a kernel, whose event loop runs in this thread
            preheat.wait_for_request()

        asyncio.run(in_a_running_loop())
    finally:
        loop.call_soon_threadsafe(lambda: stop.set_result(None))
        thread.join(10)
        loop.close()
    assert paths == ["/user/ana/voila/query/4f1c"]
    assert {name: os.environ[name] for name in details} == details


def test_nobody_there_warns_and_goes_on(monkeypatch):
    for name, value in {**VOILA_ENVIRONMENT, "VOILA_APP_IP": "127.0.0.1", "VOILA_APP_PORT": "1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("QUERY_STRING", "")
    monkeypatch.delenv("QUERY_STRING")
    with pytest.warns(UserWarning, match="Failed to connect"):
        preheat.wait_for_request()
    assert "QUERY_STRING" not in os.environ


def test_a_dashboard_kernel_imports_neither_voila_nor_nbformat():
    # Voila's server side and nbformat's schema checks cost 2.4 s of CPU and about 40 MB in every
    # kernel (widgets/preheat.py). plotly.py imports nbformat only for its own FigureWidget and
    # fig.show(), which no kernel here uses.
    heavy = ("nbformat", "jsonschema", "voila", "jupyterlab_server")
    probe = f"import sys, widgets.explorer; print(sorted(m for m in {heavy} if m in sys.modules))"
    environment = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    environment.pop("VOILA_SERVER_URL", None)
    run = lambda extra: subprocess.run(  # noqa: E731
        [sys.executable, "-c", probe],
        env={**environment, **extra},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")[-2]
    assert run({"VOILA_SERVER_URL": "/"}) == "[]"
    assert run({}) == "[]"  # a notebook kernel (JupyterLab) too


def test_optax_runs_only_when_used():
    # core.linear defers Optax (about 5 MB a kernel) until an attribute is read: the Optax panel.
    probe = """
import sys, widgets
widgets.Explorer(background=False).show("trajectory", "loss")  # as a dashboard kernel builds it
print("optax._src.base" in sys.modules)
import core
core.train_linear(*core.linear_data(0, 64), optimizer="adam", steps=3)
print("optax._src.base" in sys.modules, type(sys.modules["optax"]).__name__)
"""
    environment = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", probe], env=environment, cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert run.stdout.split("\n")[-3:] == ["False", "True module", ""]


def test_freed_memory_goes_back_to_the_system():
    probe = """
import importlib.util, sys
import numpy as np
# The module alone: the widgets package's imports (JAX, Plotly) would blur what this measures.
spec = importlib.util.spec_from_file_location("heap", sys.argv[1])
heap = importlib.util.module_from_spec(spec)
spec.loader.exec_module(heap)
return_freed_memory = heap.return_freed_memory
def own():
    status = open("/proc/self/status").read().splitlines()
    return next(int(line.split()[1]) // 1024 for line in status if line.startswith("RssAnon"))
blocks, kept = [], []
for _ in range(3000):
    blocks.append(np.ones(8000))  # 64 KB each, from malloc's heap (not an mmap of its own)
    kept.append(np.ones(10))  # a small block after each: freeing the large ones leaves holes
del blocks
before = own()
return_freed_memory()
print(before, own())
"""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", probe, str(ROOT / "widgets/heap.py")],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = map(int, run.stdout.split())
    assert before - after > 100, (before, after)  # MB: about 190 freed but kept by glibc before


def _make_run(tmp_path, python: str, *variables: str) -> list[str]:
    """The lines that `make run` with these variables prints when its python is the shell script
    `python` (make run calls it three times: the bundle tool, compileall, then Voila)."""
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\n{python}\n")
    fake.chmod(0o755)
    make = ["make", "-s", "-o", ".venv/.installed-run", "run", "PORT=1", f"BIN={fake.parent}", *variables]
    return subprocess.run(make, cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()


@pytest.mark.parametrize(
    ("host", "asked"),
    [("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "127.0.0.1"), ("10.1.2.3", "10.1.2.3"), ("::1", "[::1]")],
)
def test_make_run_tells_preheated_kernels_where_the_server_listens(tmp_path, host, asked):
    # make run's voila command with a python that prints VOILA_APP_IP, as a kernel started by that
    # server inherits it, and the address a preheated kernel then asks.
    exported = _make_run(tmp_path, 'printf "%s\\n" "$VOILA_APP_IP"', f"HOST={host}")[-1]
    assert preheat.query_url({"VOILA_APP_IP": exported, "VOILA_APP_PORT": "1", "VOILA_KERNEL_ID": "k"}) == (
        f"ws://{asked}:1/voila/query/k"
    )


@pytest.mark.parametrize(
    ("variables", "pool_size", "fill_delay"),
    [((), 1, 1.0), (("POOL_SIZE=30", "FILL_DELAY=300"), 30, 300.0)],  # voila.json's pool, Voila's delay
)
def test_make_run_sets_the_pool_and_its_refill_delay(tmp_path, variables, pool_size, fill_delay):
    # Voila's preheating kernel manager, built as Voila builds it from make run's command line and
    # voila.json, on a folder without notebooks (so that it starts no kernel).
    from traitlets.config import Configurable
    from voila.app import Voila
    from voila.voila_kernel_manager import voila_kernel_manager_factory

    printed = _make_run(tmp_path, 'printf "%s\\n" "$@"', *variables)
    app = Voila()
    app.parse_command_line(printed[printed.index("app.ipynb") + 1 :])
    app.load_config_file("voila", path=[str(ROOT)])  # voila.json, under the command line (as Voila does)

    class Server(Configurable):
        root_dir, notebook_path = str(tmp_path), None

    configuration = app.config.VoilaConfiguration
    manager_class = voila_kernel_manager_factory(
        import_item(configuration.multi_kernel_manager_class), True, configuration.default_pool_size
    )
    # The manager sets a task on the current loop (its watch for a filled pool), which never runs
    # here: on a loop of the test's own, cancelled, run to its end and closed, or the coroutine
    # ("never awaited") and the loop's sockets are reported in whichever later test collects them.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        manager = manager_class(parent=Server(config=app.config))
        manager._ready_watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            loop.run_until_complete(manager._ready_watch)
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    assert manager.kernel_pools_config["default"]["pool_size"] == pool_size
    assert manager.fill_delay == fill_delay


def test_make_run_serves_the_dashboard_kernel(tmp_path):
    # Voila's kernel specs, built as Voila builds them from make run's command line: app.ipynb's
    # python3 runs serving/dashboard_kernel.py under -OO (no docstrings), not ipykernel_launcher.
    from jupyter_client import KernelManager
    from voila.app import Voila

    printed = _make_run(tmp_path, 'printf "%s\\n" "$@"')
    app = Voila()
    app.parse_command_line(printed[printed.index("app.ipynb") + 1 :])
    specs = import_item(app.config.VoilaConfiguration.kernel_spec_manager_class)()
    notebook_kernel = json.loads((ROOT / "app.ipynb").read_text())["metadata"]["kernelspec"]["name"]
    command = KernelManager(kernel_name=notebook_kernel, kernel_spec_manager=specs).format_kernel_cmd()
    assert command[:2] == [sys.executable, "-OO"]
    assert Path(command[2]).resolve() == ROOT / "serving" / "dashboard_kernel.py"
    assert specs.get_kernel_spec(notebook_kernel).metadata.get("debugger") is False


def test_make_run_serves_even_where_it_cannot_compile_for_oo(tmp_path):
    # A read-only checkout or .venv: compileall fails, make run says so and starts Voila all the same
    # (its kernels then compile their modules as they start, about 2 s of CPU each).
    python = 'case "$*" in *compileall*) exit 1;; *-m\\ voila*) echo voila "$@";; esac'
    printed = _make_run(tmp_path, python)
    assert printed and printed[-1].startswith("voila -m voila app.ipynb")
