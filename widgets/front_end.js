// ScanLab's charts: Plotly's widget front end, with four changes (widgets/figures.py: FRONT_END).
// A bundle without the methods changed here is used as it is.
import * as plotly from "./PLOTLY_BUNDLE";

const view = plotly.FigureView && plotly.FigureView.prototype;

// 1. No state sent back. After every change Plotly's view merges each trace's and the layout's full
// state with the figure's, diffs them and sends the difference to the kernel (12 messages, 75 KB and
// about 30 ms of the browser's main thread per slider move); widgets.figures.FigureWidget ignores them.
for (const name of ["_sendTraceDeltas", "_sendLayoutDelta"]) {
  if (view && typeof view[name] === "function") view[name] = function () {};
}

// 2. Points moved on steady axes are drawn without Plotly.animate. A slider move sends each chart a
// frame with the new x and y of its scatter traces (widgets.figures.send), and Plotly.animate first
// recomputes the defaults of every trace and of the layout and the attribute list of every trace:
// 13 of the 31 ms that five charts took per move in Chromium on a 2-core machine (measured on their
// own, outside the dashboard). Here only the moved
// traces are computed again (what Plotly's doCalcdata does for a scatter trace) and drawn by Plotly's
// own cartesian plot, which is what Plotly.animate ends with; markers that only moved are moved
// without being styled again (markersPlaced). In a figure with heatmaps too (the
// stability map, whose current-setting box is a scatter trace), the scatter module draws the moved
// traces itself: the cartesian plot given only those would drop the heatmaps' layer, and
// Plotly.animate recomputed the whole map's defaults (7 ms a move). Anything else (another field, a
// range that changes, a frame still queued, a moved trace that is not a scatter) goes to
// Plotly.animate.
const animate = view && view.do_animate;
if (typeof animate === "function") {
  view.do_animate = function () {
    const gd = this.el;
    keepTraceOrder(gd);
    const message = this.model.get("_py2js_animate");
    let drawn = false;
    try {
      drawn = !gd.scanlabAnimates && Boolean(message) && movePoints(gd, message);
    } catch (error) {
      // Plotly's internals differ from those this was written for (plotly.js 3.8): from now on
      // this chart's frames go the other ways below, this one included (its points are in the
      // figure's data already, and are computed again).
      gd.scanlabAnimates = true;
      console.warn("ScanLab: this chart's frames no longer drawn by its front end:", error);
    }
    if (drawn) return;
    // Plotly.animate drops the heatmaps' layer from a frame of scatter traces (the map's box): in a
    // figure with heatmaps such a frame goes as the Plotly.update it stands for.
    if (message && Array.isArray(message.style_data) && message.style_data.length && hasOthers(gd)) {
      try {
        if (typeof update === "function") return updateInstead(this, message);
      } catch (error) {
        console.warn("ScanLab: a frame went to Plotly.animate after Plotly.update failed:", error);
      }
    }
    return animate.call(this);
  };
}

// The view's own Plotly.update of a frame's changes: `style_data` per trace becomes per field.
const update = view && view.do_update;
function updateInstead(figureView, message) {
  const restyle = {};
  message.style_data.forEach((fields, j) => {
    for (const [key, value] of Object.entries(fields)) {
      if (!restyle[key]) restyle[key] = new Array(message.style_data.length).fill(undefined);
      restyle[key][j] = value;
    }
  });
  const instead = { ...message, style_data: restyle, layout_data: message.layout_data || {} };
  const model = figureView.model, get = model.get;
  model.get = function (name) {
    return name === "_py2js_update" ? instead : get.apply(this, arguments);
  };
  try {
    return update.call(figureView);
  } finally {
    model.get = get;
  }
}

// 3. Traces stay in their order. Plotly's scatter plot puts the moved traces above the others (d3's
// order() on the moved ones alone): after the first move, a dashed line of w* lay under the run's
// line. After each frame the chart's trace groups are put back in the figure's order: at once after
// a frame drawn here (movePoints), after Plotly.animate's when it emits plotly_animated.
function keepTraceOrder(gd) {
  if (gd.scanlabKeepsOrder || typeof gd.on !== "function") return;
  gd.scanlabKeepsOrder = true;
  gd.on("plotly_animated", () => sortTraces(gd));
}

