"""widgets.batch: the widget changes of a callback go to the page as one message, which the page
hands to each widget as if it had come alone (the browser half: tests/test_dashboard.py)."""

import contextlib
import threading

import ipywidgets as ipw
import numpy as np
import pytest
from ipywidgets.widgets.widget import _instances

from harness import protocol
from widgets import Explorer, batch
from widgets.access import Access
from widgets.batch import BATCH, FRAMES_KEPT, LIVE, READY, SHOWN, WELCOME, Batch
from widgets.hood import UnderTheHood


class Comm:
    """A comm that keeps what is sent through it, into a log shared by every comm of a test."""

    kernel = True

    def __init__(self, comm_id, log):
        self.comm_id, self.log = comm_id, log

    def send(self, data=None, buffers=None, **_):
        self.log.append((self.comm_id, data, [bytes(b) for b in buffers or ()]))

    def on_msg(self, *_):
        pass

    def close(self, *_, **__):
        pass


@pytest.fixture
def log():
    return []


def watched(widget, log, name):
    widget.comm = Comm(name, log)
    return widget


def greet(hub) -> None:
    """The page's side of the handshake: its code runs (READY), and it hears the kernel's WELCOME
    (LIVE). The welcome is taken out of the log."""
    log = hub.comm.log
    hub._on_front_end(hub, {"kind": READY}, [])
    sent = log.pop()
    assert sent[0] == hub.comm.comm_id and sent[1]["content"] == {"kind": WELCOME}, sent
    assert not hub.live  # not before the page has heard it
    hub._on_front_end(hub, {"kind": LIVE}, [])


def live(log) -> Batch:
    hub = watched(Batch(), log, "batch")
    greet(hub)
    return hub


def watch_made(log, known) -> list:
    """Every widget made since `known` (model ids), watched into `log` and named by the order it was
    made in (the same in two builds of one thing)."""
    made = [widget for model_id, widget in list(_instances.items()) if model_id not in known]
    for k, widget in enumerate(made):
        watched(widget, log, f"widget {k}")
    return made


def forget(made) -> None:
    for widget in made:
        _instances.pop(widget.model_id, None)
        widget.comm = None


def parts(message):
    """The (comm id, data, buffers) a batch message stands for (the browser's reading of it)."""
    comm_id, data, buffers = message
    content = data["content"]
    assert data["method"] == "custom" and content["kind"] == BATCH and comm_id == "batch"
    out, at = [], 0
    for part_id, part, count in content["messages"]:
        out.append((part_id, part, buffers[at : at + count]))
        at += count
    assert at == len(buffers)
    return out


def as_sent_alone(log) -> list:
    """The logged messages with each batch taken apart into the messages it stands for."""
    return [part for message in log for part in (parts(message) if message[0] == "batch" else [message])]


def test_installed_once_and_quiet_outside_a_batch(log):
    batch.install()
    batch.install()
    assert ipw.Widget._send is batch._batching_send and batch._send.__module__.startswith("ipywidgets")
    live(log)  # live, but no `with` open: nothing is collected
    a, b = watched(ipw.Label(), log, "a"), watched(ipw.Label(), log, "b")
    a.value, b.value = "1", "2"
    assert [(i, d["method"], d["state"]) for i, d, _ in log] == [
        ("a", "update", {"value": "1"}),
        ("b", "update", {"value": "2"}),
    ]


def test_a_batch_is_one_message_of_the_same_parts_in_order(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "abc"]
    array = np.arange(4.0)
    figure = watched(ipw.Widget(), log, "f")

    def change():
        labels[0].value = "x"
        figure._send({"method": "update", "state": {"y": {}}, "buffer_paths": [["y"]]}, [array.data])
        labels[1].value = "y"
        labels[0].value = "z"

    change()
    alone = list(log)
    labels[0].value = labels[1].value = ""
    log.clear()
    with hub:
        change()
        array[:] = -1  # after its message was made: the batch keeps what was sent
        assert log == []  # nothing until the batch ends
    [message] = log
    assert parts(message) == [(i, d, b) for i, d, b in alone] and len(alone) == 4
    assert parts(message)[1][2] == [np.arange(4.0).tobytes()]


