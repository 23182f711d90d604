"""The served dashboard against a hostile visitor who speaks the kernel websocket protocol directly.

`make run` serves the dashboard; harness.protocol.Session opens it as a page does (GET, the kernel's
websocket, every widget's state) and then sends what no page would: `execute_request` and other message
types outside Voila's allow-list, and widget `update` messages that set every explorer control, the
stability map's chart and the Copy-as-script toggle to out-of-range, wrong-type and non-finite
values (also as raw `NaN` / `Infinity` / 10**400 tokens in the JSON text, which a browser's
JSON.stringify never writes but the kernel's json.loads accepts), and changes to traits other than the
value. After each one the kernel must have answered (`status: idle` for it), and the value the kernel
then reports (`request_state`) must be valid per widgets.settings.RANGES; a good value must still redraw
the charts, and the explorer's own state (its share link) must agree with its controls.

What the server and the kernel do, as measured:
- `execute_request` (and complete, inspect, history, debug, interrupt, usage, input_reply): the
  standalone `voila` command drops the message in jupyter_server (a log line "Received message of type
  ... which is not allowed. Ignoring."). Nothing reaches the kernel, nothing comes back, and the
  websocket stays open.
- A value the widget's trait cannot hold (a string for a float, a list, null for an int, 10**400 for a
  float): traitlets refuses it with a TraitError, which ipywidgets shows as an iopub `error` message (a
  traceback) to the page; the kernel keeps its value. Out of range (1e308, -Infinity): the slider's own
  validator or `sanitize` clamps it and the kernel sends the clamped value back. NaN: `sanitize` puts
  the default back with a notice.
- min, max, step, base and options are pinned (`pin` in widgets/controls.py): the kernel sends the
  original back. description, disabled, tooltip and the like are accepted; they change only the
  sender's own page (every visitor has a kernel of their own).
- A frame whose header is not JSON makes jupyter_server drop that websocket (an uncaught exception in
  its handler); the kernel and every other connection carry on.

The browser test attaches a hostile connection to the kernel of a real Chromium page, fuzzes it, and
checks that the page (which receives every echo and correction) stays live: no page error, its controls
show valid values, and a keyboard move still redraws the trajectory.
"""

from __future__ import annotations

import ast
import asyncio
import math
import re
import time

import numpy as np
import pytest

from harness.protocol import CONTROLS, Session, pack
from harness.support.loop import Loop
from widgets.controls import KIND_LABELS
from widgets.model import MAP_BATCH_SIZES, MAP_LRS
from widgets.settings import CHOICES, FLAGS, INTEGERS, RANGES, from_query, sanitize

ANSWER_S = 20.0  # a message the kernel has not answered by then counts as a hang

# Values a visitor can put in a number's place. JSON-able ones go through json.dumps; RAW are written
# into the JSON text as they are (JSON.stringify would send null for NaN and Infinity: that is None).
BAD_NUMBERS = [
    1e308,
    -1e308,
    123456789,
    5e-324,
    0.5,
    True,
    None,
    "abc",
    "",
    "0.05",
    "nan",
    [],
    [1, 2],
    {},
    "x" * 100_000,
]
RAW = ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400, "-1" + "0" * 400]
BAD_INDEXES = [-1, 3, 2**64, 1.5, None, "sum", [], {}, "x" * 100_000]
# Traits other than the value: (state sent, pinned). Pinned ones must come back as the kernel set them.
OTHER_TRAITS = {
    "slider": [
        ({"min": 500}, True),
        ({"max": 5000}, True),
        ({"max": 5000, "value": 5000}, True),
        ({"min": -5000, "value": -5000}, True),
        ({"step": 0}, True),
        ({"step": -1}, True),
        ({"step": None}, True),
        ({"step": "x"}, True),
        ({"min": 1e308, "max": -1e308}, True),
        ({"description": "<b>hacked</b>"}, False),
        ({"disabled": True}, False),
        ({"readout_format": "%$#x"}, False),
        ({"tooltip": "t" * 10_000}, False),
        ({"orientation": "diagonal"}, False),
        ({"continuous_update": "sometimes"}, False),
        ({"layout": "IPY_MODEL_nonexistent"}, False),
        ({"style": None}, False),
        ({"_model_name": "ButtonModel"}, False),
        ({"no_such_trait": 1}, False),
    ],
    "log": [({"base": 2}, True), ({"base": -1}, True), ({"base": 0}, True)],
}
# The same as raw JSON text: non-finite and overflowing bounds (all pinned).
RAW_TRAITS = [
    '{"max":Infinity,"value":Infinity}',
    '{"min":NaN,"max":NaN}',
    '{"min":-Infinity}',
    '{"step":NaN}',
    '{"max":1e400}',
    '{"max":1' + "0" * 400 + ',"value":1' + "0" * 400 + "}",
]
RAW_LOG_TRAITS = [
    '{"base":Infinity}',
    '{"base":NaN,"value":1}',
    '{"base":0,"value":1}',
    '{"base":-10,"min":-3.5}',
]
# Good values, two per control so that one of them is always a change; loss and kind send an index.
GOOD = {
    "lr": (0.02, 0.03),
    "N": (50, 60),
    "B": (8, 9),
    "loss": (1, 2),
    "w0": (1.0, -1.0),
    "true_w": (1.5, 2.5),
    "noise": (0.1, 0.2),
    "kind": (1, 0),
    "seed": (3, 4),
    "standardize": (True, False),
    "replace": (True, False),
}


