"""Names, roles and keyboard access for the views ipywidgets draws without them (widgets/access.js).

`Access()` needs no display: anywidget runs its module when the page creates the model, and the
module labels every slider, Play button and accordion header on the page as they appear. The
explorer makes one; a page with several explorers still installs the labelling once.
"""

from __future__ import annotations

from importlib import resources

import anywidget

ACCESS_JS = resources.files("widgets").joinpath("access.js").read_text(encoding="utf-8")


class Access(anywidget.AnyWidget):
    """The page's accessibility pass (module docstring); it has no state and no view."""

    _esm = ACCESS_JS
