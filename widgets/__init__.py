"""ScanLab's user interface: controls and Plotly figures over `core`."""

from widgets.explorer import Explorer, build_app
from widgets.settings import DEFAULTS, PRESETS, Settings, from_query, sanitize, to_query

__all__ = ["DEFAULTS", "PRESETS", "Explorer", "Settings", "build_app", "from_query", "sanitize", "to_query"]