@pytest.fixture(scope="module")
def server(dashboard_server):
    """The shared dashboard server: each session here fuzzes a kernel of its own."""
    return dashboard_server


@pytest.fixture(scope="module")
def loop():
    loop = Loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def session(server, loop):
    session = loop.run(Session.open(server.url), timeout=240)
    yield session
    loop.run(session.close())  # its kernel shut down, as a page's is when it is left


@pytest.fixture
def alive(session, loop):
    """After the test: the kernel is alive, its connection open, and a good value is answered."""
    yield
    assert session.closed is None, session.closed
    assert session.statuses == [], session.statuses
    _good_move(loop, session, "lr")


def _run(loop, coroutine):
    return loop.run(coroutine, timeout=ANSWER_S + 10)


def _answered(answer, what: str):
    assert answer.answered, f"the kernel did not answer {what} within {ANSWER_S} s"
    return answer


# A selection's labels where they are not its values (widgets.controls): {name: (labels, values)}.
LABELLED = {"kind": tuple(zip(*KIND_LABELS, strict=True))}


def _labels(name: str) -> list:
    return list(LABELLED[name][0] if name in LABELLED else CHOICES[name])


def _choice(state: dict, name: str):
    """The value a selection widget's state selects, or None when it selects nothing valid."""
    labels, index = state.get("_options_labels"), state.get("index")
    if list(labels or ()) != _labels(name) or type(index) is not int or not 0 <= index < len(labels):
        return None
    return (LABELLED[name][1] if name in LABELLED else labels)[index]


def _valid(name: str, state: dict) -> bool:
    """Whether a control's state, as the kernel reports it, holds a value within RANGES."""
    if name in CHOICES:
        return _choice(state, name) in CHOICES[name]
    value = state.get("value")
    if name in FLAGS:
        return type(value) is bool
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if name in INTEGERS and not isinstance(value, int):
        return False
    low, high = RANGES[name]
    return math.isfinite(value) and low <= value <= high


def _kernel_state(loop, session, name: str, widget=None) -> dict:
    """The control's whole state as the kernel holds it (`widget` when its description may be a
    visitor's by now)."""
    state = _run(loop, session.request_state(widget or session.control(name), timeout=ANSWER_S))
    assert state is not None, f"the kernel did not send {name}'s state"
    return state


def _kernel_settings(loop, session):
    """The explorer's settings as its controls hold them in the kernel, checked against its share link."""
    values = {}
    for name in CONTROLS:
        state = _kernel_state(loop, session, name)
        assert _valid(name, state), (name, {k: state.get(k) for k in ("value", "index", "_options_labels")})
        values[name] = _choice(state, name) if name in CHOICES else state["value"]
    settings, notices = sanitize(values)
    assert notices == [], notices
    share = session.find("TextModel", description="share link")
    assert len(share) == 1
    link = _run(loop, session.request_state(share[0], timeout=ANSWER_S))["value"]
    linked, problems = from_query(link.split("?", 1)[1])
    assert problems == [] and linked == settings, (link, settings)
    return settings


