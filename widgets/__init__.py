"""ScanLab's user interface: controls and Plotly figures over `core`."""

import os
import sys

if "VOILA_SERVER_URL" in os.environ and not {"plotly", "nbformat"} & sys.modules.keys():
    # A kernel that Voila started (it sets VOILA_SERVER_URL) only draws FigureWidgets. Plotly
    # imports nbformat when it is installed, for fig.show()'s notebook renderer, and nbformat's
    # schema checks import jsonschema's format checkers: 1.2 s of CPU and 21 MB in every kernel.
    # Plotly takes a failed import as "not installed"; fig.show() then refuses to render in this
    # kernel, which the dashboard never calls. A notebook kernel (JupyterLab) is left as it was.
    sys.modules["nbformat"] = None  # makes `import nbformat` raise ImportError
    try:
        import plotly.basewidget  # noqa: F401
    finally:
        del sys.modules["nbformat"]

from widgets import batch, validators
from widgets.exercise import exercise
from widgets.explorer import Explorer
from widgets.settings import DEFAULTS, PRESETS, Settings, from_query, sanitize, to_query

# Before the first figure is built (importing these builds none): Plotly then parses the entries of
# its validator table that figures use, not the whole table.
validators.install()
# Widget messages made inside a widgets.batch.Batch go as one (the explorer's callbacks).
batch.install()

__all__ = ["DEFAULTS", "PRESETS", "Explorer", "Settings", "exercise", "from_query", "sanitize", "to_query"]
