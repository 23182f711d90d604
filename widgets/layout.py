"""How the explorer's page is laid out: charts side by side where there is room, one to a row below
that; the sticky control panel; the page's CSS (explorer.css, and projector.css on a projector page)."""

from __future__ import annotations

from importlib import resources

import ipywidgets as ipw

from widgets.still import Stilled

EXPLORER_CSS = resources.files("widgets").joinpath("explorer.css").read_text(encoding="utf-8")
"""The control panel, status, notice and caption styles, and the projector view's larger text."""
PROJECTOR_CSS = resources.files("widgets").joinpath("projector.css").read_text(encoding="utf-8")
"""The notebook's text, larger on a projector page only. `body` makes the rule outrank JupyterLab's
own `.jp-RenderedHTMLCommon` wherever it loads. Not as `body:has(.scanlab-projector) ...` on every
page: that made Chromium recompute the style of every markdown cell whenever a text node changed
anywhere in the page (a slider's readout at each move: 0.8 to 4 ms of the frame that draws the moved
handle, in a trace)."""

BESIDE = "440px"
"""The narrowest a chart is drawn beside another: two side by side where the charts have about
900 px (the dashboard at 1280 px, its controls beside them), one to a row below that."""

BESIDE_PROJECTOR = "640px"
"""The same in the projector view, whose larger titles need the width: one chart to a row at
1024 x 768."""


def page_css(projector: bool) -> str:
    """The page's CSS (EXPLORER_CSS, and PROJECTOR_CSS in the projector view), which the control panel
    brings."""
    return EXPLORER_CSS + (PROJECTOR_CSS if projector else "")


def side_by_side(views: list, *, wide=(), beside: str = BESIDE) -> ipw.HBox:
    """`views` (charts, or boxes holding one) in a row that wraps: each at least `beside` wide next
    to another, the row shared between them, and the views in `wide` a row each. A chart takes the
    width of its box (its layout has none), so nothing is cut off on a narrow screen."""
    wide = {id(view) for view in wide}
    boxes = []
    for view in views:
        box = view if isinstance(view, ipw.Box) else ipw.VBox([view])
        box.layout.flex = "1 1 100%" if id(view) in wide else f"1 1 {beside}"
        box.layout.min_width = "0"  # a box may shrink below the chart drawn in it; the chart follows
        boxes.append(box)
    return ipw.HBox(boxes, layout={"flex_flow": "row wrap"})


def for_view(box, projector: bool):
    """`box`, marked for the projector's larger text (explorer.css) when the page is in that view."""
    if projector:
        box.add_class("scanlab-projector")
    return box


def words(notice, status, offer, projector=False) -> ipw.VBox:
    """The run in words where the eyes are, above the trajectory (`Explorer.show`): the `notice`
    (a value of the link or a control that could not be used, and what was used instead) over the
    `status` sentence (converging, oscillating, diverged at step k), then `offer`, a button the
    status may propose (shown by its owner). In the control panel they were below the fold of its
    column at 1024 x 768, and inside "All controls" on a phone."""
    notice.add_class("scanlab-notice")
    status.add_class("scanlab-status")
    box = ipw.VBox([notice, status, offer])
    box.add_class("scanlab-words")
    return for_view(box, projector)


def control_panel(
    inputs: dict,
    *,
    presets: list,
    playback: list,
    texts: list,
    share: list,
    below: list,
    notes=None,
    hide=(),
    projector=False,
) -> ipw.VBox:
    """The sticky control panel, top to bottom: the page's CSS, the `presets` buttons in a row, the
    `inputs` (widgets.controls.controls(), by Settings field) in four columns, each followed by its
    line in `notes` (by field) if it has one, the `playback` widgets in a row, the `texts`, the
    `share` widgets in a row, and what goes `below` it. The names in `hide`
    (widgets.settings.HIDEABLE: a control, or the "presets", "playback" or "share" row; "code" is
    the charts' and the hood's) are not shown (a note is shown or not by its owner); `projector`
    marks the panel for that view."""
    i = inputs
    notes = notes or {}
    column = {"width": "33%", "min_width": "300px"}
    rows = {
        "presets": ipw.HBox([ipw.Label("Presets:"), *presets], layout={"flex_flow": "row wrap"}),
        "playback": ipw.HBox(playback, layout={"flex_flow": "row wrap", "align_items": "center"}),
        "share": ipw.HBox(share, layout={"align_items": "center", "flex_flow": "row wrap"}),
    }
    rows["share"].add_class("scanlab-share")  # its Copy button finds the link's field in it

    def stack(*names):
        return [widget for name in names for widget in (i[name], *([notes[name]] if name in notes else []))]

    # The class names are the dashboard's layout (serving's page template): there the panel is a
    # column beside the charts, and on a phone a sheet that shows the "scanlab-primary" controls
    # until it is opened.
    primary = ipw.VBox(stack("lr", "N", "B"), layout=column)
    primary.add_class("scanlab-primary")
    columns = ipw.HBox(
        [
            primary,
            # b0, true_b and x_mean are shown under the w, b model only (Explorer._show_texts).
            ipw.VBox(stack("w0", "b0", "true_w", "true_b", "noise", "x_mean"), layout=column),
            # The data: under "kind" the visitor's file control; the two flags under data of rows.
            ipw.VBox(stack("loss", "model", "kind", "standardize", "replace", "seed"), layout=column),
            ipw.VBox(stack("optimizer", "momentum", "schedule"), layout=column),
        ],
        layout={"flex_flow": "row wrap"},
    )
    columns.add_class("scanlab-columns")
    style = ipw.HTML(f"<style>{page_css(projector)}</style>")
    panel = Stilled([style, rows["presets"], columns, rows["playback"], *texts, rows["share"], *below])
    for name in hide:  # a teacher's focused link ("code" is not the panel's: Explorer.show)
        if name in rows or name in i:
            (rows[name] if name in rows else i[name]).layout.display = "none"
    panel.add_class("scanlab-controls")
    return for_view(panel, projector)


__all__ = [
    "BESIDE",
    "BESIDE_PROJECTOR",
    "EXPLORER_CSS",
    "PROJECTOR_CSS",
    "control_panel",
    "for_view",
    "page_css",
    "side_by_side",
    "words",
]
