"""ScanLab's user interface: controls and Plotly figures over `core`."""

from widgets.exercise import exercise
from widgets.explorer import Explorer
from widgets.settings import DEFAULTS, PRESETS, Settings, from_query, sanitize, to_query

__all__ = ["DEFAULTS", "PRESETS", "Explorer", "Settings", "exercise", "from_query", "sanitize", "to_query"]
