"""The kernel's side of Voila's preheated kernels: wait for the visitor's request.

Voila starts a preheated kernel with VOILA_PREHEAT=True and runs the notebook in it before anyone
asks; the notebook then waits for a page to claim the kernel, and Voila sends the request's details
(QUERY_STRING, SCRIPT_NAME, SERVER_NAME, ...) over a websocket at <server>voila/query/<kernel id>.

`voila.utils.wait_for_request` does this, but importing voila.utils imports Voila's server side
(jupyterlab_server, nbformat, jsonschema and its format checkers): 1.6 s of CPU and 42 MB of its
own memory in every dashboard kernel (measured after the explorer's imports), for a function of
twenty lines. This is that function, for Voila 0.5
(voila/utils.py: wait_for_request and _get_request_info), with the same environment variables and
defaults; tests/test_lifecycle.py and tests/test_dashboard.py check it against the served app.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import warnings


def query_url(environ) -> str:
    """Where Voila answers a preheated kernel with its request's details."""
    protocol = environ.get("VOILA_WS_PROTOCOL", "ws")
    host = environ.get("VOILA_APP_IP", "127.0.0.1")
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    port = environ.get("VOILA_APP_PORT", "8866")
    base = environ.get("VOILA_WS_BASE_URL", environ.get("VOILA_SERVER_URL", "/"))
    return f"{protocol}://{host}:{port}{base}voila/query/{environ.get('VOILA_KERNEL_ID')}"


async def _receive(url: str) -> str | None:
    import websockets  # only preheated kernels need it

    try:
        # proxy=None: the server is this machine; websockets 15 would otherwise go through any
        # HTTP(S)_PROXY or ALL_PROXY set in the environment.
        async with websockets.connect(url, open_timeout=5, proxy=None) as socket:
            return await socket.recv()
    except (TimeoutError, OSError, websockets.exceptions.WebSocketException) as error:
        warnings.warn(f"Failed to connect to {url}: {error}", stacklevel=2)
        return None


def wait_for_request() -> None:
    """Block a preheated Voila kernel until a page claims it, then put the request's details in
    os.environ. Returns at once in any other kernel (JupyterLab, or Voila without preheating)."""
    if os.environ.get("VOILA_PREHEAT", "False") == "False":
        return
    url = query_url(os.environ)
    received = []
    # The kernel's own event loop is running in this thread: wait on a loop of its own in another.
    thread = threading.Thread(target=lambda: received.append(asyncio.run(_receive(url))))
    thread.start()
    thread.join()
    if received and received[0] is not None:
        os.environ.update(json.loads(received[0]))
