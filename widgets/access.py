"""Names, roles and keyboard access for the views ipywidgets draws without them (widgets/access.js).

anywidget runs the module when the page creates the model, and the module labels every slider,
Play button and accordion header on the page as they appear; a page with several explorers still
installs the labelling once. The explorer puts a hidden view of its `Access` in each of its outputs
(`hidden_in`): where each output has a widget manager of its own and a model is made only where a
view of it is shown (Colab), each output then labels itself, and each view tells the explorer's
`widgets.batch.Batch` which manager shows that output.
"""

from __future__ import annotations

from importlib import resources

import anywidget

from widgets.batch import FRAME_JS, SHOWN

ACCESS_JS = FRAME_JS + resources.files("widgets").joinpath("access.js").read_text(encoding="utf-8")


class Access(anywidget.AnyWidget):
    """The page's accessibility pass (module docstring); it has no state, and its views are hidden.
    With `batch`, each view's widget manager is told to it (`Batch.shown_in`)."""

    _esm = ACCESS_JS.replace("__SHOWN__", SHOWN)

    def __init__(self, batch=None, **kwargs):
        super().__init__(layout={"display": "none"}, **kwargs)
        self._batch = batch
        self.on_msg(self._on_view)

    def _on_view(self, _widget, content, _buffers) -> None:
        if self._batch is not None and isinstance(content, dict) and content.get("kind") == SHOWN:
            self._batch.shown_in(content.get("frame"))

    def hidden_in(self, box):
        """`box` with a hidden view of this widget as its last child; returns `box`."""
        if self not in box.children:
            box.children = (*box.children, self)
        return box
