"""`?view=projector`: every chart readable from the back of a room."""

from __future__ import annotations

from widgets.chart import legend_row

PROJECTOR = {
    "font": 18,
    "title": 24,
    "line": 2.0,
    "marker": 1.5,
    "taller": 150,
    "lower": 62,
    "higher": 30,
    "left": 25,
    "title_line": 18,
}
"""`?view=projector`: text sizes in px, how much thicker lines and larger markers are drawn, and how
many px taller a chart is, of which its bottom, top and left margins gain "lower", "higher" and
"left" (the larger tick labels, axis titles, legend and title need them); the top gains "title_line"
more for each line of a title past its second (Plotly spaces every line by the title's font)."""


def enlarge(figure) -> None:
    """Make `figure` (a go.Figure) readable from the back of a room: larger text
    everywhere, thicker lines, larger markers (PROJECTOR)."""
    layout = figure.layout
    lines = 1 + (layout.title.text or "").count("<br>")
    figure.update_layout(
        font={"size": PROJECTOR["font"]},
        title_font_size=PROJECTOR["title"],
        legend_font_size=PROJECTOR["font"],
        hoverlabel_font_size=PROJECTOR["font"],
        height=(layout.height or 450) + PROJECTOR["taller"] + PROJECTOR["title_line"] * max(0, lines - 2),
        # The legend moves into the margin below (container y 0): its row is counted in "lower".
        margin_b=(layout.margin.b or 80) - legend_row(layout.showlegend) + PROJECTOR["lower"],
        margin_t=(layout.margin.t or 100) + PROJECTOR["higher"] + PROJECTOR["title_line"] * max(0, lines - 2),
        margin_l=(layout.margin.l or 80) + PROJECTOR["left"],
        # The legend at the chart's foot, below the axis title whatever their sizes.
        legend={"yref": "container", "y": 0, "yanchor": "bottom"},
    )
    for trace in figure.data:
        if trace.type != "scatter":
            continue
        if trace.line.width is not None:
            trace.line.width = trace.line.width * PROJECTOR["line"]
        elif "lines" in (trace.mode or "lines"):
            trace.line.width = 2 * PROJECTOR["line"]  # Plotly's default width is 2
        if isinstance(trace.marker.size, (int, float)):
            trace.marker.size = trace.marker.size * PROJECTOR["marker"]
        if trace.marker.line.width is not None:
            trace.marker.line.width = trace.marker.line.width * PROJECTOR["line"]


__all__ = ["PROJECTOR", "enlarge"]