def _good_move(loop, session, name: str):
    """A good value for the control, different from its current one: answered, charts redrawn, no error."""
    key = CONTROLS[name][2]
    current = _kernel_state(loop, session, name).get(key)
    value = next(v for v in GOOD[name] if v != current)
    answer = _answered(
        _run(loop, session.update(session.control(name), {key: value}, timeout=ANSWER_S)), name
    )
    assert answer.errors == [], answer.errors
    assert answer.figure_updates >= 1, f"no chart redrawn after {name} = {value}"
    return answer


def _send_value(loop, session, widget, key: str, value, *, raw: bool = False):
    if raw:
        answer = session.update(widget, {}, raw_state=b'{"' + key.encode() + b'":' + value.encode() + b"}")
    else:
        answer = session.update(widget, {key: value})
    return _answered(_run(loop, answer), f"{key} = {str(value)[:40]}")


# execute_request and the other message types outside the allow-list ---------------------------------


@pytest.mark.parametrize("how", ["shell", "control", "legacy protocol"])
def test_execute_request_is_refused(server, loop, session, tmp_path, how, alive):
    target = tmp_path / "executed"
    code = f"open({str(target)!r}, 'w').close()"
    if how == "legacy protocol":  # the pre-v1 JSON frames, which jupyter_server still accepts
        other = _run(loop, Session.attach(server.url, session.kernel_id, legacy=True, load=False))
        try:
            answer = _run(loop, other.execute(code, timeout=2.0))
            assert other.closed is None, other.closed
        finally:
            _run(loop, other.close(shutdown=False))
    else:
        answer = _run(loop, session.execute(code, channel=how, timeout=2.0))
    assert not answer.answered and answer.reply is None and answer.messages == [], answer
    assert not target.exists()
    # The same connection is still served: an allowed request gets its reply.
    info = _run(loop, session.request("shell", "kernel_info_request", {}, wait_reply=True, timeout=ANSWER_S))
    assert info.reply is not None and info.reply.content["status"] == "ok"
    assert not target.exists()


def test_other_message_types_outside_the_allow_list_get_no_answer(loop, session, alive):
    requests = [
        ("shell", "complete_request", {"code": "imp", "cursor_pos": 3}),
        ("shell", "inspect_request", {"code": "open", "cursor_pos": 4, "detail_level": 1}),
        ("shell", "history_request", {"output": False, "raw": True, "hist_access_type": "tail", "n": 10}),
        ("shell", "is_complete_request", {"code": "x ="}),
        ("control", "debug_request", {"type": "request", "seq": 1, "command": "initialize", "arguments": {}}),
        ("control", "interrupt_request", {}),
        ("control", "usage_request", {}),
        ("stdin", "input_reply", {"value": "__import__('os').system('true')"}),
        ("shell", "Execute_Request", {"code": "1"}),
    ]

    async def every():
        return await asyncio.gather(
            *(session.request(c, t, content, timeout=2.0, wait_reply=True) for c, t, content in requests)
        )

    for (_, msg_type, _), answer in zip(requests, _run(loop, every()), strict=True):
        assert not answer.answered and answer.reply is None and answer.messages == [], msg_type
    assert session.closed is None


