"""The chart layer: a Plotly figure held by the kernel and drawn by Plotly.js in the browser.

A `Surface` is an anywidget whose state is the whole figure, `data` (a list of trace dicts) and
`plot_layout` (a dict), in Plotly.js's own JSON; numpy arrays travel as binary buffers in Plotly's
typed-array form. Its front end (widgets/surface.js) draws that state with Plotly.js's documented
functions: Plotly.animate without a redraw when only the points of scatter traces moved,
Plotly.relayout when only the layout changed, Plotly.react otherwise. Because the state is the
figure and not a stream of edits, a chart that is drawn late, or whose page was busy while changes
came, draws what the kernel last computed.

A figure is written as plotly.py's `go.Figure` (validated there, once) and handed to a Surface by
a maker (`surface_maker`); after that `send` changes its traces and layout in place, and sends
nothing when nothing changed. Plotly.js itself comes from this server once per browser
(`plotly_url`, PLOTLY_PATH) or, in JupyterLab, inside each chart's module.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import math
import re
import threading
from importlib import resources
from pathlib import Path

import anywidget
import numpy as np
import plotly.graph_objects as go
import traitlets

SURFACE_JS = resources.files("widgets").joinpath("surface.js").read_text(encoding="utf-8")

PLOTLY_GZ = resources.files("widgets").joinpath("vendor/plotly.js/plotly-cartesian.min.js.gz")
"""Plotly.js's cartesian bundle as published (npm: plotly.js-cartesian-dist-min, `make plotly-js`), of the
version plotly.py ships (tests/test_explorer.py checks): every trace type here (TRACE_TYPES) in
1.5 MB, where plotly.py's full bundle is 4.8 MB. A first visit parses it before any chart draws.
Kept gzipped (0.5 MB installed): it is others' code, not a module of ours (`plotly_js`)."""


def plotly_js() -> str:
    """The bundle's text (1.5 MB), read and unzipped at each call: only JupyterLab's chart module
    and `make run`'s copy need it, once each."""
    return gzip.decompress(PLOTLY_GZ.read_bytes()).decode("utf-8")


with PLOTLY_GZ.open("rb") as _file, gzip.open(_file, "rt", encoding="utf-8") as _text:
    PLOTLY_VERSION = re.search(r"plotly\.js \(cartesian - minified\) v([0-9.]+)", _text.read(200))[1]

PLOTLY_PATH = f".cache/static/plotly-cartesian-{PLOTLY_VERSION}.min.js"
"""Where `make run` (tools/plotly_bundle.py) puts `plotly_js()`, relative to the notebook's folder; the
dashboard serves it at <server>/voila/files/PLOTLY_PATH (voila.json allows exactly such files)."""

# The kinds of numpy arrays sent as they are, by Plotly's typed-array names (plotly.py's JSON of a
# figure writes small integers in the narrowest of them).
_DTYPES = {
    "float64": "f8",
    "float32": "f4",
    "int32": "i4",
    "uint32": "u4",
    "int16": "i2",
    "uint16": "u2",
    "int8": "i1",
    "uint8": "u1",
}
_CODES = {code: np.dtype(name) for name, code in _DTYPES.items()}


TOOLBAR = {"displaylogo": False, "modeBarButtons": [["toImage", "zoom2d", "resetScale2d"]]}
"""Every chart's Plotly.js toolbar (its modebar): download PNG, zoom, reset axes, and nothing else.
Plotly.js's own list also holds "Share chart...", which uploads the figure to an outside service,
beside buttons (pan, lasso, spike lines) that change nothing a lesson needs."""


