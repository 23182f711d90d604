"""Stills: the charts as plain HTML and SVG in the page Voila sends, seen before its scripts run.

A dashboard's live charts come after Voila's scripts, the page's kernel connection and Plotly.js:
about 1.8 s after a visit starts, where a bare widget page shows its slider at about 1.4 s. The
page's HTML itself is complete at about 0.3 s (the preheated kernel has run the notebook up to
the visitor's request). So a cell that shows charts carries, beside its widget, a still of it
(STILL_MIME in its output, `Stilled`): the same boxes, the same figure specs (each Surface's
`data` and `plot_layout`, with its ranges, ticks and titles) drawn as SVG lines in boxes of the
charts' own sizes. serving's page template writes it into the page as it is, shows it at once,
and removes it when the cell's live charts have drawn, in the same place: nothing below moves.
Only a served dashboard makes stills; JupyterLab shows the widgets alone.

A still is a picture of the run, not its controls: it has no hover, zoom or clicks, and each chart
in it is an image named by the chart's text alternative (`Surface.alt`).
"""

from __future__ import annotations

import html
import math
import warnings
from importlib import resources

import ipywidgets as ipw
import numpy as np

from widgets.axes import log_ticks, tick_label
from widgets.surface import Surface, plain_text

STILL_MIME = "application/vnd.scanlab.still+html"
"""The output's key for a still (serving's page template reads it; JupyterLab ignores it)."""

STILL_CSS = resources.files("widgets").joinpath("still.css").read_text(encoding="utf-8")

VIEW = 1000.0
"""The SVG's own units across and down a plot area, stretched to the area's px size."""

# Plotly's defaults where a layout leaves them: the text's colour (plotly_white's) and the length of
# an x axis, which Plotly spaces its ticks by (the page's width is not known here: this is a chart's
# beside another at 1440 px; one that takes its row has twice that).
COLOUR = "#2a3f5f"
X_LENGTH = 470
MARKER_GLYPHS = {"x": "✖", "star": "★", "diamond": "◆", "triangle-down": "▼", "square": "■"}


class Stilled(ipw.VBox):
    """A VBox whose cell output carries a still of it (STILL_MIME) beside the widget, when `still`
    is set: a function returning the still's HTML, called when the cell shows the box."""

    still = None

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if self.still is not None and bundle:
            # A still is a preview: one that fails must not cost the cell its live widget (IPython
            # drops a bundle whose maker raises).
            try:
                bundle[STILL_MIME] = self.still()
            except Exception as error:  # noqa: BLE001
                warnings.warn(f"ScanLab: no still for this cell: {error!r}", stacklevel=2)
        return bundle


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _ticks_every(span: float, length: float, per_px: int) -> float:
    """About how far apart Plotly puts an axis's ticks where the layout sets none (plotly.js
    axes.js, autoTicks): one tick per `per_px` px (80 across, 40 down), 5 to 10 ticks; on a log
    axis, in decades. `_nice_ticks` rounds it as Plotly does."""
    count = min(max(length / per_px, 4), 9) + 1
    return span / count


def _nice_ticks(low: float, high: float, rough: float) -> list[float]:
    """The round values from low to high, `rough` apart rounded up to 2, 5 or 10 times a power of ten."""
    if not (math.isfinite(rough) and rough > 0):
        return []
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in (2, 5, 10) if m * power >= rough)
    first = math.ceil(low / step)
    return [k * step for k in range(first, math.floor(high / step) + 1)]


def _tick_text(value: float, step: float) -> str:
    digits = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    text = f"{value:.{digits}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text  # Plotly's 1.5, 1, 0.5
    return "0" if float(text) == 0 else text