def test_nothing_is_collected_before_the_page_has_the_batch_code(log):
    hub = watched(Batch(), log, "batch")
    labels = [watched(ipw.Label(), log, name) for name in "ab"]
    for content in ({"kind": "other"}, "ready", None, {"kind": [READY]}):
        hub._on_front_end(hub, content, [])  # a visitor can send the widget anything
    with hub:
        labels[0].value, labels[1].value = "1", "2"
        assert len(log) == 2
    assert not hub.live and [i for i, *_ in log] == ["a", "b"]


def test_an_output_whose_widget_manager_has_no_live_batch_gets_each_change_alone(log):
    # Where each output has a widget manager of its own and models are made only where shown
    # (Colab), the explorer's hidden Access view in each output names its manager; the batch goes
    # only while every manager named has a copy of the batch that hears the kernel.
    hub = watched(Batch(), log, "batch")
    hub._on_front_end(hub, {"kind": READY, "frame": "page"}, [])
    hub._on_front_end(hub, {"kind": LIVE, "frame": "page"}, [])
    access = Access(hub)
    labels = [watched(ipw.Label(), log, name) for name in "ab"]
    log.clear()

    def move(value):
        log.clear()
        with hub:
            labels[0].value, labels[1].value = value, value
        return [comm_id for comm_id, *_ in log]

    access._on_view(access, {"kind": SHOWN, "frame": "page"}, [])
    assert hub.shown == {"page"} and move("1") == ["batch"]
    access._on_view(access, {"kind": SHOWN, "frame": "an output of its own"}, [])
    assert move("2") == ["a", "b"]  # detected: one message a widget
    hub._on_front_end(hub, {"kind": LIVE, "frame": "an output of its own"}, [])
    assert move("3") == ["batch"]  # that output's copy of the batch hears the kernel now
    # A visitor's page may send anything, as often as it likes: kept short, and bounded.
    for content in ({"kind": SHOWN}, {"kind": SHOWN, "frame": 7}, {"kind": "other", "frame": "x"}, None, "x"):
        access._on_view(access, content, [])
    assert hub.shown == {"page", "an output of its own", ""}
    for k in range(200):
        access._on_view(access, {"kind": SHOWN, "frame": f"{k}" * 30}, [])
    assert len(hub.shown) == FRAMES_KEPT and max(map(len, hub.shown)) == 40


def test_each_output_of_the_explorer_holds_a_hidden_view_of_its_access():
    explorer = Explorer(background=False)
    outputs = {
        "controls": explorer.controls,
        "show": explorer.show("trajectory", "loss"),
        "code": explorer.code("trajectory"),
        "hood": explorer.hood.show("optax").children[0],
    }
    for name, box in outputs.items():
        assert box.children[-1] is explorer.access, name
    assert explorer.access.layout.display == "none" and explorer.access._batch is explorer.batch
    explorer.hood.open("optax")  # the panel in place of the placeholder: its output was told before
    assert explorer.hood.sections["optax"].children == (explorer.hood.panels["optax"].widget,)


def test_one_message_goes_as_it_is_and_none_sends_nothing(log):
    hub = live(log)
    label = watched(ipw.Label(), log, "a")
    with hub:
        pass
    assert log == []
    with hub:
        label.value = "1"
    assert log == [("a", {"method": "update", "state": {"value": "1"}, "buffer_paths": []}, [])]


def test_nested_batches_join_the_outermost(log):
    hub, other = live(log), live(log)
    labels = [watched(ipw.Label(), log, name) for name in "abc"]
    with hub:
        labels[0].value = "1"
        with other, hub:
            labels[1].value = "2"
        assert log == []
        labels[2].value = "3"
    [message] = log
    assert [i for i, *_ in parts(message)] == ["a", "b", "c"]


def test_other_messages_keep_their_place(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "ab"]
    with hub:
        labels[0].value = "1"
        labels[1].value = "2"
        labels[0].send({"custom": 1})  # not an update: what came before goes first
        labels[1].value = "3"
    assert [i for i, *_ in log] == ["batch", "a", "b"]
    assert [i for i, *_ in parts(log[0])] == ["a", "b"] and log[1][1]["method"] == "custom"


def test_an_error_still_sends_what_was_changed(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "ab"]
    with pytest.raises(ZeroDivisionError), hub:
        labels[0].value = "1"
        labels[1].value = "2"
        raise ZeroDivisionError
    assert [i for i, *_ in parts(log[0])] == ["a", "b"]
    labels[0].value = "after"  # the batch is over
    assert log[-1][0] == "a"