# Widget-protocol fuzz --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CONTROLS))
def test_every_control_clamps_or_refuses_bad_values(loop, session, name, alive):
    widget = session.control(name)
    key = CONTROLS[name][2]
    original = _kernel_state(loop, session, name, widget)
    bad = BAD_INDEXES if key == "index" else BAD_NUMBERS
    cases = [(value, False) for value in bad] + [(token, True) for token in RAW]
    for value, raw in cases:
        _send_value(loop, session, widget, key, value, raw=raw)
        state = _kernel_state(loop, session, name, widget)
        assert _valid(name, state), (name, str(value)[:40], state.get(key))

    # The value as a binary buffer, and a buffer path that leads nowhere.
    for data in (
        {"method": "update", "state": {}, "buffer_paths": [[key]]},
        {"method": "update", "state": {}, "buffer_paths": [["no", "such"]]},
    ):
        answer = _run(loop, session.comm_msg(widget.model_id, data, buffers=[b"\x00" * 8], timeout=ANSWER_S))
        _answered(answer, f"a buffer for {name}")
        assert _valid(name, _kernel_state(loop, session, name, widget))

    # Traits other than the value: pinned ones come back as they were; the value stays valid.
    kind = {"lr": "log", "loss": "choice", "kind": "choice", "seed": "text"}.get(name, "slider")
    kind = "flag" if name in FLAGS else kind
    others = OTHER_TRAITS["slider"] + (OTHER_TRAITS["log"] if kind == "log" else [])
    if kind in ("choice", "flag"):
        others = [
            (s, pinned) for s, pinned in others if "min" not in s and "max" not in s and "step" not in s
        ]
    for state, pinned in others:
        _answered(_run(loop, session.update(widget, state, timeout=ANSWER_S)), str(state)[:60])
        now = _kernel_state(loop, session, name, widget)
        assert _valid(name, now), (name, state, now.get(key))
        for trait in state:
            if pinned and trait in ("min", "max", "step", "base"):
                assert now.get(trait) == original.get(trait), (name, state, trait, now.get(trait))
        restore = {k: original[k] for k in state if k in original and k != key and now.get(k) != original[k]}
        if restore:  # put back what is not pinned (the description finds the control)
            _answered(_run(loop, session.update(widget, restore, timeout=ANSWER_S)), f"restore {restore}")
    if kind not in ("choice", "flag"):
        for text in RAW_TRAITS + (RAW_LOG_TRAITS if kind == "log" else []):
            _answered(
                _run(loop, session.update(widget, {}, raw_state=text.encode(), timeout=ANSWER_S)), text[:60]
            )
            now = _kernel_state(loop, session, name, widget)
            assert _valid(name, now), (name, text[:60], now.get(key))
            for trait in ("min", "max", "step", "base"):
                assert now.get(trait) == original.get(trait), (name, text[:60], trait, now.get(trait))

    if name in FLAGS:  # a flag changes no chart of generated data: the kernel and its link follow
        _send_value(loop, session, widget, key, not original[key])
        assert _kernel_settings(loop, session)._asdict()[name] is (not original[key])
        _send_value(loop, session, widget, key, original[key])
    else:
        _good_move(loop, session, name)
    _kernel_settings(loop, session)


@pytest.mark.parametrize("name", ["loss", "kind"])
def test_choices_cannot_be_relabelled(loop, session, name, alive):
    widget = session.control(name)
    labels = ["a", "b", "c", "d", "e"]
    _answered(_run(loop, session.update(widget, {"_options_labels": labels}, timeout=ANSWER_S)), "labels")
    _answered(_run(loop, session.update(widget, {"index": 4}, timeout=ANSWER_S)), "index 4")
    state = _kernel_state(loop, session, name, widget)
    try:
        assert _valid(name, state), {k: state.get(k) for k in ("index", "_options_labels")}
    finally:  # put the real labels and a real index back for the tests that follow
        good = {"_options_labels": _labels(name), "index": 0}
        _run(loop, session.update(widget, good, timeout=ANSWER_S))
        _run(loop, session.update(widget, {"index": 1}, timeout=ANSWER_S))
        _run(loop, session.update(widget, {"index": 0}, timeout=ANSWER_S))


def test_a_boolean_index_is_not_kept(loop, session, alive):
    widget = session.control("loss")
    _answered(_run(loop, session.update(widget, {"index": True}, timeout=ANSWER_S)), "index true")
    state = _kernel_state(loop, session, "loss")
    try:
        assert _valid("loss", state), state.get("index")
    finally:
        _run(loop, session.update(widget, {"index": 0}, timeout=ANSWER_S))