class _Axis:
    """One axis: where a value lands across its plot area (0 to VIEW), and its labelled ticks.
    `length` is the axis's length in px."""

    def __init__(self, spec: dict, name: str, length: float):
        self.log = spec.get("type") == "log"
        low, high = (spec.get("range") or [0.0, 1.0])[:2]
        self.low, self.high = float(low), float(high)
        self.flip = name == "yaxis"  # SVG's y grows downwards
        vals, text = spec.get("tickvals"), spec.get("ticktext")
        rough = _ticks_every(abs(self.high - self.low), length, 80 if name == "xaxis" else 40)
        if spec.get("tickmode") == "array" and vals is not None and len(vals):
            vals = [float(v) for v in np.asarray(vals, dtype=np.float64)]
            text = [str(t) for t in text] if text is not None else [f"{v:g}" for v in vals]
            pairs = list(zip(vals, text, strict=False))
        elif self.log and rough > 0.7:  # whole decades, every ceil(rough)-th
            every = math.ceil(rough)
            decades = range(math.ceil(self.low / every) * every, math.floor(self.high) + 1, every)
            pairs = [(10.0**k, tick_label(10.0**k)) for k in decades]
        elif self.log:
            pairs = [(v, tick_label(v)) for v in log_ticks(self.low, self.high)]
        else:
            ticks = _nice_ticks(self.low, self.high, rough)
            step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
            pairs = [(v, _tick_text(v, step)) for v in ticks]
        at = [(float(self.share(v)), t) for v, t in pairs]
        self.ticks = [(share, t) for share, t in at if 0 <= share <= 1]

    def share(self, value) -> np.ndarray | float:
        """Where `value` lands along the axis, 0 at its start and 1 at its end (NaN: nowhere)."""
        v = np.asarray(value, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.log:
                v = np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan)
            out = (v - self.low) / (self.high - self.low) if self.high != self.low else v * np.nan
        return 1 - out if self.flip else out


def _path(x: np.ndarray, y: np.ndarray) -> str:
    """An SVG path through the points, broken where one is not finite."""
    parts, pen = [], "M"
    for a, b in zip(x * VIEW, y * VIEW, strict=True):
        if not (math.isfinite(a) and math.isfinite(b)):
            pen = "M"
            continue
        parts.append(f"{pen}{_number(a)} {_number(b)}")
        pen = "L"
    return "".join(parts)


DASHES = {"dash": "8 5", "dot": "2 4", "dashdot": "8 4 2 4", "longdash": "14 6"}


def _stroke(trace: dict, width: float | None = None) -> str:
    """A trace's line as SVG stroke attributes (its colour, or its markers', and dashes); `width`
    instead of the line's (a legend's sample)."""
    style = trace.get("line") or {}
    colour = html.escape(style.get("color") or (trace.get("marker") or {}).get("color") or COLOUR)
    dash = DASHES.get(style.get("dash") or "solid")
    attributes = f'stroke="{colour}" stroke-width="{width or style.get("width", 2)}"'
    return attributes + (f' stroke-dasharray="{dash}"' if dash else "")


def _shown(trace: dict) -> bool:
    return trace.get("visible", True) is True and (trace.get("type") or "scatter") == "scatter"


def _trace(trace: dict, xaxis: _Axis, yaxis: _Axis) -> tuple[str, str]:
    """A scatter trace as an SVG path (its line) and HTML marks (its markers)."""
    x = xaxis.share(trace.get("x", []) if trace.get("x") is not None else [])
    y = yaxis.share(trace.get("y", []) if trace.get("y") is not None else [])
    n = min(np.size(x), np.size(y))
    x, y = np.ravel(x)[:n], np.ravel(y)[:n]
    mode = trace.get("mode", "lines")
    line, marks = "", []
    if "lines" in mode and n > 1:
        line = f'<path d="{_path(x, y)}" {_stroke(trace)}/>'
    if "markers" in mode:
        marker = trace.get("marker") or {}
        size = float(marker.get("size", 6))
        fill = marker.get("color") or COLOUR
        ring = (marker.get("line") or {}).get("color")
        glyph = MARKER_GLYPHS.get(marker.get("symbol") or "")
        for a, b in zip(x, y, strict=True):
            if not (math.isfinite(a) and math.isfinite(b)) or not (-0.05 <= a <= 1.05 and -0.05 <= b <= 1.05):
                continue
            place = f"left:{a * 100:.2f}%;top:{b * 100:.2f}%"
            if glyph:
                # A glyph is smaller than its font's em: 1.3 em looks as large as Plotly's marker.
                look = f"color:{html.escape(fill)};font-size:{size * 1.3:.0f}px"
                marks.append(f'<span class="g" style="{place};{look}">{glyph}</span>')
            else:
                edge = (
                    f"border:{(marker.get('line') or {}).get('width', 1)}px solid {html.escape(ring)};"
                    if ring
                    else ""
                )
                marks.append(
                    f'<span class="m" style="{place};width:{size:.0f}px;height:{size:.0f}px;'
                    f'background:{html.escape(fill)};{edge}"></span>'
                )
    return line, "".join(marks)


def _title_lines(text: str) -> tuple[str, str]:
    """A Plotly title's first line and the rest (our titles: "Title<br><sup>more</sup>")."""
    first, _, rest = (text or "").partition("<br>")
    return html.escape(plain_text(first)), html.escape(plain_text(rest))