def test_another_thread_is_not_in_the_batch(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "ab"]
    with hub:
        labels[0].value = "1"
        thread = threading.Thread(target=setattr, args=(labels[1], "value", "2"))
        thread.start()
        thread.join()
        assert [i for i, *_ in log] == ["b"]
    assert [i for i, *_ in log] == ["b", "a"]


def test_threads_batching_at_once_keep_their_own_changes(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "abcd"]
    entered, done = threading.Event(), threading.Event()

    def other():
        with hub:
            labels[2].value = "3"
            entered.set()
            done.wait(5)
            labels[3].value = "4"

    thread = threading.Thread(target=other)
    with hub:
        labels[0].value = "1"
        thread.start()
        entered.wait(5)
        labels[1].value = "2"
    done.set()
    thread.join()
    assert [[i for i, *_ in parts(message)] for message in log] == [["a", "b"], ["c", "d"]]


def test_flush_sends_what_came_before(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "abc"]
    hub.flush()  # outside a batch: nothing to send
    with hub:
        labels[0].value = "1"
        labels[1].value = "2"
        hub.flush()
        assert [i for i, *_ in parts(log[0])] == ["a", "b"]
        labels[2].value = "3"
    assert [i for i, *_ in log] == ["batch", "c"]


def test_a_closed_batch_sends_each_change_alone(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "ab"]
    with hub:
        labels[0].value = "1"
        hub.comm = None  # closed (Widget.close_all() in a notebook)
        labels[1].value = "2"
    assert [i for i, *_ in log] == ["a", "b"]
    with hub:
        labels[0].value, labels[1].value = "3", "4"
    assert [i for i, *_ in log] == ["a", "b", "a", "b"]


@contextlib.contextmanager
def live_explorer(log):
    """An Explorer with its map in the background, as on a page, every widget of it watched into
    `log` and its Batch live; the log starts empty."""
    known = set(_instances)
    explorer = Explorer()
    made = watch_made(log, known)
    try:
        explorer.batch.comm.comm_id = "batch"
        greet(explorer.batch)
        log.clear()
        yield explorer
    finally:
        forget(made)


def test_the_map_says_computing_before_its_worker_draws(log):
    # The map's worker sends from its own thread, outside the callback's batch: the batch goes first.
    with live_explorer(log) as explorer:
        status = explorer.stability.status.model_id
        follow = explorer.stability.follow

        def slow(*args):  # the callback's last step waits until the worker has drawn the map
            follow(*args)
            explorer.stability.wait()

        explorer.stability.follow = slow
        explorer.inputs["N"].value = 40
        sent = as_sent_alone(log)
        texts = [data["state"]["value"] for i, data, _ in sent if i == status]
        assert [text.startswith("<i>Computing") for text in texts] == [True, False], texts
        # The new map itself came after "Computing…" too.
        figure = explorer.stability.figure.model_id
        drawn = [k for k, (i, data, _) in enumerate(sent) if i == figure and "data" in data["state"]]
        computing = next(k for k, (i, data, _) in enumerate(sent) if i == status)
        assert drawn and computing < drawn[0], (computing, drawn)


def test_the_status_sentence_travels_with_the_charts_it_describes(log):
    # A change of N flushes the batch for the map's "Computing…": the explorer's status sentence, the
    # share link and the line charts must go in that same message, or the page shows new charts under
    # the last run's words until the next message ("diverged at step" missing under a diverging run).
    with live_explorer(log) as explorer:
        explorer.inputs["N"].value = 40
        explorer.stability.wait()
        first = next(message for message in log if message[0] == "batch")
        ids = {i for i, *_ in parts(first)}
        texts = {explorer.status.model_id, explorer.share.model_id, explorer.step_info.model_id}
        assert explorer.figures["trajectory"].model_id in ids and explorer.stability.status.model_id in ids
        assert texts <= ids, "the words came after the charts"
        later = {i for i, *_ in as_sent_alone(log[log.index(first) + 1 :])}
        assert not texts & later, "a text of the move was sent after the map's Computing…"


def test_a_closed_widget_is_left_out(log):
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "abc"]
    with hub:
        for label in labels:
            label.value = "1"
        labels[1].comm = None
    assert [i for i, *_ in parts(log[0])] == ["a", "c"]