def test_malformed_widget_messages_are_refused(server, loop, session, alive):
    lr = session.control("lr")
    comm_msgs = [
        (lr.model_id, "not a dict"),
        (lr.model_id, {"method": "no such method"}),
        (lr.model_id, {"method": "update"}),
        (lr.model_id, {"method": "update", "state": "x", "buffer_paths": []}),
        (lr.model_id, {"method": "custom", "content": {"event": "click"}}),
        (lr.model_id, {"method": "request_states"}),
        ("no-such-comm", {"method": "update", "state": {"value": 1}, "buffer_paths": []}),
    ]
    for comm_id, data in comm_msgs:
        _answered(_run(loop, session.comm_msg(comm_id, data, timeout=ANSWER_S)), str(data)[:60])
    for content in (
        {"comm_id": lr.model_id},  # no data
        {"comm_id": "x", "target_name": "no.such.target", "data": {}},  # as a comm_open below
    ):
        _answered(_run(loop, session.request("shell", "comm_msg", content, timeout=ANSWER_S)), str(content))
    opens = [
        {"comm_id": "visitor-1", "target_name": "no.such.target", "data": {}},
        {"comm_id": "visitor-2", "target_name": "jupyter.widget", "data": {"state": {"_model_name": "Nope"}}},
        {"comm_id": "visitor-3", "target_name": "jupyter.widget.control", "data": {}},
    ]
    for content in opens:
        answer = session.request(
            "shell", "comm_open", content, metadata={"version": "2.1.0"}, timeout=ANSWER_S
        )
        _answered(_run(loop, answer), str(content)[:60])
    # Content that is not JSON: the kernel drops it (a log line) and answers nothing.
    answer = _run(loop, session.send("shell", "comm_msg", None, raw_content=b'{"comm_id": "'))
    _run(loop, session.wait(answer, 2.0))
    assert not answer.answered

    # A header that is not JSON: jupyter_server drops that connection, and only that one.
    other = _run(loop, Session.attach(server.url, session.kernel_id, load=False))
    try:
        _run(loop, other._ws.send(pack("shell", [b"{not json", b"{}", b"{}", b"{}"])))
        assert _run(loop, other.wait_for(lambda s: s.closed is not None, 10.0)), "the server kept the socket"
    finally:
        _run(loop, other.close(shutdown=False))
    _kernel_settings(loop, session)


def test_the_stability_map_refuses_bad_messages_and_a_click_still_picks(loop, session, alive):
    figure = session.figure("Stability map")
    custom = lambda content: {"method": "custom", "content": content}  # noqa: E731
    # What a page could send a chart: its figure's traits (the kernel's alone), and clicks
    # (widgets/surface.js) that hold anything.
    states = [
        {"data": [{"type": "heatmap", "z": "x"}], "revision": -1},
        {"plot_layout": {"xaxis": {"range": [0, "x"]}, "width": 100_000}},
        {"plot_layout": None, "config": "x", "revision": "abc"},
    ]
    clicks = [
        {"kind": "click", "points": [{"trace": 0, "x": "abc", "y": 3.0}]},
        {"kind": "click", "points": [{"trace": 99, "x": 1e308, "y": -1e308}]},
        {"kind": "click", "points": [{"trace": 0, "x": None, "y": None}]},
        {"kind": "click"},
        {"kind": "click", "points": "x"},
        {"kind": "click", "points": [["x"], 3, None]},
        {"kind": "nope"},
        "x",
    ]
    messages = [{"method": "update", "state": state, "buffer_paths": []} for state in states]
    messages += [custom(content) for content in clicks]
    for message in messages:
        answer = _run(loop, session.comm_msg(figure.model_id, message, timeout=ANSWER_S))
        _answered(answer, str(message)[:60])
        for name in ("lr", "B"):
            assert _valid(name, _kernel_state(loop, session, name)), message
    state = _run(loop, session.request_state(figure))
    assert state["plot_layout"]["xaxis"]["range"] != [0, "x"] and state["revision"] >= 0

    # A real click, as the page sends it: the explorer goes to that cell.
    column, row = 10, 20
    x, y = float(np.log10(MAP_LRS[column])), float(np.log2(MAP_BATCH_SIZES[row]))
    click = custom({"kind": "click", "points": [{"trace": 0, "x": x, "y": y}]})
    answer = _run(loop, session.comm_msg(figure.model_id, click, timeout=30.0))
    assert _answered(answer, "a click").errors == [] and answer.figure_updates >= 1
    settings = _kernel_settings(loop, session)
    assert settings.lr == float(f"{MAP_LRS[column]:.6g}") and settings.B == int(MAP_BATCH_SIZES[row])


