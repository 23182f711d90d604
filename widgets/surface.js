// One chart: the figure the kernel holds (widgets/surface.py: Surface's `data` and `plot_layout`),
// drawn with Plotly.js's documented functions only (react, animate, relayout, Plots.resize, purge).
//
// The widget's state is the whole figure, so a view drawn late, or after messages it did not see,
// draws what the kernel last computed: there is no stream of edits to miss. Each change is drawn
// once the message that brought it is handled, the newest state only: changes that come while a
// drawing is under way are drawn together after it. When only the points of scatter traces moved
// and nothing else changed (a slider move on fixed axes), the chart is drawn by Plotly.animate
// without a redraw, which moves those traces alone; when the axis ranges changed with them (an N
// move), by Plotly.relayout of the ranges and that animate, in one task, so that no frame paints
// the old points on the new axes; when only the layout changed, by Plotly.relayout of what
// changed; anything else goes to Plotly.react.
// A chart is drawn once when shown; after that a change that comes while its box is out of view
// (more than MARGIN beyond the window's or a scrolling box's edge) is held, not drawn, and drawn
// when the box comes into view: a move redraws what a person sees. The chart's element says what
// it holds (`scanlabHeld`, `data-held`) and how often it drew (`data-draws`).
// Arrays arrive as binary buffers in Plotly's typed-array form ({dtype, bdata, shape}).
const PLOTLY = "__PLOTLY__"; // Plotly.js's address on this server, "" where this module holds it

// Plotly.js once per page: the page's own copy, loading or loaded (the dashboard's template inserts
// it at the page's load event, marked data-scanlab-plotly), else a script of ours from PLOTLY.
function plotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.scanlabPlotly) {
    let script = document.querySelector("script[data-scanlab-plotly]:not([data-failed])");
    if (!script) {
      if (!PLOTLY) return Promise.reject(new Error("ScanLab: no Plotly.js on this page"));
      script = document.createElement("script");
      script.src = PLOTLY;
      script.dataset.scanlabPlotly = "";
      document.head.append(script);
    }
    window.scanlabPlotly = new Promise((resolve, reject) => {
      const failed = () => {
        script.dataset.failed = "true";
        window.scanlabPlotly = null; // the next chart tries again, with a script of its own
        reject(new Error(`ScanLab: Plotly.js did not load from ${script.src}`));
      };
      script.addEventListener("load", () => (window.Plotly ? resolve(window.Plotly) : failed()));
      script.addEventListener("error", failed);
    });
  }
  return window.scanlabPlotly;
}

// Asked for when this module first runs, as the page creates the charts' models, before any chart
// is shown (in the dashboard the page's own copy is loading by then); a load that failed is tried
// again by the next chart shown.
let loading = plotly();
loading.catch(() => {});

const TYPES = {
  f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
  i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array,
};

// A typed array (or rows of them) for Plotly's typed-array form whose bdata is a DataView.
function decodeArray(spec) {
  const Type = TYPES[spec.dtype];
  const view = spec.bdata;
  if (!Type || !(view instanceof DataView)) return spec; // base64 text: Plotly decodes it itself
  // A copy: a buffer's offset in its message need not be a multiple of the element's size.
  const values = new Type(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength));
  const shape = String(spec.shape || values.length).split(",").map(Number);
  if (shape.length === 3) { // rows of rows: a heatmap's customdata of several numbers per cell
    const [rows, columns, depth] = shape;
    return Array.from({ length: rows }, (_, i) => Array.from({ length: columns },
      (_, j) => values.subarray((i * columns + j) * depth, (i * columns + j + 1) * depth)));
  }
  if (shape.length !== 2) return values;
  const [rows, columns] = shape;
  return Array.from({ length: rows }, (_, i) => values.subarray(i * columns, (i + 1) * columns));
}

const isSpec = (value) => value && typeof value === "object" && "dtype" in value && "bdata" in value;

// The figure's state with its arrays decoded, as new objects (the model's stay as they are).
function decode(value) {
  if (Array.isArray(value)) return value.map(decode);
  if (!value || typeof value !== "object" || ArrayBuffer.isView(value)) return value;
  if (isSpec(value)) return decodeArray(value);
  const out = {};
  for (const [key, inner] of Object.entries(value)) out[key] = decode(inner);
  return out;
}

const length = (values) => (values && typeof values.length === "number" ? values.length : 0);

