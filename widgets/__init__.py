"""ScanLab's user interface: controls and Plotly charts over `core`."""

# Before core is imported: `core` must be ScanLab's, not another project's package of that name.
from widgets import origin

origin.require_own()

# The lesson's deliberately wrong loop (every gradient taken at the starting weight), which app.ipynb
# draws with Explorer.draw_step: the lesson imports widgets only.
from core import accumulated_gradient_step
from widgets import batch, validators
from widgets.exercise import exercise
from widgets.explore import explore
from widgets.explorer import Explorer
from widgets.settings import DEFAULTS, PRESETS, Settings, from_query, sanitize, to_query

# Before the first figure is built (importing these builds none): Plotly then parses the entries of
# its validator table that figures use, not the whole table.
validators.install()
# Widget messages made inside a widgets.batch.Batch go as one (the explorer's callbacks).
batch.install()

__all__ = [
    "DEFAULTS",
    "accumulated_gradient_step",
    "PRESETS",
    "Explorer",
    "Settings",
    "exercise",
    "explore",
    "from_query",
    "sanitize",
    "to_query",
]