def test_copy_as_script_refuses_bad_values_and_quotes_the_link_safely(loop, session, alive):
    (toggle,) = session.find("ToggleButtonModel", description="Copy as script")
    (share,) = session.find("TextModel", description="share link")
    for value in ("abc", None, [], {}, 2, -1, 0.5, "x" * 100_000):
        _answered(_run(loop, session.update(toggle, {"value": value}, timeout=ANSWER_S)), str(value)[:40])
        assert isinstance(_run(loop, session.request_state(toggle))["value"], bool)
    for token in ("NaN", "Infinity", "1" + "0" * 400):
        _send_value(loop, session, toggle, "value", token, raw=True)
        assert isinstance(_run(loop, session.request_state(toggle))["value"], bool)

    # The share link is a visitor's text too: whatever it holds, the script stays one docstring + code.
    hostile = '"""\nimport os; os.system("touch /tmp/scanlab-pwned")\n"""\\' + "\u2028'''"
    _answered(_run(loop, session.update(share, {"value": hostile}, timeout=ANSWER_S)), "a hostile link")
    _answered(_run(loop, session.update(toggle, {"value": False}, timeout=ANSWER_S)), "hide")
    _answered(_run(loop, session.update(toggle, {"value": True}, timeout=ANSWER_S)), "show")
    (text,) = [w for w in session.find("TextareaModel") if "A ScanLab run" in str(w.state.get("value"))]
    script = _run(loop, session.request_state(text))["value"]
    assert "A ScanLab run" in script
    tree = ast.parse(script)
    assert "os.system" in (ast.get_docstring(tree) or "")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "system"]
    assert calls == []
    _answered(_run(loop, session.update(toggle, {"value": False}, timeout=ANSWER_S)), "hide")
    _good_move(loop, session, "N")  # puts the share link back


# A real page while another connection fuzzes its kernel --------------------------------------------------


def test_a_page_stays_live_while_its_kernel_is_fuzzed(server, loop, chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(server.url, timeout=120_000)
            page.wait_for_function(
                "() => document.querySelectorAll('.js-plotly-plot').length >= 6", timeout=180_000, polling=200
            )
            kernel_id = page.evaluate(
                "JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId"
            )
            hostile = _run(loop, Session.attach(server.url, kernel_id))
            try:
                for name in CONTROLS:
                    widget, key = hostile.control(name), CONTROLS[name][2]
                    for value in ("abc", None, [1], 1e308, -1e308):
                        _send_value(loop, hostile, widget, key, value)
                    for token in ("NaN", "-Infinity", "1" + "0" * 400):
                        _send_value(loop, hostile, widget, key, token, raw=True)
                # The page answers echoes of out-of-range values by sending its own clamped value back,
                # late: read the kernel once that has settled (a lasting disagreement still fails).
                deadline = time.monotonic() + 30
                while True:
                    try:
                        settings = _kernel_settings(loop, hostile)
                        break
                    except AssertionError as error:
                        if time.monotonic() > deadline:
                            raise AssertionError(
                                f"{error}; kernel errors: {_brief(hostile.errors)}"
                            ) from None
                        time.sleep(1.0)
            finally:
                _run(loop, hostile.close(shutdown=False))

            # The page shows what the kernel holds, and a keyboard move still redraws the trajectory.
            def slider(label):
                return page.locator(".widget-slider").filter(
                    has=page.locator("label", has_text=re.compile(f"^{re.escape(label)}$"))
                )

            expected = {"N": str(settings.N), "B": str(settings.B)}
            deadline = time.monotonic() + 20
            while (
                shown := {k: slider(k).locator(".widget-readout").inner_text() for k in expected}
            ) != expected:
                assert time.monotonic() < deadline, (shown, settings)
                time.sleep(0.5)
            before = page.evaluate(_TRAJECTORY)
            handle = slider("N").locator(".noUi-handle")
            handle.focus()
            handle.press("ArrowLeft" if settings.N > 1 else "ArrowRight")
            page.wait_for_function(f"() => ({_TRAJECTORY})().length !== {len(before)}", timeout=20_000)
            assert errors == [], errors
        finally:
            browser.close()


def _brief(errors: list[dict]) -> list[str]:
    return [f"{e.get('parent_msg_type')}: {e.get('ename')}: {str(e.get('evalue'))[:120]}" for e in errors]


_TRAJECTORY = """() => {
    const gd = [...document.querySelectorAll('.js-plotly-plot')]
        .find(g => g.layout && g.layout.title && g.layout.title.text.startsWith('Trajectory'));
    return gd.calcdata[0].map(p => p.y);  // what Plotly drew, not only what it was sent
}"""
