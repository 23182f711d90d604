"""A client that speaks to a served ScanLab dashboard the way its page does, without a browser.

Voila 0.5.13's page and its widget manager (`@voila-dashboards/widgets-manager8`, ipywidgets 8) do this,
and so does `Session.open`:

1. `GET /` (plus the query string). Voila renders the notebook with a kernel of its own (the
   preheated one from its pool when there is one) and writes the kernel's id into the page's
   `<script id="jupyter-config-data">` JSON as `kernelId`. The response streams until every cell ran.
2. `GET /api/kernels/<id>`: the page checks that the kernel exists (`KernelAPI.getKernelModel`).
3. A websocket to `/api/kernels/<id>/channels?session_id=<client uuid>` with the subprotocol
   `v1.kernel.websocket.jupyter.org`. No token, cookie or xsrf value is needed (Voila runs without a
   token). Each frame is one kernel message: a little-endian uint64 count of offsets, the offsets, then
   the channel name and the message's parts (header, parent_header, metadata, content, buffers...).
4. `kernel_info_request` on shell (the page's `KernelConnection` does this first).
5. The widget manager's `_loadFromKernel`: `comm_open` to the target `jupyter.widget.control` (metadata
   `{"version": "1.0.0"}`), a `comm_msg` `{"method": "request_states"}` on it, and the kernel answers
   `{"method": "update_states", "states": {model_id: {model_name, model_module, model_module_version,
   state}}, "buffer_paths": [[model_id, "state", ...], ...]}` with the binary buffers as extra parts. The
   control comm is then closed (`comm_close`); each widget's own comm already exists in the kernel, so
   the page attaches to it by model id without a `comm_open`.
6. A control moved in the page is a `comm_msg` on shell to that widget's comm:
   `{"comm_id": model_id, "data": {"method": "update", "state": {"value": 0.05}, "buffer_paths": []}}`.
   The kernel answers on iopub, every message with that comm_msg as its parent: `status: busy`, an
   `echo_update` of the value as received, an `update` per widget whose state the callback changed (a
   clamped value, the status line, each chart's new `data`, `plot_layout` and `revision`, with its
   arrays as binary buffers), then `status: idle`. `Session.update` times the message until that idle.
   Once a page has loaded the explorer's widgets.batch.Batch, the updates of a callback come as one
   `custom` message to that widget (`{"kind": "scanlab-batch", "messages": [[comm_id, data,
   buffer count], ...]}`, the buffers in order). This client never loads it, so a kernel that only
   this client speaks to sends each update alone (`make load`'s sessions measure that); where a
   page shares the kernel (tests/test_protocol.py's browser test), the client takes each part of a
   batch as the comm_msg it stands for (`unbatched`).
7. Leaving the page (`beforeunload`): `POST /voila/api/shutdown/<id>` with the `_xsrf` cookie's value
   as a form field; Voila shuts that kernel down. Stock Voila 0.5.13 never sets that cookie, so the post
   is refused (403, "'_xsrf' argument missing from POST") and the kernel lives until culled;
   `make run`'s identity provider (serving/identity.py) sets it. `Session.close` returns the status.

Only these message types get through the standalone `voila` command (its `allowed_message_types`):
comm_open, comm_msg, comm_close, comm_info_request, kernel_info_request and shutdown_request. Any other
(`execute_request`, `complete_request`, ...) is dropped by the server with a log line ("Received message
of type ..., which is not allowed. Ignoring."): the kernel never sees it and no reply comes back.

The client mirrors every widget's state as the kernel holds it: the kernel's `update`s as they arrive,
and this client's own values once the kernel has taken them without an error (a page, unlike this
mirror, keeps a value it sent even when the kernel refused it). It records every
iopub `error` message and any kernel status other than busy/idle, and never raises on what the kernel
sends. It is asyncio-based (the `websockets` package; HTTP through urllib in worker threads), so one
process can hold many sessions. Used by tests/test_protocol.py and benchmarks/load.py; harness.server
starts the server it speaks to:

    async with await Session.open("http://127.0.0.1:8866/") as session:
        answer = await session.update(session.control("lr"), {"value": 0.05})
        print(answer.seconds, answer.figure_updates)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import http.cookies
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import UTC, datetime
from typing import Any

SUBPROTOCOL = "v1.kernel.websocket.jupyter.org"
PROTOCOL_VERSION = "5.3"
# The explorer's controls (widgets/controls.py `controls()`): widget model and description, and the state
# key that holds the value (selection widgets sync the chosen `index`, not the value).
CONTROLS = {
    "lr": ("FloatLogSliderModel", "lr", "value"),
    "N": ("IntSliderModel", "N", "value"),
    "B": ("IntSliderModel", "B", "value"),
    "loss": ("ToggleButtonsModel", "loss", "index"),
    "w0": ("FloatSliderModel", "w0", "value"),
    "true_w": ("FloatSliderModel", "true w", "value"),
    "noise": ("FloatSliderModel", "noise", "value"),
    "kind": ("DropdownModel", "data", "index"),
    "seed": ("BoundedIntTextModel", "seed", "value"),
    "standardize": ("CheckboxModel", "standardize", "value"),
    "replace": ("CheckboxModel", "replace", "value"),
}
CONTROL_PANEL_CLASS = "scanlab-controls"  # the explorer's control panel VBox carries this DOM class

CHART_DRAWN = ("plotly_afterplot", "plotly_animated", "plotly_relayout")
"""The events a Plotly chart fires when it has drawn a change: Plotly.react's drawing, an animation
frame drawn without a redraw (widgets/surface.js), a layout change drawn alone. A page's chart is
redrawn after a move at the last of these."""

_HTTP = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="protocol-http")


class ProtocolError(RuntimeError):
    """The server or the kernel did not do what a page expects (no kernel id, no widget state...)."""


# Wire format ------------------------------------------------------------------------------------


def pack(channel: str, parts: list[bytes]) -> bytes:
    """One websocket frame of the v1 kernel protocol: `parts` are header, parent_header, metadata and
    content (JSON bytes each) and then any binary buffers."""
    channel_bytes = channel.encode()
    offsets = [8 * (1 + 1 + len(parts) + 1)]
    offsets.append(offsets[-1] + len(channel_bytes))
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    head = len(offsets).to_bytes(8, "little") + b"".join(o.to_bytes(8, "little") for o in offsets)
    return head + channel_bytes + b"".join(parts)


def unpack(frame: bytes) -> tuple[str, list[bytes]]:
    """(channel, parts) of one v1 frame: the inverse of `pack`."""
    count = int.from_bytes(frame[:8], "little")
    offsets = [int.from_bytes(frame[8 * (i + 1) : 8 * (i + 2)], "little") for i in range(count)]
    channel = frame[offsets[0] : offsets[1]].decode()
    return channel, [frame[offsets[i] : offsets[i + 1]] for i in range(1, count - 1)]


def _json(data: Any) -> bytes:
    # What the browser sends: JSON.stringify turns NaN and Infinity into null.
    return json.dumps(data, allow_nan=False, separators=(",", ":")).encode()


@dataclasses.dataclass
class Message:
    """One kernel message as received (or sent): its JSON parts parsed, buffers as bytes."""

    channel: str
    header: dict
    parent_header: dict
    metadata: dict
    content: Any
    buffers: list[bytes]
    received: float  # time.monotonic() on arrival

    @property
    def msg_type(self) -> str:
        return self.header.get("msg_type", "")

    @property
    def parent_id(self) -> str | None:
        return self.parent_header.get("msg_id") if isinstance(self.parent_header, dict) else None

    @classmethod
    def from_frame(cls, frame: bytes) -> Message:
        channel, parts = unpack(frame)
        header, parent, metadata, content = (json.loads(p) if p else {} for p in parts[:4])
        return cls(channel, header, parent, metadata, content, list(parts[4:]), time.monotonic())


BATCH = "scanlab-batch"
"""widgets.batch.BATCH (not imported: that would import the widgets and JAX into this client)."""


def unbatched(message: Message) -> list[Message]:
    """The widget messages a batch carries (widgets/batch.py), each as the comm_msg it stands for,
    with the batch's header and parent; any other message as it is."""
    data = message.content.get("data") if message.msg_type == "comm_msg" else None
    content = data.get("content") if isinstance(data, dict) and data.get("method") == "custom" else None
    if not isinstance(content, dict) or content.get("kind") != BATCH:
        return [message]
    parts, at = [], 0
    for comm_id, part, count in content.get("messages", ()):
        buffers, at = message.buffers[at : at + count], at + count
        parts.append(
            dataclasses.replace(message, content={"comm_id": comm_id, "data": part}, buffers=buffers)
        )
    return parts