function sortTraces(gd) {
  for (const layer of gd.querySelectorAll(".scatterlayer")) {
    const groups = [...layer.children];
    const index = (group) => (group.__data__ && group.__data__[0] && group.__data__[0].trace.index) || 0;
    const sorted = [...groups].sort((a, b) => index(a) - index(b));
    if (sorted.some((group, i) => group !== groups[i])) layer.append(...sorted);
  }
}

// Whether the chart, as drawn, has traces other than scatter ones (the map's heatmaps).
const hasOthers = (gd) =>
  Array.isArray(gd._fullData) && gd._fullData.some((trace) => trace.type !== "scatter");

const size = (values) => (values && typeof values.length === "number" ? values.length : 0);

const sameRange = (drawn, sent) =>
  Array.isArray(drawn) && drawn.length === 2 && sent && sent.length === 2 &&
  drawn[0] === sent[0] && drawn[1] === sent[1];

// Frames that Plotly.animate has queued and not drawn yet would be drawn after this one.
function queueEmpty(gd) {
  const queue = gd._transitionData;
  return !gd._transitioning && !(queue && ((queue._frameQueue && queue._frameQueue.length) || queue._animationRaf));
}

function movable(gd, message) {
  const full = gd._fullData, layout = gd._fullLayout;
  const traces = message.style_traces, data = message.style_data;
  if (!Array.isArray(full) || !layout || !Array.isArray(gd.calcdata) || !Array.isArray(gd.data)) return false;
  if (!queueEmpty(gd)) return false;
  const options = message.animation_opts || {};
  const still = (part) => !part || !part.duration;
  if (!options.frame || options.frame.redraw !== false || !still(options.frame) || !still(options.transition)) {
    return false; // a frame with a redraw or a transition
  }
  if (!Array.isArray(traces) || !Array.isArray(data) || !traces.length || traces.length !== data.length) return false;
  const modules = layout._basePlotModules;
  if (!Array.isArray(modules) || modules.length !== 1 || modules[0].name !== "cartesian") return false;
  const mixed = hasOthers(gd);
  for (const [path, value] of Object.entries(message.layout_data || {})) {
    const axis = /^[xy]axis\.range$/.test(path) && layout[path.slice(0, 5)];
    if (!axis || axis.autorange || !sameRange(axis.range, value)) return false;
  }
  return traces.every((index, j) => {
    const trace = full[index], input = gd.data[index], fields = data[j];
    if (!trace || !input) return false;
    // Plotly hides a trace without points (its visible becomes false), and only its defaults pass
    // shows it again: points that appear or all go are not drawn here (widgets.figures.send sends
    // them as a Plotly.update). A trace that stays empty comes with every other one in the frame
    // that follows a Plotly.update, and stays as it is.
    const hidden = input.visible === false || input.visible === "legendonly";
    const points = Math.min(size(fields.x || input.x), size(fields.y || input.y));
    return (
      Number.isInteger(index) && trace.type === "scatter" && trace._input === input &&
      (!mixed || scatterLayer(gd, trace) !== null) &&
      trace._module && typeof trace._module.calc === "function" &&
      Object.keys(fields).every((key) => key === "x" || key === "y") &&
      (hidden || (trace.visible === true ? points > 0 : points === 0))
    );
  });
}

// The d3 selection of the scatter layer that draws `trace` (a subplot's `g.scatterlayer`), or null.
function scatterLayer(gd, trace) {
  const plots = gd._fullLayout._plots, plotinfo = plots && plots[trace.xaxis + trace.yaxis];
  const layer = plotinfo && plotinfo.plot && typeof plotinfo.plot.select === "function" &&
    plotinfo.plot.select("g.scatterlayer");
  return layer && layer.node() ? layer : null;
}