// Whether two of the model's values are equal, binary buffers by their bytes.
function same(a, b) {
  if (a === b) return true;
  if (a instanceof DataView && b instanceof DataView) {
    if (a.byteLength !== b.byteLength) return false;
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (!a || !b || typeof a !== "object" || typeof b !== "object" || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => key in b && same(a[key], b[key]));
}

// The traces whose points alone moved, or null when anything else changed (a style, a trace shown
// or hidden, points that appear or all go, a trace that is not a scatter): `before` and `after` are
// the model's data, `old` and `now` the same decoded. Plotly.animate without a redraw draws the
// first, Plotly.react the rest.
function movedPoints(before, after, old, now) {
  if (!before || before.length !== after.length) return null;
  if (now.some((trace) => (trace.type || "scatter") !== "scatter")) return null;
  const points = (trace) => Math.min(length(trace.x), length(trace.y));
  const moved = [];
  for (let i = 0; i < after.length; i++) {
    const { x: x0, y: y0, ...style0 } = before[i];
    const { x: x1, y: y1, ...style1 } = after[i];
    if (!same(style0, style1)) return null;
    if (same(x0, x1) && same(y0, y1)) continue;
    if (!points(old[i]) || !points(now[i])) return null; // Plotly hides a trace without points
    moved.push(i);
  }
  return moved;
}

// The new axis ranges when they are all that `changed` (`changes(before, after)`, the model's
// layouts), as {"xaxis.range": [low, high], ...}: {} when nothing changed, null when anything else
// did (a title, ticks, a shape). An N move changes every line chart's step axis and nothing else
// in its layout: Plotly.react drew a three-trace chart for 15 ms of main thread, a relayout of the
// ranges with an animate of the points for 11 (benchmarks.plotly_paths, docs/performance.md).
function movedRanges(changed, before, after) {
  const out = {};
  const unranged = ({ range, ...rest }) => rest;
  for (const [key, axis] of Object.entries(changed)) {
    if (!/^[xy]axis$/.test(key) || !axis || !before[key]) return null;
    if (!same(unranged(before[key]), unranged(after[key])) || !Array.isArray(axis.range)) return null;
    out[`${key}.range`] = axis.range;
  }
  return out;
}

// The layout's top-level entries that changed from `before` to `after` (the model's), decoded, null
// for one that went: what Plotly.relayout draws when the data stay as they are (the map's box, a
// layout shape, without computing its heatmaps again).
function changes(before, after) {
  const out = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (!same(before[key], after[key])) out[key] = key in after ? decode(after[key]) : null;
  }
  return out;
}

// How near the window (or a scrolling box) a chart's box draws its changes: one about to scroll in
// is drawn by then. Plotly.react of a line chart takes a few ms, the map's heatmaps more.
const MARGIN = "200px";

const FRAME = { transition: { duration: 0 }, frame: { duration: 0, redraw: false }, mode: "immediate" };