def alone_and_batched(build, move):
    """What `move` sends on two fresh builds, the first without a batch and the second batching:
    the messages sent alone after the control's own, and the parts of the one batch sent instead.
    `build()` returns what `move` takes and the Batch its callbacks use."""
    logs = {}
    for batching in (False, True):
        log = logs[batching] = []
        known = set(_instances)
        built, hub = build()
        made = watch_made(log, known)
        hub.comm.comm_id = "batch"
        if batching:
            greet(hub)
        move(built)
        forget(made)
    # The control's own value goes first, set in the kernel here (from a page: its echo).
    own, *alone = [(i, d) for i, d, _ in logs[False]]
    assert own[1]["method"] == "update" and logs[True][0][:2] == own
    [message] = logs[True][1:]
    return alone, [(i, d) for i, d, _ in parts(message)]


@pytest.mark.parametrize("move", [{"lr": 0.03}, {"B": 64}, {"N": 40}, {"loss": "both"}, {"w0": 1.0}])
def test_an_explorer_move_is_one_message_of_what_it_sent_alone(move):
    # The same move on two explorers, one batching: the batch carries the same updates, in order.
    [(name, value)] = move.items()

    def build():
        explorer = Explorer(background=False)
        return explorer, explorer.batch

    alone, batched = alone_and_batched(build, lambda explorer: setattr(explorer.inputs[name], "value", value))
    assert batched == alone
    figures = [i for i, d in alone if "revision" in d["state"]]  # widgets.surface.Surface
    # The charts that changed, and texts: a view change leaves "sum vs mean" as it was (it shows
    # both losses), and a chart that did not change sends nothing.
    assert len(figures) >= (4 if name == "loss" else 5) and len(alone) > len(figures)


@pytest.mark.parametrize(
    ("panel", "control", "value"),
    [("invariants", "length", 9), ("invariants", "b", -1.5), ("optax", "lr", 0.03), ("optax", "steps", 50)],
)
def test_a_hood_move_is_one_message_of_what_it_sent_alone(panel, control, value):
    # The hood's panels batch with the explorer's Batch, as the explorer's own callbacks do.
    def build():
        hub = Batch()
        return UnderTheHood(batch=hub).open(panel), hub

    alone, batched = alone_and_batched(build, lambda built: setattr(getattr(built, control), "value", value))
    assert batched == alone and len(alone) >= 3


def test_measure_says_starting_before_its_thread_draws(log, monkeypatch):
    # The loops panel's measuring thread sends from its own thread, outside Measure's batch: what
    # Measure changed goes first, even when the thread sends before Measure's callback has ended.
    known = set(_instances)
    hub = Batch()
    loops = UnderTheHood(batch=hub).open("loops")
    made = watch_made(log, known)

    class JoinedOnStart(threading.Thread):
        def start(self):
            super().start()
            if self.name == "loop-timing":
                self.join(30)  # the whole measurement inside Measure's callback

    try:
        hub.comm.comm_id = "batch"
        greet(hub)
        loops._runner._run = lambda command, root, timeout, on_record, on_end, slot_folder: setattr(
            loops.status, "value", "measured"
        )
        monkeypatch.setattr(threading, "Thread", JoinedOnStart)
        loops.measure()
        sent = as_sent_alone(log)
        status = loops.status.model_id
        texts = [data["state"]["value"] for i, data, _ in sent if i == status and "value" in data["state"]]
        assert [text.startswith("<i>Starting") for text in texts] == [True, False], texts
    finally:
        forget(made)


def test_the_protocol_client_reads_a_batch_as_its_parts(log):
    assert protocol.BATCH == BATCH
    hub = live(log)
    labels = [watched(ipw.Label(), log, name) for name in "ab"]
    figure = watched(ipw.Widget(), log, "f")
    with hub:
        labels[0].value = "1"
        figure._send({"method": "update", "state": {"y": {}}, "buffer_paths": [["y"]]}, [b"12345678"])
        labels[1].value = "2"
    comm_id, data, buffers = log[0]
    header = {"msg_type": "comm_msg", "msg_id": "m"}
    content = {"comm_id": comm_id, "data": data}
    message = protocol.Message("iopub", header, {"msg_id": "p"}, {}, content, buffers, 0.0)
    read = protocol.unbatched(message)
    assert [(m.content["comm_id"], m.content["data"], m.buffers) for m in read] == parts(log[0])
    assert all(m.header == header and m.parent_id == "p" for m in read)
    other = protocol.Message("iopub", header, {}, {}, {"comm_id": "a", "data": {"method": "update"}}, [], 0.0)
    assert protocol.unbatched(other) == [other]