def _annotation(note: dict, xaxis: _Axis, yaxis: _Axis) -> str:
    """A layout's annotation: its text where Plotly puts it, in paper or axis units; an arrow
    pointing left (`ax` px, the landscape's "off the chart") as a line before the text."""
    x = note.get("x", 0.5) if note.get("xref") == "paper" else xaxis.share(note.get("x", 0))
    y = note.get("y", 0.5) if note.get("yref") == "paper" else yaxis.share(note.get("y", 0))
    if note.get("yref") == "paper":
        y = 1 - float(y)
    x, y = float(x), float(y)
    if not (math.isfinite(x) and math.isfinite(y)):
        return ""
    font = note.get("font") or {}
    colour = html.escape(font.get("color") or COLOUR)
    shift_x = {"left": "0", "right": "-100%"}.get(note.get("xanchor"), "-50%")
    shift_y = {"top": "0", "bottom": "-100%"}.get(note.get("yanchor"), "-50%")
    lines = "<br>".join(html.escape(plain_text(part)) for part in str(note.get("text") or "").split("<br>"))
    arrow = ""
    if note.get("showarrow", True) and note.get("ay", 0) == 0 and note.get("ax", 0) > 0:
        arrow = f'<span class="arrow" style="width:{note["ax"]}px;border-color:{colour}"></span>'
    return (
        f'<div class="note" style="left:{x * 100:.2f}%;top:{y * 100:.2f}%;'
        f"transform:translate({shift_x},{shift_y});font-size:{font.get('size', 12)}px;color:{colour};"
        f"text-align:{html.escape(note.get('align') or 'center')};"
        f'background:{html.escape(note.get("bgcolor") or "transparent")}">{arrow}{lines}</div>'
    )


def chart_still(chart: Surface, x_length: float = X_LENGTH) -> str:
    """A still of one chart: its figure's scatter traces as an SVG in a box of the chart's height,
    with its title, axes, ticks, notes and legend (HTML). `x_length`: about how long the x axis
    will be, in px, which Plotly spaces ticks by."""
    layout, data = chart.plot_layout, chart.data
    height = float(layout.get("height") or 380)
    m = {"l": 80, "r": 80, "t": 100, "b": 80, **(layout.get("margin") or {})}
    font = float(((layout.get("font") or {}).get("size")) or 12)
    xaxis = _Axis(layout.get("xaxis") or {}, "xaxis", x_length)
    yaxis = _Axis(layout.get("yaxis") or {}, "yaxis", height - m["t"] - m["b"])
    title = layout.get("title") or {}
    head, sub = _title_lines(title.get("text") or "")
    title_size = float((title.get("font") or {}).get("size") or font * 1.4)
    lines, marks, keys, drawn = [], [], [], 0
    for trace in data:
        if not _shown(trace):
            continue
        line, mark = _trace(trace, xaxis, yaxis)
        lines.append(line)
        marks.append(mark)
        drawn += bool(line or mark)
        if trace.get("showlegend", True) is not False and trace.get("name") and (line or mark):
            keys.append(trace)
    grid = "".join(f'<path d="M{_number(s * VIEW)} 0V{VIEW:.0f}"/>' for s, _ in xaxis.ticks) + "".join(
        f'<path d="M0 {_number(s * VIEW)}H{VIEW:.0f}"/>' for s, _ in yaxis.ticks
    )
    tick_font = f"font-size:{font:.0f}px"
    labels = "".join(
        f'<span class="x" style="left:{s * 100:.2f}%;{tick_font}">{html.escape(t)}</span>'
        for s, t in xaxis.ticks
    ) + "".join(
        f'<span class="y" style="top:{s * 100:.2f}%;{tick_font}">{html.escape(t)}</span>'
        for s, t in yaxis.ticks
    )
    # Plotly's own rule where the layout says nothing: a legend once two traces have points.
    shown_legend = layout.get("showlegend", drawn > 1) and keys
    notes = "".join(_annotation(note, xaxis, yaxis) for note in layout.get("annotations") or ())
    legend = ""
    if shown_legend:
        items = []
        for trace in keys:
            sample = f'<svg width="30" height="10"><path d="M0 5H30" {_stroke(trace, width=2)}/></svg>'
            items.append(f"<span>{sample}{html.escape(plain_text(str(trace['name'])))}</span>")
        legend = f'<div class="legend" style="{tick_font}">{"".join(items)}</div>'
    x_title = html.escape(plain_text(((layout.get("xaxis") or {}).get("title") or {}).get("text") or ""))
    y_title = html.escape(plain_text(((layout.get("yaxis") or {}).get("title") or {}).get("text") or ""))
    area = f"left:{m['l']}px;right:{m['r']}px;top:{m['t']}px;bottom:{m['b']}px"
    alt = html.escape(chart.alt or plain_text(title.get("text") or "a chart"), quote=True)
    axis_font = f"font-size:{font * 14 / 12:.0f}px"
    title_top = max(m["t"] / 2 - title_size, 4)
    return (
        f'<div class="scanlab-still-chart" role="img" aria-label="{alt}" style="height:{height:.0f}px">'
        f'<div class="title" style="font-size:{title_size:.0f}px;top:{title_top:.0f}px">'
        f"{head}"
        + (f'<br><small style="font-size:{title_size * 0.7:.0f}px">{sub}</small>' if sub else "")
        + "</div>"
        f'<div class="area" style="{area}">'
        f'<svg viewBox="0 0 {VIEW:.0f} {VIEW:.0f}" preserveAspectRatio="none" aria-hidden="true">'
        f'<g class="grid">{grid}</g>{"".join(lines)}</svg>{"".join(marks)}{labels}{notes}'
        f'<div class="xtitle" style="{axis_font}">{x_title}</div>'
        f'<div class="ytitle" style="{axis_font};left:{16 - m["l"]}px">{y_title}</div>{legend}</div></div>'
    )