@dataclasses.dataclass
class Widget:
    """A widget model as the kernel last described it: `state` is kept current by the session."""

    model_id: str
    model_name: str
    model_module: str
    state: dict

    @property
    def description(self) -> str | None:
        return self.state.get("description")

    def children(self) -> list[str]:
        """Model ids of the widgets this container holds (`IPY_MODEL_<id>` references)."""
        return [c[len("IPY_MODEL_") :] for c in self.state.get("children", ()) if isinstance(c, str)]


@dataclasses.dataclass
class Answer:
    """What the kernel sent in reply to one message: every iopub message whose parent it is.

    `seconds` is from sending to `status: idle` for it, None when it never came (the message was dropped
    or the kernel hung). `reply` is the shell reply, for request types that have one."""

    msg_id: str
    msg_type: str
    sent: float
    messages: list[Message] = dataclasses.field(default_factory=list)
    idle_at: float | None = None
    reply: Message | None = None
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event, repr=False)

    @property
    def seconds(self) -> float | None:
        return None if self.idle_at is None else self.idle_at - self.sent

    @property
    def answered(self) -> bool:
        return self.idle_at is not None

    @property
    def errors(self) -> list[dict]:
        """Content of each iopub `error` message (a traceback shown to the page)."""
        return [m.content for m in self.messages if m.msg_type == "error"]

    def updates(self, model_id: str | None = None, *, methods=("update",)) -> list[dict]:
        """States the kernel sent to widgets (to `model_id` only if given), in order."""
        return [
            m.content["data"].get("state", {})
            for m in self.messages
            if m.msg_type == "comm_msg"
            and isinstance(m.content.get("data"), dict)
            and m.content["data"].get("method") in methods
            and (model_id is None or m.content.get("comm_id") == model_id)
        ]

    @property
    def figure_updates(self) -> int:
        """Chart updates among the answer (one per chart redrawn: a Surface's new revision)."""
        return sum(1 for state in self.updates() if "revision" in state)


