"""What the under-the-hood panels share: their colours and chart margin; a control's `Range`, declared
once and read both by the widget (`ranged`) and by the check of every value a visitor sends
(`clamped`); the notice a bad value gets; `watch`, which pins a panel's controls and wires them; and
the per-way columns, with their jaxprs, of the two "where does it live" panels (`ways`)."""

from __future__ import annotations

import html
import math
from typing import NamedTuple

import ipywidgets as ipw

from widgets.chart import COLORS, GREY
from widgets.code import source_html
from widgets.controls import pin

# The explorer's colours (widgets.figures.COLORS), with two more of 3:1 on white at least.
PALETTE = (COLORS["sum"], COLORS["mean"], COLORS["optimum"], "#CC79A7", GREY, COLORS["diverged"])
NOTICE = '<span class="scanlab-notice">&#9888; {}</span>'

# The sides of widgets.figures.MARGIN that the hood's line charts need wider as their panels open:
# log-scale tick labels ("100M", "0.001"; Plotly widened the left margin to 68 to 71 px) and an x
# axis whose range ends on a tick (the steps' "200": the right to 21 to 23 px), with room to spare
# for another machine's fonts. A margin Plotly widens costs the chart a second drawing; the pairs
# side by side keep equal plot widths. Wider labels later (a measurement, other steps, a loss that
# grows by orders of magnitude) can still widen a margin, drawn twice then as before.
HOOD_MARGIN = {"l": 78, "r": 28}


class Range(NamedTuple):
    """A numeric control's bounds and first value, low <= default <= high, in the value's own units
    (a log slider's too: `bounds` takes the logarithms). `step` is the slider's, None for the
    widget's own; `log` makes `bounds` a base-10 log slider's."""

    low: float
    high: float
    default: float
    step: float | None = None
    log: bool = False


def bounds(limits: Range) -> dict:
    """The constructor arguments of an ipywidgets control over `limits`: value, min, max (a log
    slider's base and exponents) and step when the range has one."""
    if limits.log:
        arguments = {
            "value": limits.default,
            "base": 10,
            "min": math.log10(limits.low),
            "max": math.log10(limits.high),
        }
    else:
        arguments = {"value": limits.default, "min": limits.low, "max": limits.high}
    if limits.step is not None:
        arguments["step"] = limits.step
    return arguments


def ranged(kind, limits: Range, description: str, tooltip: str | None = None, **extra):
    """A `kind` control (an ipywidgets slider or bounded box class) over `limits`, at its default,
    with its description, its tooltip if given and `extra` constructor arguments."""
    control = kind(**bounds(limits), description=description, **extra)
    if tooltip is not None:
        control.tooltip = tooltip
    return control


def clamped(widget, limits: Range) -> tuple[float, str | None]:
    """The widget's value as a finite number in [limits.low, limits.high]: a visitor can send
    anything over the widget protocol. Returns (value, notice or None) and writes a fixed value
    back (the default for what is not a number)."""
    low, high, default = limits.low, limits.high, limits.default
    raw = widget.value
    try:
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        value = math.nan
    if not math.isfinite(value):
        fixed, words = default, f"{widget.description} = {str(raw)[:40]!s} is not a number; using {default}."
    elif not low <= value <= high:
        fixed = min(max(value, low), high)
        words = f"{widget.description} = {value:g} is outside {low:g} to {high:g}; using {fixed:g}."
    else:
        return value, None
    widget.value = type(widget.value)(fixed) if isinstance(widget.value, (int, float)) else fixed
    return fixed, words


def notice(text: str) -> str:
    """`text`, escaped, as the page's warning notice (HTML)."""
    return NOTICE.format(html.escape(text))


def notices_html(notices, *, trailing: bool = False) -> str:
    """The notices that are not None, as HTML lines ("" for none); `trailing` ends each with a break,
    for notices put before other words."""
    lines = [notice(words) for words in notices if words]
    if trailing:
        return "".join(line + "<br>" for line in lines)
    return "<br>".join(lines)


def jaxpr_html(jaxpr: str) -> str:
    """A jaxpr as JAX prints it, in a closed "jaxpr" disclosure that scrolls."""
    return (
        '<details><summary>jaxpr</summary><pre style="font-size: 11px; max-height: 22em; '
        f'overflow: auto; background: #f7f7f9; padding: 4px">{html.escape(jaxpr)}</pre></details>'
    )


def ways(notes: dict, functions: dict) -> tuple[dict, dict, ipw.HBox]:
    """The columns of a "where does it live" panel, one per way (the keys of `notes`, in order): its
    name and note, its source (`functions[name]`), then its result and jaxpr. Returns (results,
    jaxprs, row): the empty HTML widgets by way, for the panel to fill, and the row of columns."""
    results = {name: ipw.HTML() for name in notes}
    jaxprs = {name: ipw.HTML() for name in notes}
    columns = [
        ipw.VBox(
            [
                ipw.HTML(f"<h4>{name}</h4><p>{html.escape(note)}</p>"),
                ipw.HTML(source_html(functions[name])),
                results[name],
                jaxprs[name],
            ],
            layout={"width": "33%", "min_width": "320px", "padding": "0 6px"},
        )
        for name, note in notes.items()
    ]
    return results, jaxprs, ipw.HBox(columns, layout={"flex_flow": "row wrap"})


def watch(controls, callback) -> None:
    """Pin each control's bounds and options (widgets.controls.pin) and call `callback` on each
    change of its value."""
    for control in controls:
        pin(control)
        control.observe(callback, names="value")


__all__ = [
    "HOOD_MARGIN",
    "NOTICE",
    "PALETTE",
    "Range",
    "bounds",
    "clamped",
    "jaxpr_html",
    "notice",
    "notices_html",
    "ranged",
    "watch",
    "ways",
]
