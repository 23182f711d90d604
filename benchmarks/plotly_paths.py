"""What each of Plotly.js's update paths costs the browser's main thread for a move of its charts.

    .venv/bin/python -m benchmarks.plotly_paths [--moves 40] [--points 100] [--markers] [--json PATH]

A chart like the trajectory (a run's line, a dashed line, a step marker: three scatter traces of
`--points` points, fixed axis ranges) on a bare page with the vendored Plotly.js, in headless
Chromium, moved `--moves` times, 30 ms apart, by each path widgets/surface.js uses: Plotly.react of
the whole figure; Plotly.animate of the points (a move on fixed axes); Plotly.relayout of the axis
ranges with that animate, in one task (an N move: the step axis grows by a step). For comparison,
Plotly.react of that N move; and a line hidden and shown in turn (what a loss view changes), by
Plotly.react and by Plotly.restyle of its `visible`. Then four such charts at once (the four
line charts in view): as four figures, and as one figure of four subplots in a column, whose
titles are annotations and whose one legend lists the twelve traces (would one figure's single
defaults pass draw them for less?).
`--markers` puts a marker on each point of the two lines, as the explorer's charts have up to
N = 50 (widgets.chart.MARKERS_UP_TO). Printed per path: the main thread's task time per move
(Chromium's TaskDuration, from the Performance domain), median of three rounds. Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from widgets.surface import plotly_js

FRAME = {"transition": {"duration": 0}, "frame": {"duration": 0, "redraw": False}, "mode": "immediate"}

MOVES = """
async ({ path, moves, points, frame, mode }) => {
  // "... x4" paths draw four charts in one task: four figures, or one figure of four subplots.
  const charts = path.endsWith("x4") ? 4 : 1;
  const subplots = path.includes("subplots");
  const figures = subplots ? 1 : charts;
  const divs = Array.from({ length: figures }, (_, i) => document.getElementById(`chart${i}`));
  const figure = (n, shift) => {
    const x = Float64Array.from({ length: n + 1 }, (_, i) => i);
    const y = x.map((i) => Math.exp(-i / 30) * Math.cos(i / 3 + shift));
    const rows = subplots ? charts : 1;
    const data = [], layout = { height: 380 * rows, margin: { t: 40 }, annotations: [] };
    for (let r = 1; r <= rows; r++) {
      const axes = { xaxis: `x${r === 1 ? "" : r}`, yaxis: `y${r === 1 ? "" : r}` };
      data.push(
        { x, y, mode, marker: { size: 4 }, line: { color: "#0072B2" }, ...axes },
        { x, y: y.map((v) => v / 2), mode, marker: { size: 4 }, line: { dash: "dash" }, ...axes },
        { x: [n], y: [y[n]], mode: "markers", marker: { size: 10 }, ...axes },
      );
      const top = 1 - (r - 1) / rows, bottom = 1 - r / rows;
      layout[`xaxis${r === 1 ? "" : r}`] = { range: [-0.02 * n, 1.02 * n], anchor: axes.yaxis };
      layout[`yaxis${r === 1 ? "" : r}`] = { range: [-1.2, 1.2], anchor: axes.xaxis,
                                             domain: [bottom + 0.1 / rows, top - 0.1 / rows] };
      // A chart's title; a subplot's is an annotation above its plot.
      if (subplots) layout.annotations.push({ text: "Trajectory", showarrow: false, xref: "paper",
                                              yref: "paper", x: 0.5, y: top, yanchor: "top" });
      else layout.title = { text: "Trajectory" };
    }
    return { data, layout };
  };
  if (!moves) {
    const { data, layout } = figure(points, 0);
    return void (await Promise.all(divs.map((gd) => Plotly.react(gd, data, layout))));
  }
  const traces = Array.from({ length: 3 * (subplots ? charts : 1) }, (_, i) => i);
  for (let k = 1; k <= moves; k++) {
    const grows = path === "relayout+animate" || path === "react, axes";
    const shows = path === "restyle" || path === "react, shown";
    const { data, layout } = figure(grows ? points + k : points, grows || shows ? 0 : k / 10);
    const moved = { data: data.map((t) => ({ x: t.x, y: t.y })), traces };
    data[1].visible = !shows || k % 2 === 0; // the dashed line hidden and shown in turn
    await Promise.all(divs.map((gd) => {
      if (path === "restyle") return Plotly.restyle(gd, { visible: [data[1].visible] }, [1]);
      if (path.startsWith("react")) return Plotly.react(gd, data, layout);
      if (path.startsWith("animate")) return Plotly.animate(gd, moved, frame);
      const axes = Plotly.relayout(gd, { "xaxis.range": layout.xaxis.range });
      return Promise.all([axes, Plotly.animate(gd, moved, frame)]);
    }));
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}
"""

PATHS = {
    "react": "Plotly.react, points moved on fixed axes",
    "animate": "Plotly.animate, the same (a typed lr move's path)",
    "react, axes": "Plotly.react, a step more and the step axis with it",
    "relayout+animate": "Plotly.relayout of the ranges + animate, the same (an N move's path)",
    "react, shown": "Plotly.react, a line hidden and shown in turn (a loss view's change)",
    "restyle": "Plotly.restyle of that line's `visible` alone, the same",
    "animate x4": "Plotly.animate of four such charts, in one task (four charts in view)",
    "animate, subplots x4": "Plotly.animate of one figure of four such subplots, the same",
    "react x4": "Plotly.react of four such charts, in one task (a preset, roughly)",
    "react, subplots x4": "Plotly.react of one figure of four such subplots, the same",
}


def _task_s(cdp) -> float:
    """The page's main-thread task time so far, in s (the Performance domain's TaskDuration)."""
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return next(m["value"] for m in metrics if m["name"] == "TaskDuration")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=40, help="moves per path and round (default 40)")
    parser.add_argument("--points", type=int, default=100, help="points per trace (default 100)")
    parser.add_argument("--markers", action="store_true", help="a marker on each point of the lines")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            rounds = {path: [] for path in PATHS}
            for _ in range(3):
                for path in PATHS:  # in turn, so that the machine's drift falls on every path alike
                    page = browser.new_page(viewport={"width": 800, "height": 1600})
                    divs = "".join(f'<div id="chart{i}" style="width: 640px"></div>' for i in range(4))
                    page.set_content(divs)
                    page.add_script_tag(content=plotly_js())
                    cdp = page.context.new_cdp_session(page)
                    cdp.send("Performance.enable")

                    mode = "lines+markers" if args.markers else "lines"
                    given = {"path": path, "moves": 0, "points": args.points, "frame": FRAME, "mode": mode}
                    page.evaluate(MOVES, given)  # the chart drawn first, not timed
                    start = _task_s(cdp)
                    page.evaluate(MOVES, {**given, "moves": args.moves})
                    rounds[path].append((_task_s(cdp) - start) * 1000 / args.moves)
                    page.close()
        finally:
            browser.close()
    markers = ", a marker on each point of the lines" if args.markers else ""
    chart = f"one chart of 3 traces x {args.points} points{markers}"
    print(f"main thread per move, {chart}, median of 3 rounds (ms)")
    for path, label in PATHS.items():
        figures[path] = statistics.median(rounds[path])
        print(f"  {label:<72} {figures[path]:5.1f}")
    if args.json:
        figures = {"points": args.points, "markers": args.markers, "moves": args.moves, "ms": figures}
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