# The session ------------------------------------------------------------------------------------


def _get(url: str, timeout: float) -> tuple[str, dict[str, str], float]:
    """(body, cookies, seconds to the first byte) of a GET."""
    start = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as response:
        first = response.read(1)
        first_byte = time.monotonic() - start
        body = (first + response.read()).decode("utf-8", errors="replace")
        cookies = http.cookies.SimpleCookie()
        for header in response.headers.get_all("Set-Cookie") or ():
            cookies.load(header)
    return body, {name: morsel.value for name, morsel in cookies.items()}, first_byte


def _post_form(url: str, fields: dict, cookies: dict, timeout: float) -> int:
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    if cookies:
        request.add_header("Cookie", "; ".join(f"{k}={v}" for k, v in cookies.items()))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        error.close()
        return error.code


_CONFIG = re.compile(
    r'<script id="jupyter-config-data" type="application/json">\s*(\{.*?\})\s*</script>', re.S
)


def kernel_id_of(page: str) -> str:
    """The kernel id Voila wrote into the page (its page config's `kernelId`)."""
    match = _CONFIG.search(page)
    if not match:
        raise ProtocolError("the page has no jupyter-config-data (did the notebook fail?)")
    kernel = json.loads(match.group(1)).get("kernelId")
    if not kernel:
        raise ProtocolError("the page config has no kernelId")
    return kernel


