// The one place the page reaches into ipywidgets' internals (docs/design.md, "A widget message
// lost with the connection"). A widget model sends its next change only once the kernel has said
// idle to its last one (WidgetModel._pending_msgs, @jupyter-widgets/base 6); changes made meanwhile
// wait in its buffer. A message lost with a dropped connection is never answered, so that model
// never sends again: measured, Play cut mid-tick stopped at step 97 of 100 and ignored every press
// after. So when the socket is back, `scanlabWaiting` notes each model's unanswered messages, before
// any answer the server kept for the page arrives; 3 s after the widget manager has the kernel's
// state (asked for after those answers and the moves queued offline, though an answer was seen to
// come 1.4 s after it), `scanlabUnstick` tells idle, as the kernel would have, to each model still
// waiting for as many messages as it was: those were lost. It then sends its buffered change; a
// model with none lost its last change. Checked for @jupyter-widgets/jupyterlab-manager 5.0.16
// (jupyterlab_widgets 3.0.17): tests/test_faults.py fails when that bundle changes, and where the
// fields are not there the page does nothing.

// Each model with unanswered messages, and how many.
window.scanlabWaiting = async (manager) => {
  const waiting = new Map();
  for (const id of Object.keys(manager.get_state_sync({ drop_defaults: true }).state)) {
    const model = await manager.get_model(id).catch(() => null); // closed since: skipped
    if (!model || typeof model._pending_msgs !== "number" || typeof model._handle_status !== "function") continue;
    if (model._pending_msgs > 0) waiting.set(model, model._pending_msgs);
  }
  return waiting;
};

// The models of `waiting` none of whose messages were answered since, told idle for those. Returns
// those whose last change was lost with them (nothing buffered after it to send instead).
window.scanlabUnstick = (waiting) => {
  const lost = [];
  for (const [model, count] of waiting) {
    if (model._pending_msgs < count) continue; // answered: it was not lost
    if (model._msg_buffer === null) lost.push(model);
    model._pending_msgs -= count - 1; // the messages sent since stay counted
    model._handle_status({ content: { execution_state: "idle" } }); // and the buffer goes
  }
  return lost;
};