function movePoints(gd, message) {
  if (!movable(gd, message)) return false;
  const full = gd._fullData, traces = message.style_traces;
  traces.forEach((index, j) => {
    const fields = message.style_data[j], trace = full[index];
    Object.assign(gd.data[index], fields);
    if (trace.visible !== true) return; // a hidden trace's full data holds no points
    Object.assign(trace, fields);
    trace._length = Math.min(trace.x.length, trace.y.length);
  });
  for (const index of traces) {
    const trace = full[index];
    let calcdata = trace.visible === true && trace._length !== 0 ? trace._module.calc(gd, trace) : [];
    if (!Array.isArray(calcdata) || !calcdata[0]) calcdata = [{ x: undefined, y: undefined }];
    if (!calcdata[0].t) calcdata[0].t = {};
    calcdata[0].trace = trace;
    gd.calcdata[index] = calcdata;
  }
  // With transition options the cartesian module redraws these traces alone; without, it would
  // replot the figure with these traces only. Given none that it can draw, it would remove the
  // chart's every line.
  let drawn = traces.filter((index) => full[index].visible === true);
  // Only when every moved trace is one, so that the plot is not called at all (the per-step
  // factors and their step marker): placing some traces and plotting the others was not kept, as
  // it was never shown to draw what Plotly.newPlot draws (its first try lost a trace, through the
  // d3 select that markersPlaced no longer uses).
  const placed = drawn.map((index) => markersPlaced(gd, full[index], gd.calcdata[index]));
  if (drawn.length && placed.every(Boolean)) {
    placed.forEach((place) => place());
    drawn = [];
  }
  const transition = { duration: 0, easing: "linear", ordering: "layout first" };
  if (!hasOthers(gd)) {
    if (drawn.length) gd._fullLayout._basePlotModules[0].plot(gd, drawn, transition);
  } else {
    // What the cartesian plot does for the scatter layer of each subplot, without touching the
    // other layers. (Scatter's plot with transition options leaves the traces it is not given.)
    const subplots = new Map();
    for (const index of drawn) {
      const trace = full[index], subplot = trace.xaxis + trace.yaxis;
      if (!subplots.has(subplot)) subplots.set(subplot, []);
      subplots.get(subplot).push(gd.calcdata[index]);
    }
    for (const [subplot, calcdata] of subplots) {
      const trace = calcdata[0][0].trace;
      trace._module.plot(gd, gd._fullLayout._plots[subplot], calcdata, scatterLayer(gd, trace), transition);
    }
  }
  if (drawn.length) sortTraces(gd);
  if (typeof gd._fullLayout._rehover === "function") gd._fullLayout._rehover(); // an open hover label
  // As Plotly.animate does: in the animation frame after the drawing, the one that paints it.
  requestAnimationFrame(() => typeof gd.emit === "function" && gd.emit("plotly_animated"));
  return true;
}

// A trace of markers alone, each styled the same, whose points only moved: each marker is put at its
// new place as Plotly's scatter plot does (Drawing.translatePoint), without styling it again. The plot
// styles every marker of a moved trace anew (Drawing.singlePointStyle): 2.5 of the 5.4 ms that
// Plotly's drawing took per slider move, for the per-step factors' 100 markers (Chromium's profiler,
// benchmarks.browser --profile). The function that places them, or null when anything else
// changes (a marker that appears, goes or cannot be placed): then the plot draws the trace.
const STYLES = ["color", "size", "symbol", "opacity", "angle"];
function markersPlaced(gd, trace, calcdata) {
  const marker = trace.marker, line = marker && marker.line;
  if (trace.type !== "scatter" || trace.mode !== "markers" || !marker || trace.fill !== "none") return null;
  if (trace.selectedpoints || marker.maxdisplayed || trace._needsCull || trace.customdata) return null;
  if (marker.angleref === "previous" || trace._nexttrace) return null; // placed by their neighbours
  if ((trace.error_x && trace.error_x.visible) || (trace.error_y && trace.error_y.visible)) return null;
  const many = (value) => Array.isArray(value) || ArrayBuffer.isView(value); // a style per marker
  if (STYLES.some((key) => many(marker[key])) || (line && (many(line.color) || many(line.width)))) return null;
  const plotinfo = gd._fullLayout._plots[trace.xaxis + trace.yaxis];
  // Not d3's select, which gives the layer its parent's data: the plot's data join then lost a trace.
  const layer = plotinfo && plotinfo.plot && typeof plotinfo.plot.node === "function" &&
    plotinfo.plot.node().querySelector("g.scatterlayer");
  if (!layer) return null;
  const group = [...layer.children].find(
    (g) => g.__data__ && g.__data__[0] && g.__data__[0].trace === trace
  );
  const points = group && group.querySelector("g.points");
  const nodes = points ? points.querySelectorAll("path.point") : [];
  if (!nodes.length || nodes.length !== calcdata.length) return null;
  const xa = plotinfo.xaxis, ya = plotinfo.yaxis;
  const places = calcdata.map((point) => [xa.c2p(point.x), ya.c2p(point.y)]);
  if (!places.every(([x, y]) => Number.isFinite(x) && Number.isFinite(y))) return null;
  // In a subplot with a trace drawn over the axes' edge (cliponaxis false: the step markers), Plotly
  // clips each trace instead of the whole plot, and hides each marker outside the axes' ranges
  // (Drawing.hideOutsideRangePoint), as done here too. Elsewhere the plot's clip hides them, and a
  // marker has no display of its own (as Plotly.newPlot draws it).
  const hides = Boolean(plotinfo.layerClipId);
  if (hides && ![xa, ya].every((axis) => typeof axis.isPtWithinRange === "function")) return null;
  const within = (point) =>
    xa.isPtWithinRange(point, trace.xcalendar) && ya.isPtWithinRange(point, trace.ycalendar);
  return () => {
    group.__data__ = points.__data__ = calcdata; // as the plot binds them (d3's select passes data down)
    nodes.forEach((node, i) => {
      const [x, y] = places[i], point = calcdata[i], before = node.__data__;
      // What styling the marker left on its point (its radius and whether it is open, which hover
      // reads), the same for a marker styled the same.
      if (before) for (const key of Object.keys(before)) if (!(key in point)) point[key] = before[key];
      node.__data__ = point;
      node.setAttribute("transform", x || y ? `translate(${x},${y})` : "");
      if (hides && !within(point)) node.setAttribute("display", "none");
      else node.removeAttribute("display");
    });
  };
}

