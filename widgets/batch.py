"""One comm message for every widget change a callback makes.

A slider move changes six charts, three captions, the status line and the share link: ipywidgets
sends each widget's change as a message of its own, and each one costs the kernel, the server that
relays it and the browser about 1 ms on a 2-core machine (a bare echo page whose callback sets 12
labels answers in 24 ms, one label in 13 ms). Inside `with batch:` (`Batch`), the kernel collects
the `update` messages of every widget and sends them when the outermost `with` ends, as one custom
message to the Batch widget. Its front end (BATCH_ESM) hands each one, in order, to its widget's
model through the model's own message handler, as if it had come alone, so the widgets' own code
(ipywidgets', Plotly's) receives what it would have: the kernel's widget state and the browser's
agree as before.

A Batch collects nothing until its front end has shown that it hears the kernel (READY, WELCOME,
LIVE: a page that cannot load it, or that refuses its messages, gets every message as before), nor
while a widget manager shows a part of the page without such a front end of its own (`shown_in`:
Colab's outputs each have one), and a single message goes as it is. Any other message sent during a
batch (a custom message, an echo) first sends what was collected, so nothing is reordered. A widget
created during a batch is opened at once, before the changes collected: nothing can refer to it
before it exists. Messages another thread sends (the stability map's worker, the loops panel's
measurement) are not collected: a change that must reach the page before them is sent first
(`Batch.flush`). Code that may run without a Batch takes `or_unbatched(batch)`, which has the same
`with` and `flush`. `install` puts the collection into ipywidgets' `Widget._send`; it changes
nothing outside a batch.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools

import anywidget
import ipywidgets as ipw

BATCH = "scanlab-batch"
READY = "scanlab-ready"  # the front end's code runs
WELCOME = "scanlab-welcome"  # the kernel's answer to READY
LIVE = "scanlab-live"  # the front end heard the welcome
SHOWN = "scanlab-shown"  # a view of the page's own widget (widgets.access.Access) is drawn
FRAMES_KEPT = 64  # widget managers told apart; a page has one, or one per output

FRAME_JS = """
// A name for each widget manager of the page (one in JupyterLab and Voila; one per output where each
// output is a frame with its own, as in Colab), kept per window in a WeakMap of managers.
const frameOf = (manager) => {
  const known = (globalThis.scanlabFrames ??= new WeakMap());
  if (!known.has(manager)) known.set(manager, Math.random().toString(36).slice(2));
  return known.get(manager);
};
"""

BATCH_ESM = (
    FRAME_JS
    + """
// widgets/batch.py: a batch of widget messages from the kernel, each handed to its widget's model
// as if it had come alone, in the order they were sent. A model is looked up once; until every
// model of a batch is known, batches wait for each other in order.
export default {
  initialize({ model }) {
    const manager = model.widget_manager;
    const models = new Map();
    let waiting = 0, queue = Promise.resolve();
    const deliver = (parts) => {
      for (const [id, data, own] of parts) {
        try {
          models.get(id)._handle_comm_msg({ content: { comm_id: id, data }, buffers: own });
        } catch (error) {
          console.warn("ScanLab: a batched widget message was not delivered:", id, error);
        }
      }
    };
    const frame = frameOf(manager);
    model.on("msg:custom", (content, buffers) => {
      if (content && content.kind === "__WELCOME__") return model.send({ kind: "__LIVE__", frame });
      if (!content || content.kind !== "__BATCH__" || !Array.isArray(content.messages)) return;
      const parts = [];
      let at = 0;
      for (const [id, data, count] of content.messages) {
        parts.push([id, data, (buffers || []).slice(at, at + count)]);
        at += count;
      }
      // At once, as a message that came alone is handled, when nothing waits and the models are known.
      if (!waiting && parts.every(([id]) => models.has(id))) return deliver(parts);
      waiting++;
      queue = queue
        .then(async () => {
          for (const [id] of parts) {
            if (!models.has(id)) {
              try {
                models.set(id, await manager.get_model(id));
              } catch (error) {
                console.warn("ScanLab: a batched widget message has no widget:", id, error);
              }
            }
          }
          deliver(parts.filter(([id]) => models.has(id)));
        })
        .finally(() => waiting--);
    });
    model.send({ kind: "__READY__", frame });
  },
};
""".replace("__BATCH__", BATCH)
    .replace("__READY__", READY)
    .replace("__WELCOME__", WELCOME)
    .replace("__LIVE__", LIVE)
)


@dataclasses.dataclass
class _Collection:
    """What one thread's outermost `with` collects (a thread has a context of its own)."""

    batch: Batch
    token: contextvars.Token | None = None
    depth: int = 0
    messages: list = dataclasses.field(default_factory=list)  # (widget, msg, buffers)


_ACTIVE: contextvars.ContextVar[_Collection | None] = contextvars.ContextVar("scanlab_batch", default=None)