def _to_json(value, widget=None):
    """`value` (trace dicts, a layout) as the JSON the front end reads: numpy arrays as Plotly's
    typed-array form with their bytes as a binary buffer (int64 as int32 when it fits, float16 and
    others as float64), numpy scalars as numbers, tuples as lists, and NaN or infinite floats as
    None (JSON has neither; Plotly draws None as a gap)."""
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, dict):
        return {name: _to_json(inner) for name, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(inner) for inner in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iu" and value.dtype.name not in _DTYPES:
            fits = value.size == 0 or (value.min() >= -(2**31) and value.max() < 2**31)
            value = value.astype(np.int32 if fits else np.float64)
        elif value.dtype.name not in _DTYPES:
            if value.dtype.kind not in "fb":
                return _to_json(value.tolist())  # strings, objects: as a list
            value = value.astype(np.float64)
        value = np.ascontiguousarray(value)
        spec = {"dtype": _DTYPES[value.dtype.name], "bdata": memoryview(value).cast("B")}
        if value.ndim != 1:
            spec["shape"] = ", ".join(str(n) for n in value.shape)
        return spec
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _from_plotly_json(value):
    """plotly.py's JSON of a figure (`to_plotly_json`) with its typed-array forms, whose bytes are
    base64 text, as numpy arrays: the values `send` compares and tests read."""
    if isinstance(value, dict):
        if (
            value.keys() >= {"dtype", "bdata"}
            and isinstance(value["bdata"], str)
            and value["dtype"] in _CODES
        ):
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=_CODES[value["dtype"]]).copy()
            shape = value.get("shape")
            return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
        return {key: _from_plotly_json(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_from_plotly_json(inner) for inner in value]
    return value


def plain_text(markup: str) -> str:
    """The text of a line of our own HTML (tags dropped, line breaks as "; ", entities decoded)."""
    text = re.sub(r"<[^>]+>", " ", markup.replace("<br>", "; "))
    text = re.sub(r"\s+", " ", html.unescape(text))
    return re.sub(r" ([:;,.)])", r"\1", text).strip()


class Surface(anywidget.AnyWidget):
    """One chart. `data` and `plot_layout` are the figure as the page draws it (module docstring);
    change them with `send`. `on_click(callback)` calls callback(points) for a click on a point,
    points a list of {"trace": index, "x": ..., "y": ...}. `revision` counts the changes sent; the
    chart's element is marked data-pending from a change's arrival until it is drawn."""

    _esm = SURFACE_JS.replace("__PLOTLY__", "", 1)  # a page with Plotly.js already: see `surface_maker`
    plotly_js: str | None = None  # where the module loads Plotly.js from (`plotly_url`); None: inside it
    data = traitlets.List().tag(sync=True, to_json=_to_json)
    plot_layout = traitlets.Dict().tag(sync=True, to_json=_to_json)
    config = traitlets.Dict().tag(sync=True)
    revision = traitlets.Int(0).tag(sync=True)
    # The chart's text alternative: what it shows now, in a sentence or two, announced by a screen
    # reader as the name of the chart's figure (role="figure"); "" for none.
    alt = traitlets.Unicode("").tag(sync=True)

    def __init__(self, figure: go.Figure, *, config: dict | None = None, **kwargs):
        spec = _from_plotly_json(figure.to_plotly_json())
        title = (spec["layout"].get("title") or {}).get("text") or ""
        super().__init__(
            data=spec["data"],
            plot_layout=spec["layout"],
            config={**TOOLBAR, **(config or {})},
            **{"alt": plain_text(title), **kwargs},  # a chart is named by its title until told more
        )
        self._lock = threading.RLock()  # the map's worker sends too
        self._clicks = []
        self.on_msg(self._on_page)

    def set_state(self, sync_data) -> None:
        """A page's changes, less the figure's: `data`, `plot_layout`, `config`, `revision` and
        `alt` are the kernel's alone (a visitor can send any widget any state, and the front end
        sends none)."""
        mine = {"data", "plot_layout", "config", "revision", "alt"}
        super().set_state({key: value for key, value in sync_data.items() if key not in mine})

    def figure(self) -> go.Figure:
        """The figure as the page draws it, as a plotly.py Figure (validated: for tests, exports)."""
        return go.Figure({"data": self.data, "layout": self.plot_layout})

    def get(self, path: str):
        """The layout's value at a dotted path ("xaxis.range"), None where it is unset."""
        node = self.plot_layout
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def on_click(self, callback) -> None:
        self._clicks.append(callback)

    def _on_page(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict) and content.get("kind") == "click":
            points = [p for p in content.get("points") or [] if isinstance(p, dict)]
            for callback in self._clicks:
                callback(points)

    def send_changes(self, traces: list[dict], indexes, layout: dict | None = None) -> None:
        """See `send`."""
        with self._lock:
            data = list(self.data)
            traces_changed = False
            for index, fields in zip(indexes, traces, strict=True):
                trace = data[index]
                new = {key: value for key, value in fields.items() if not _same(trace.get(key), value)}
                if new:
                    data[index] = {**trace, **new}
                    traces_changed = True
            plot_layout = self.plot_layout
            for path, value in (layout or {}).items():
                plot_layout = _with_path(plot_layout, path, value)
            if not traces_changed and plot_layout is self.plot_layout:
                return
            with self.hold_sync():
                if traces_changed:
                    self.data = data
                if plot_layout is not self.plot_layout:
                    self.plot_layout = plot_layout
                self.revision += 1


def send(figure: Surface, traces: list[dict], indexes, layout: dict | None = None) -> None:
    """Set `traces` (fields by trace, for the traces at `indexes`) and `layout` (dotted paths, None
    to unset) in `figure`, and send the new figure to the page, in one message; nothing when
    nothing changed. The values come from this project's charts (float64 and int32 arrays, lists,
    numbers, strings), so they go in as they are, unvalidated."""
    figure.send_changes(traces, indexes, layout)


def _with_path(layout: dict, path: str, value) -> dict:
    """`layout` with layout["a"]["b"] = value for the dotted path "a.b" (None unsets it), as a new
    dict sharing what did not change; `layout` itself when that changes nothing."""
    if "[" in path:
        raise ValueError(f"path must be dotted property names, without indexes, got {path!r}")
    head, _, rest = path.partition(".")
    if value is None and head not in layout:
        return layout  # nothing to unset
    if rest:
        inner = layout.get(head)
        inner = inner if isinstance(inner, dict) else {}
        updated = _with_path(inner, rest, value)
        return layout if updated is inner and head in layout else {**layout, head: updated}
    if value is None:
        return {key: v for key, v in layout.items() if key != head} if head in layout else layout
    if head in layout and _same(layout[head], value):
        return layout
    return {**layout, head: value}


def _same(old, new) -> bool:
    """Whether a field already holds `new` (NaN equal to NaN)."""
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        if old is None or new is None:
            return False
        old, new = np.asarray(old), np.asarray(new)
        if old.shape != new.shape or old.dtype.kind != new.dtype.kind:
            return False
        return bool(np.array_equal(old, new, equal_nan=old.dtype.kind == "f"))
    try:
        return bool(old == new)
    except ValueError:  # lists holding arrays
        return False


def plotly_url(base_url: str = "/", root: Path = Path()) -> str | None:
    """The address of Plotly.js (PLOTLY_PATH) on a Voila server whose pages are under `base_url`,
    as a path from the server's root, so that it is the page's own host and scheme whatever address
    the visitor used; None when the file is missing (then each chart's module holds Plotly.js).

    `base_url` is Voila's VOILA_BASE_URL, the prefix the browser sees: behind JupyterHub or Binder
    it is /user/<name>/, while VOILA_SERVER_URL stays "/" under the server extension."""
    if not (root / PLOTLY_PATH).is_file():
        return None
    server = "/" + base_url.strip("/") + "/" if base_url.strip("/") else "/"
    return f"{server}voila/files/{PLOTLY_PATH}"


@functools.cache
def _surface_class(url: str | None) -> type[Surface]:
    """Surface, with a module that loads Plotly.js from `url`, or holds it (url None)."""
    if url is None:
        # JupyterLab: Plotly.js (1.5 MB) in each chart's module, run once per page (it sets window.Plotly).
        esm = f"if (!window.Plotly) {{\n{plotly_js()}\n}}\n{Surface._esm}"
    else:
        esm = SURFACE_JS.replace('"__PLOTLY__"', json.dumps(url), 1)
    return type("Surface", (Surface,), {"_esm": esm, "plotly_js": url, "__module__": __name__})


def surface_maker(url: str | None = None, *, prepare=None, config: dict | None = None):
    """A chart maker, called as make(data=..., layout=...) like go.Figure, that returns a Surface
    whose Plotly.js comes from `url` (`plotly_url`), or inside its module when None. `prepare`,
    if given, changes each go.Figure before it is sent (widgets.projector.enlarge); `config` is
    Plotly.js's."""
    surface = _surface_class(url)

    def make(data=None, layout=None) -> Surface:
        figure = go.Figure(data=data, layout=layout)
        if prepare is not None:
            prepare(figure)
        return surface(figure, config=config)

    return make


__all__ = ["PLOTLY_PATH", "TOOLBAR", "Surface", "plotly_url", "send", "surface_maker"]