// 4. A chart follows the width of its place on the page. Its layout has no width
// (widgets.figures.base_layout), so Plotly draws it as wide as its box; Plotly's view would draw it
// again when the box changes on Lumino's resize messages, which an anywidget view never gets. A
// narrower window (a projector, a phone) then cut the chart off. A chart whose box changes width is
// drawn again 100 ms after the resizing stops, as Plotly's Plots.resize does. A chart whose box had
// no width when last seen (drawn before it was on the page, as in a panel opened later, where Plotly
// drew it 700 px wide; or in an accordion that was closed) is drawn again as soon as its box has a
// width, before the page is painted, so it never shows at the wrong width. A box of no width (a
// closed accordion, a page being left) is not drawn for. Whether to draw is decided by the width
// drawn, so a wait cut short by a closing box is made up when it opens. The kernel is not told:
// Plotly's view would report each relayout for a width ({autosize: true}), which cost the kernel a
// message in and five out per chart (an echo and four updates), and a width is the page's.
const render = view && view.perform_render;
if (typeof render === "function") {
  view.perform_render = function () {
    const result = render.apply(this, arguments);
    followWidth(this.el);
    return result;
  };
}

const relayout = view && view.handle_plotly_relayout;
if (typeof relayout === "function") {
  view.handle_plotly_relayout = function (data) {
    if (data && Object.keys(data).length === 1 && data.autosize === true) return;
    return relayout.apply(this, arguments);
  };
}

function followWidth(gd) {
  const Plotly = window.Plotly;
  if (gd.scanlabFollows || typeof ResizeObserver !== "function" || !Plotly || !Plotly.relayout) return;
  gd.scanlabFollows = true;
  let seen = gd.clientWidth, timer = null;
  new ResizeObserver(() => {
    const shown = !seen; // its box had no width when last seen
    seen = gd.clientWidth;
    clearTimeout(timer);
    if (!seen || !widthChanged(gd)) return; // a change of height is the chart's own
    if (shown) fitWidth(gd);
    else timer = setTimeout(() => fitWidth(gd), 100);
  }).observe(gd);
}

// Plotly itself draws again only for a change of more than 1 px.
const widthChanged = (gd) => Boolean(gd._fullLayout) && Math.abs(gd.clientWidth - gd._fullLayout.width) > 1;

// A relayout of autosize alone: Plotly measures the box and draws the chart again, without
// computing its traces again (an attribute Plotly does not know, such as the _doNotReportToPy of
// Plotly's view, would make it do that too).
function fitWidth(gd) {
  if (!gd.clientWidth || !widthChanged(gd) || (gd.layout && gd.layout.width)) return;
  const drawn = window.Plotly.relayout(gd, { autosize: true });
  if (drawn && typeof drawn.catch === "function") drawn.catch(() => {});
}

export default plotly.default;