export default {
  async render({ model, el }) {
    const chart = document.createElement("div");
    chart.className = "scanlab-chart";
    el.append(chart);
    // The kernel's sentence about what the chart shows now: the figure's name for a screen reader.
    const describe = () => {
      const alt = model.get("alt");
      for (const [name, value] of [["role", "figure"], ["aria-label", alt]]) {
        if (alt) el.setAttribute(name, value);
        else el.removeAttribute(name);
      }
    };
    describe();
    model.on("change:alt", describe);
    // What the chart shows: the model's data and layout (`source`) and the same decoded.
    let drawn = null;
    let drawing = false, again = false, gone = false;
    let width = null; // the box's width when Plotly last measured it
    let waiting = false; // a change not drawn because the box had no width
    let clicks = false; // whether clicks on points are sent to the kernel
    let shown = true; // whether the box is in view (IntersectionObserver; until it first says, yes)
    let held = false; // a change not drawn because the box was out of view
    let draws = 0; // Plotly's drawings of changes (data-draws)
    const Plotly = await loading.catch(() => (loading = plotly())).catch((error) => {
      chart.textContent = "This chart could not load Plotly.js; reload the page to try again.";
      throw error;
    });

    async function paint() {
      // A box of no width (not on the page yet, or in a closed panel) is not drawn for: Plotly
      // would draw 700 px wide, and a box that takes its width from its content then kept that.
      if (!chart.clientWidth) return void (waiting = true);
      waiting = false;
      if (drawn && !shown) {
        // Out of view: the change is held, as the chart's state, and drawn when the box comes into
        // view. Nothing waits on it meanwhile (data-pending is what will be drawn without a scroll).
        held = true;
        chart.dataset.held = String(model.get("revision"));
        delete chart.dataset.pending;
        return;
      }
      held = false;
      delete chart.dataset.held;
      const source = { data: model.get("data"), layout: model.get("plot_layout") };
      const revision = model.get("revision");
      // Arrays Plotly already has are handed to it again: Plotly.react computes a trace again
      // when its arrays are other arrays, and a change of layout alone (the map's box) is then
      // drawn without computing any trace.
      const data = drawn && source.data === drawn.source.data ? drawn.data : decode(source.data);
      const changed = drawn ? changes(drawn.source.layout, source.layout) : null;
      const steady = changed !== null && !Object.keys(changed).length; // the layout as it was
      const ranges = changed && movedRanges(changed, drawn.source.layout, source.layout);
      const moved = ranges ? movedPoints(drawn.source.data, source.data, drawn.data, data) : null;
      const layout = steady ? drawn.layout : decode(source.layout);
      const relayout = drawn && data === drawn.data && !steady ? changed : null;
      if (relayout) {
        chart.dataset.draws = String(++draws);
        await Plotly.relayout(chart, relayout);
      } else if (moved && (moved.length || !steady)) {
        // Every trace, in order: Plotly.animate draws the traces of a frame above the others, and a
        // frame of the moved ones alone left the dashed w* under the run's line.
        const traces = data.map((_, i) => i);
        const frame = { data: data.map((trace) => ({ x: trace.x, y: trace.y })), traces };
        chart.dataset.draws = String(++draws);
        // The ranges' relayout is not awaited before the animate: both draw before a frame paints.
        const axes = steady ? null : Plotly.relayout(chart, ranges);
        await Promise.all([axes, Plotly.animate(chart, frame, FRAME)]);
      } else if (!moved) {
        width = chart.clientWidth; // what Plotly measures
        chart.dataset.draws = String(++draws);
        await Plotly.react(chart, data, layout, model.get("config"));
        if (!clicks) {
          clicks = true; // on the chart's element, which Plotly gives `on` when it first draws it
          chart.on("plotly_click", (event) => {
            const points = ((event && event.points) || []).map((p) => ({ trace: p.curveNumber, x: p.x, y: p.y }));
            model.send({ kind: "click", points });
          });
        }
      }
      drawn = { source, data, layout };
      // What benchmarks.browser waits for: no change the chart has not drawn.
      if (chart.dataset.pending === String(revision)) delete chart.dataset.pending;
    }

    // The newest state, once; a change that comes during a drawing is drawn after it. A drawing
    // that fails is tried once more, from scratch, a second later.
    let failed = 0;
    async function draw() {
      if (drawing) return void (again = true);
      drawing = true;
      try {
        do {
          again = false;
          if (!gone) await paint();
        } while (again);
        failed = 0;
      } catch (error) {
        console.error("ScanLab: a chart was not drawn:", error);
        drawn = null; // drawn again from scratch
        if (failed++ === 0) setTimeout(changed, 1000);
      } finally {
        drawing = false;
      }
    }
    let queued = false;
    const changed = () => {
      chart.dataset.pending = String(model.get("revision")); // a change not drawn yet
      if (queued) return;
      queued = true; // the data and layout of one message: one drawing
      queueMicrotask(() => {
        queued = false;
        draw();
      });
    };
    const traits = ["change:data", "change:plot_layout"];
    for (const name of traits) model.on(name, changed);

    // The layout has no width: the chart takes its box's, measured when it is drawn, and again
    // when the box changes width (a narrower window), 100 ms after the resizing stops; a chart whose
    // box had no width is drawn as soon as it has one (a panel opened, the page laid out).
    let timer = null;
    const resize = () => {
      if (gone || !chart.clientWidth || chart.clientWidth === width) return;
      width = chart.clientWidth;
      Plotly.Plots.resize(chart).catch(() => {});
    };
    const observer = new ResizeObserver(() => {
      clearTimeout(timer);
      if (!chart.clientWidth) return;
      if (waiting) return void draw();
      if (!drawn || chart.clientWidth === width) return; // a change of height is the chart's own
      timer = setTimeout(resize, 100);
    });
    observer.observe(chart);
    // In view or not, with MARGIN around the window and around every box that scrolls it (Voila's
    // page scrolls inside its own): a held change is drawn as the box comes into view.
    const viewer = new IntersectionObserver(
      (entries) => {
        shown = entries[entries.length - 1].isIntersecting;
        if (shown && held && !gone) {
          chart.dataset.pending = chart.dataset.held; // drawn now
          draw();
        }
      },
      { rootMargin: MARGIN, scrollMargin: MARGIN },
    );
    viewer.observe(chart);
    // The change the chart holds and has not drawn (out of view), decoded as Plotly would draw it;
    // null when it shows its newest state (Plotly's gd.data and gd.layout then). harness/page_state.js
    // reads every chart's state with it.
    chart.scanlabHeld = () =>
      held ? { data: decode(model.get("data")), layout: decode(model.get("plot_layout")) } : null;
    await draw();

    return () => {
      gone = true;
      observer.disconnect();
      viewer.disconnect();
      clearTimeout(timer);
      for (const name of traits) model.off(name, changed);
      model.off("change:alt", describe);
      Plotly.purge(chart);
    };
  },
};