class Batch(anywidget.AnyWidget):
    """Collects the widget changes made inside `with batch:` and sends them as one message (module
    docstring). Nested `with`s, of this or another Batch, join the outermost one."""

    _esm = BATCH_ESM

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.frames: set[str] = set()  # the widget managers whose copy of this widget hears the kernel
        self.shown: set[str] = set()  # the widget managers that show a part of the page (`shown_in`)
        self.on_msg(self._on_front_end)

    @property
    def live(self) -> bool:
        """Whether a front end has this widget's code and hears the kernel."""
        return bool(self.frames)

    def _on_front_end(self, _widget, content, _buffers) -> None:
        # Collected messages go only to a front end shown to hear this widget: anywidget refuses
        # every message to a model whose code was not ready 2 s after the model was made, and such
        # a batch would never reach the page.
        kind = content.get("kind") if isinstance(content, dict) else None
        if kind == READY:
            self.send({"kind": WELCOME})
        elif kind == LIVE and len(self.frames) < FRAMES_KEPT:
            self.frames.add(_frame(content.get("frame")))

    def shown_in(self, frame) -> None:
        """A part of the page is shown by widget manager `frame` (widgets.access.Access's views say
        which). Where one has no live copy of this widget, as where each output has a manager of
        its own and models are made only where shown (Colab), a batch would not reach its views:
        until that copy hears the kernel, nothing is collected and each change goes as it is."""
        if len(self.shown) < FRAMES_KEPT:  # a visitor's page may send anything, and as often
            self.shown.add(_frame(frame))

    def __enter__(self) -> Batch:
        collection = _ACTIVE.get()
        if collection is None:
            collection = _Collection(self)
            collection.token = _ACTIVE.set(collection)
        collection.depth += 1
        return self

    def __exit__(self, *exc_info) -> None:
        collection = _ACTIVE.get()
        collection.depth -= 1
        if collection.depth == 0:
            _ACTIVE.reset(collection.token)
            _flush(collection)  # also after an error: the changes made so far are the widgets' state

    def flush(self) -> None:
        """Send now what this thread's batch has collected so far (before work that another thread
        finishes with messages of its own, which must come after them)."""
        collection = _ACTIVE.get()
        if collection is not None:
            _flush(collection)

    def _collects(self) -> bool:
        return self.live and self.shown <= self.frames and _connected(self)


def _frame(frame) -> str:
    """The name of a widget manager a front end's message gives (FRAME_JS), at most 40 characters
    of a visitor's text; "" for a front end that names none."""
    return frame[:40] if isinstance(frame, str) else ""


def _flush(collection: _Collection) -> None:
    """Send what was collected: one message as it is, more as one message to the batch's front end
    (or each as it is, when that has closed)."""
    messages, collection.messages = collection.messages, []
    messages = [(w, msg, buffers) for w, msg, buffers in messages if _connected(w)]  # not closed since
    batch = collection.batch
    if len(messages) == 1 or not _connected(batch):
        for message in messages:
            _send(*message)
    elif messages:
        content = {"kind": BATCH, "messages": [[w.model_id, msg, len(b)] for w, msg, b in messages]}
        buffers = [b for *_, own in messages for b in own]
        _send(batch, {"method": "custom", "content": content}, buffers)


def _connected(widget) -> bool:
    """Whether ipywidgets' `_send` would send `widget`'s messages anywhere (a comm with a kernel)."""
    comm = widget.comm
    return comm is not None and (comm.kernel is not None if hasattr(comm, "kernel") else True)


def _batching_send(widget, msg, buffers=None):
    collection = _ACTIVE.get()
    if collection is not None:
        batch = collection.batch
        if msg.get("method") == "update" and widget is not batch and batch._collects():
            if _connected(widget):  # else ipywidgets would send it nowhere
                # Copied: the arrays behind them may change before the batch goes.
                collection.messages.append((widget, msg, [bytes(memoryview(b)) for b in buffers or ()]))
            return
        _flush(collection)  # what came before goes first
    _send(widget, msg, buffers)


# ipywidgets' own sender, which `install` wraps (also when this module is imported again).
_send = _batching_send.original = getattr(ipw.Widget._send, "original", ipw.Widget._send)


def install() -> None:
    """Route ipywidgets' messages through the active Batch, if any (idempotent)."""
    if ipw.Widget._send is not _batching_send:
        ipw.Widget._send = _batching_send


class Unbatched(contextlib.nullcontext):
    """Stands in for a Batch where there is none: each change goes as it is made."""

    def flush(self) -> None:
        pass


def or_unbatched(batch: Batch | None) -> Batch | Unbatched:
    """`batch`, or where it is None something with its `with` and `flush` that batches nothing."""
    return batch if batch is not None else Unbatched()


def batched(method):
    """Run the method inside `with self.batch:`."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self.batch:
            return method(self, *args, **kwargs)

    return run
