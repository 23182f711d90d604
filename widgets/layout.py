"""How charts share the page: side by side where there is room, one to a row below that."""

from __future__ import annotations

import ipywidgets as ipw

BESIDE = "440px"
"""The narrowest a chart is drawn beside another: two side by side where the charts have about
900 px (the dashboard at 1280 px, its controls beside them), one to a row below that."""

BESIDE_PROJECTOR = "640px"
"""The same in the projector view, whose larger titles need the width: one chart to a row at
1024 x 768."""


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


__all__ = ["BESIDE", "BESIDE_PROJECTOR", "side_by_side"]