def _classes(widget) -> str:
    return " ".join(html.escape(c) for c in widget.get_state("_dom_classes")["_dom_classes"])


def _box_style(widget) -> str:
    layout = widget.layout
    parts = {
        "display": "none" if layout.display == "none" else None,
        "flex": layout.flex,
        "flex-flow": layout.flex_flow,
        "min-width": layout.min_width,
        "width": layout.width,
    }
    return ";".join(f"{k}:{html.escape(str(v))}" for k, v in parts.items() if v)


def still(widget, x_length: float = X_LENGTH) -> str:
    """The HTML of a still of `widget` and what it holds: boxes as flex boxes of the same layout,
    charts (Surface) by `chart_still`, HTML widgets as their HTML, a closed Accordion as its title
    bar, anything else as an empty box."""
    classes, style = _classes(widget), _box_style(widget)
    if widget.layout.display == "none":  # not drawn, nor what it holds
        return f'<div class="{classes}" style="{style}"></div>'
    if widget.layout.flex and widget.layout.flex.endswith("100%"):  # a row of its own
        x_length = 2 * X_LENGTH
    if isinstance(widget, Surface):
        return f'<div class="{classes}" style="{style}">{chart_still(widget, x_length)}</div>'
    if isinstance(widget, ipw.Accordion):
        titles = "".join(
            f'<div class="scanlab-still-title">{html.escape(t or "")}</div>' for t in widget.titles
        )
        return f'<div class="scanlab-still-accordion {classes}" style="{style}">{titles}</div>'
    if isinstance(widget, ipw.HTML):
        return (
            f'<div class="widget-html {classes}" style="{style}">'
            f'<div class="widget-html-content">{widget.value}</div></div>'
        )
    if isinstance(widget, ipw.Box):
        kind = "scanlab-still-hbox" if isinstance(widget, ipw.HBox) else "scanlab-still-vbox"
        inner = "".join(still(child, x_length) for child in widget.children)
        return f'<div class="{kind} {classes}" style="{style}">{inner}</div>'
    return f'<div class="{classes}" style="{style}"></div>'


def controls_still(css: str | None = None) -> str:
    """The control panel's still: its place, which the page's template makes the controls' column at
    once; the controls themselves come live (a still control would take a click and drop it).
    `css`: as `page_still`'s."""
    return f'{_styles(css)}<div class="scanlab-still-controls">Loading the controls…</div>'


def page_still(widget, css: str | None = None) -> str:
    """`still(widget)` as a cell's still (STILL_MIME). With `css` (the explorer's, which its widgets
    bring later) the styles the stills need come first; a page needs them once, None leaves them
    out."""
    return f"{_styles(css)}{still(widget)}"


def _styles(css: str | None) -> str:
    return "" if css is None else f"<style>{css}{STILL_CSS}</style>"


__all__ = ["STILL_CSS", "STILL_MIME", "Stilled", "chart_still", "controls_still", "page_still", "still"]