class Session:
    """One visitor's page: the kernel Voila started for it, over its websocket.

    Times (seconds, from `open`'s start): `page_first_byte`, `page_seconds` (the whole HTML),
    `connected_seconds` (kernel_info answered) and `state_seconds` (every widget's state received, what a
    page needs before it can draw its first chart). `errors` holds every iopub `error` message (with its
    parent's msg_type), `statuses` every kernel status other than busy and idle ("dead", "restarting").
    """

    def __init__(self, base_url: str, kernel_id: str, cookies: dict | None = None, *, legacy: bool = False):
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.kernel_id = kernel_id
        self.cookies = cookies or {}
        self.client_id = uuid.uuid4().hex
        self.legacy = legacy  # the pre-v1 JSON protocol (no subprotocol): text frames
        self.models: dict[str, Widget] = {}
        self.errors: list[dict] = []
        self.statuses: list[str] = []
        self.received = 0
        self.closed: str | None = None  # why the websocket ended, once it has
        self.page_first_byte = self.page_seconds = self.connected_seconds = self.state_seconds = None
        self._pending: dict[str, Answer] = {}
        self._changed = asyncio.Condition()
        self._ws = None
        self._reader: asyncio.Task | None = None
        self._started = time.monotonic()

    # Opening and closing --------------------------------------------------------------------------

    @classmethod
    async def open(
        cls, url: str, *, query: str = "", timeout: float = 120.0, legacy: bool = False
    ) -> Session:
        """A new page: GET the dashboard (a new kernel), connect, load every widget's state."""
        start = time.monotonic()
        loop = asyncio.get_running_loop()
        page_url = url + (("?" + query) if query else "")
        body, cookies, first_byte = await loop.run_in_executor(_HTTP, _get, page_url, timeout)
        session = cls(url, kernel_id_of(body), cookies, legacy=legacy)
        session._started = start
        session.page_first_byte = first_byte
        session.page_seconds = time.monotonic() - start
        try:
            await session.connect(timeout=timeout)
            session.connected_seconds = time.monotonic() - start
            await session.load_state(timeout=timeout)
            session.state_seconds = time.monotonic() - start
        except BaseException:
            await session.close(shutdown=True)
            raise
        return session

    @classmethod
    async def attach(
        cls, url: str, kernel_id: str, *, timeout: float = 60.0, legacy: bool = False, load: bool = True
    ) -> Session:
        """Another connection to an existing kernel (a page's, its id read from the page), with every
        widget's state loaded unless `load` is False."""
        session = cls(url, kernel_id, legacy=legacy)
        try:
            await session.connect(timeout=timeout)
            if load:
                await session.load_state(timeout=timeout)
        except BaseException:
            await session.close(shutdown=False)
            raise
        return session

    async def connect(self, *, timeout: float = 60.0) -> None:
        """Check the kernel exists (as the page does), open its websocket, ask kernel_info."""
        from websockets.asyncio.client import connect

        loop = asyncio.get_running_loop()
        await loop.run_in_executor(_HTTP, _get, f"{self.base_url}api/kernels/{self.kernel_id}", timeout)
        ws_url = re.sub("^http", "ws", self.base_url) + f"api/kernels/{self.kernel_id}/channels"
        ws_url += f"?session_id={self.client_id}"
        self._ws = await connect(
            ws_url,
            subprotocols=None if self.legacy else [SUBPROTOCOL],
            compression=None,
            max_size=None,  # update_states carries every widget's state at once
            max_queue=None,
            open_timeout=timeout,
            ping_interval=None,
            proxy=None,
        )
        self._reader = asyncio.create_task(self._read(), name=f"kernel-{self.kernel_id[:8]}")
        answer = await self.request("shell", "kernel_info_request", {}, timeout=timeout, wait_reply=True)
        if answer.reply is None:
            raise ProtocolError(f"kernel {self.kernel_id} did not answer kernel_info_request")

    async def load_state(self, *, timeout: float = 60.0) -> None:
        """Every widget's state, as the widget manager loads it (the `jupyter.widget.control` comm)."""
        comm_id = uuid.uuid4().hex
        await self.send(
            "shell",
            "comm_open",
            {"comm_id": comm_id, "target_name": "jupyter.widget.control", "data": {}},
            metadata={"version": "1.0.0"},
        )
        answer = await self.comm_msg(comm_id, {"method": "request_states"}, timeout=timeout)
        await self.send("shell", "comm_close", {"comm_id": comm_id, "data": {}})
        states = [
            m for m in answer.messages if m.msg_type == "comm_msg" and m.content.get("comm_id") == comm_id
        ]
        if not states:
            raise ProtocolError(f"no update_states from kernel {self.kernel_id} in {timeout} s")
        data, buffers = states[-1].content["data"], states[-1].buffers
        for path, buffer in zip(data.get("buffer_paths", []), buffers, strict=False):
            _put(data["states"], path, buffer)
        for model_id, entry in data["states"].items():
            self.models[model_id] = Widget(
                model_id, entry.get("model_name", ""), entry.get("model_module", ""), entry.get("state", {})
            )

    async def close(self, *, shutdown: bool = True, timeout: float = 10.0) -> int | None:
        """Close the websocket; with `shutdown`, end the kernel as the page does when it is left
        (returns the POST's HTTP status)."""
        status = None
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._ws.close(), timeout)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
        if shutdown:
            loop = asyncio.get_running_loop()
            fields = {"_xsrf": self.cookies.get("_xsrf", "")}
            url = f"{self.base_url}voila/api/shutdown/{self.kernel_id}"
            with contextlib.suppress(OSError):
                status = await loop.run_in_executor(_HTTP, _post_form, url, fields, self.cookies, timeout)
        return status

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # Sending --------------------------------------------------------------------------------------

    def _header(self, msg_type: str) -> dict:
        return {
            "msg_id": uuid.uuid4().hex,
            "username": "",
            "session": self.client_id,
            "date": datetime.now(UTC).isoformat(),
            "msg_type": msg_type,
            "version": PROTOCOL_VERSION,
        }

    async def send(
        self,
        channel: str,
        msg_type: str,
        content: Any,
        *,
        metadata: dict | None = None,
        buffers: list[bytes] = (),
        raw_content: bytes | None = None,
        header: dict | None = None,
    ) -> Answer:
        """Send one message; its `Answer` fills as the kernel replies (see `wait`).

        `raw_content` replaces the JSON of `content` byte for byte (e.g. `NaN` tokens, which a browser's
        JSON.stringify never writes but which Python's json, the kernel's parser, accepts)."""
        if self._ws is None or self.closed:
            raise ProtocolError(f"the websocket is closed ({self.closed})")
        header = header or self._header(msg_type)
        answer = Answer(header["msg_id"], msg_type, time.monotonic())
        self._pending[answer.msg_id] = answer
        content_bytes = raw_content if raw_content is not None else _json(content)
        if self.legacy:
            if buffers:
                raise ProtocolError("binary buffers need the v1 protocol")
            text = (
                '{"channel":'
                + json.dumps(channel)
                + ',"header":'
                + _json(header).decode()
                + ',"parent_header":{},"metadata":'
                + _json(metadata or {}).decode()
                + ',"content":'
                + content_bytes.decode()
                + ',"buffers":[]}'
            )
            frame: bytes | str = text
        else:
            parts = [_json(header), b"{}", _json(metadata or {}), content_bytes, *buffers]
            frame = pack(channel, parts)
        answer.sent = time.monotonic()
        await self._ws.send(frame)
        return answer

    async def wait(self, answer: Answer, timeout: float, *, wait_reply: bool = False) -> Answer:
        """Wait until the kernel went idle for `answer`'s message (and sent its shell reply, if asked),
        or `timeout` passed; then stop collecting for it."""
        deadline = time.monotonic() + timeout
        try:
            while not (answer.answered and (answer.reply is not None or not wait_reply)):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.closed:
                    break
                answer.done.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(answer.done.wait(), remaining)
        finally:
            self._pending.pop(answer.msg_id, None)
        return answer

    async def request(
        self, channel: str, msg_type: str, content: Any, *, timeout: float = 30.0, wait_reply=False, **kw
    ) -> Answer:
        """send, then wait."""
        return await self.wait(
            await self.send(channel, msg_type, content, **kw), timeout, wait_reply=wait_reply
        )

    async def comm_msg(
        self, comm_id: str, data: Any, *, timeout: float = 30.0, raw_data: bytes | None = None, buffers=()
    ) -> Answer:
        """A comm message to `comm_id`, answered (idle) or timed out. `raw_data` is the JSON text of
        `data`, sent as is."""
        raw = None
        if raw_data is not None:
            raw = b'{"comm_id":' + _json(comm_id) + b',"data":' + raw_data + b"}"
        return await self.request(
            "shell",
            "comm_msg",
            {"comm_id": comm_id, "data": data},
            timeout=timeout,
            raw_content=raw,
            buffers=list(buffers),
        )

    async def update(
        self, widget: Widget | str, state: dict, *, timeout: float = 30.0, raw_state: bytes | None = None
    ) -> Answer:
        """Set widget traits as a page does when a control moves (ipywidgets 8's `update` message).
        `raw_state` is the JSON text of `state`, sent as is (non-standard tokens included)."""
        model_id = widget if isinstance(widget, str) else widget.model_id
        raw = None
        if raw_state is not None:
            raw = b'{"method":"update","state":' + raw_state + b',"buffer_paths":[]}'
        answer = await self.comm_msg(
            model_id, {"method": "update", "state": state, "buffer_paths": []}, timeout=timeout, raw_data=raw
        )
        return answer

    async def request_state(self, widget: Widget | str, *, timeout: float = 30.0) -> dict | None:
        """The widget's whole state as the kernel holds it now (`request_state`); None if unanswered."""
        model_id = widget if isinstance(widget, str) else widget.model_id
        answer = await self.comm_msg(model_id, {"method": "request_state"}, timeout=timeout)
        states = answer.updates(model_id)
        return states[-1] if states else None

    async def click(self, widget: Widget | str, *, timeout: float = 30.0) -> Answer:
        """A Button's click, as the page sends it."""
        model_id = widget if isinstance(widget, str) else widget.model_id
        return await self.comm_msg(
            model_id, {"method": "custom", "content": {"event": "click"}}, timeout=timeout
        )

    async def execute(self, code: str, *, timeout: float = 5.0, channel: str = "shell") -> Answer:
        """An `execute_request` (what a notebook front end sends to run code). Voila drops it: expect
        an unanswered Answer."""
        content = {
            "code": code,
            "silent": False,
            "store_history": False,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        return await self.request(channel, "execute_request", content, timeout=timeout, wait_reply=True)

    async def wait_for(self, predicate, timeout: float) -> bool:
        """Wait until predicate(self) holds (checked on every message received); False on timeout."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.closed:
                    return bool(predicate(self))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)
        return True

    # Finding widgets ------------------------------------------------------------------------------

    def find(self, model_name: str | None = None, **state) -> list[Widget]:
        """Widgets of that model name whose state has these values."""
        return [
            w
            for w in self.models.values()
            if (model_name is None or w.model_name == model_name)
            and all(w.state.get(k) == v for k, v in state.items())
        ]

    def descendants(self, widget: Widget) -> list[Widget]:
        out, todo = [], list(widget.children())
        while todo:
            child = self.models.get(todo.pop(0))
            if child is not None:
                out.append(child)
                todo.extend(child.children())
        return out

    def control_panel(self) -> Widget:
        panels = [w for w in self.models.values() if CONTROL_PANEL_CLASS in w.state.get("_dom_classes", ())]
        if len(panels) != 1:
            raise ProtocolError(f"{len(panels)} widgets carry the class {CONTROL_PANEL_CLASS}")
        return panels[0]

    def control(self, name: str) -> Widget:
        """The explorer's control for a Settings field (`CONTROLS`), found inside its control panel."""
        model_name, description, _ = CONTROLS[name]
        found = [
            w
            for w in self.descendants(self.control_panel())
            if w.model_name == model_name and w.description == description
        ]
        if len(found) != 1:
            raise ProtocolError(f"{len(found)} controls {model_name} {description!r} in the control panel")
        return found[0]

    def control_value(self, name: str) -> Any:
        """A control's value as this page holds it: the choice's label for loss and kind."""
        widget = self.control(name)
        key = CONTROLS[name][2]
        value = widget.state.get(key)
        if key == "index":
            labels = widget.state.get("_options_labels", [])
            return labels[value] if isinstance(value, int) and 0 <= value < len(labels) else None
        return value

    def figure(self, title_start: str) -> Widget:
        """The chart (widgets.surface.Surface) whose layout title starts with `title_start`."""
        found = [
            w
            for w in self.models.values()
            if str(((w.state.get("plot_layout") or {}).get("title") or {}).get("text", "")).startswith(
                title_start
            )
        ]
        if len(found) != 1:
            raise ProtocolError(f"{len(found)} figures titled {title_start!r}")
        return found[0]

    # Receiving ------------------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for frame in self._ws:
                try:
                    message = self._parse(frame)
                except (ValueError, KeyError, IndexError) as error:
                    self.errors.append({"ename": "ClientParseError", "evalue": str(error)})
                    continue
                self.received += 1
                for part in unbatched(message):
                    self._dispatch(part)
                async with self._changed:
                    self._changed.notify_all()
            self.closed = f"closed by the server ({self._ws.close_code})"
        except asyncio.CancelledError:
            self.closed = self.closed or "closed by the client"
            raise
        except Exception as error:  # a reset connection: say so, let waits end
            self.closed = f"{type(error).__name__}: {error}"
        finally:
            for answer in list(self._pending.values()):
                answer.done.set()
            with contextlib.suppress(RuntimeError):
                async with self._changed:
                    self._changed.notify_all()

    def _parse(self, frame) -> Message:
        if isinstance(frame, str):  # legacy protocol, no buffers
            msg, buffers = json.loads(frame), []
        elif self.legacy:  # legacy binary: uint32 offsets, JSON message, buffers
            count = int.from_bytes(frame[:4], "big")
            offsets = [int.from_bytes(frame[4 * (i + 1) : 4 * (i + 2)], "big") for i in range(count)]
            msg = json.loads(frame[offsets[0] : offsets[1] if count > 1 else None])
            ends = [*offsets[1:], len(frame)]
            buffers = [frame[ends[i] : ends[i + 1]] for i in range(len(ends) - 1)]
        else:
            return Message.from_frame(frame)
        parts = (msg.get(key, {}) for key in ("header", "parent_header", "metadata", "content"))
        return Message(msg.get("channel", ""), *parts, buffers, time.monotonic())

    def _dispatch(self, message: Message) -> None:
        parent = self._pending.get(message.parent_id or "")
        if message.channel == "iopub":
            if message.msg_type == "error":
                self.errors.append(
                    {**message.content, "parent_msg_type": message.parent_header.get("msg_type")}
                )
            elif message.msg_type == "status":
                state = message.content.get("execution_state")
                if state not in ("busy", "idle", "starting"):
                    self.statuses.append(state)
            elif message.msg_type == "comm_msg":
                self._apply(message)
            elif message.msg_type == "comm_close":
                self.models.pop(message.content.get("comm_id", ""), None)
            elif message.msg_type == "comm_open":
                content = message.content
                state = (content.get("data") or {}).get("state", {})
                for path, buffer in zip(
                    (content.get("data") or {}).get("buffer_paths", []), message.buffers, strict=False
                ):
                    _put(state, path, buffer)
                self.models[content.get("comm_id", "")] = Widget(
                    content.get("comm_id", ""),
                    state.get("_model_name", ""),
                    state.get("_model_module", ""),
                    state,
                )
        if parent is not None:
            if message.channel == "iopub":
                parent.messages.append(message)
                if message.msg_type == "status" and message.content.get("execution_state") == "idle":
                    parent.idle_at = message.received
                    self._accept_echoes(parent)
                    parent.done.set()
            elif message.channel in ("shell", "control") and message.msg_type.endswith("_reply"):
                parent.reply = message
                parent.done.set()

    def _apply(self, message: Message) -> None:
        data = message.content.get("data")
        model = self.models.get(message.content.get("comm_id", ""))
        if model is None or not isinstance(data, dict) or data.get("method") not in ("update", "echo_update"):
            return
        if data["method"] == "echo_update" and message.parent_header.get("session") == self.client_id:
            return  # our own value: kept once the kernel has taken it (`_accept_echoes`)
        state = data.get("state", {})
        for path, buffer in zip(data.get("buffer_paths", []), message.buffers, strict=False):
            _put(state, path, buffer)
        model.state.update(state)

    def _accept_echoes(self, answer: Answer) -> None:
        """Mirror what this client sent once the kernel has answered it without an error (a refused
        value is not the kernel's), except what the kernel itself then sent back (a clamped value)."""
        if answer.errors:
            return
        for i, message in enumerate(answer.messages):
            data = message.content.get("data") if message.msg_type == "comm_msg" else None
            if not isinstance(data, dict) or data.get("method") != "echo_update":
                continue
            comm_id = message.content.get("comm_id")
            model = self.models.get(comm_id or "")
            if model is None:
                continue
            later = set()
            for after in answer.messages[i + 1 :]:
                if after.msg_type == "comm_msg" and after.content.get("comm_id") == comm_id:
                    later.update((after.content.get("data") or {}).get("state", {}))
            state = dict(data.get("state", {}))
            for path, buffer in zip(data.get("buffer_paths", []), message.buffers, strict=False):
                _put(state, path, buffer)
            model.state.update({k: v for k, v in state.items() if k not in later})


def _put(state: Any, path: list, buffer: bytes) -> None:
    obj = state
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = buffer
