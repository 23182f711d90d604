// In the page, before any of its scripts (benchmarks/browser_page.py): the websocket wrapped,
// keydowns, long tasks, chart events, on window.__bench. `options`: {expected: charts to wait for
// (0: none, the echo page: its slider instead; null: unknown), big: message bytes parsed whole,
// batch: widgets.batch.BATCH, drawn: the chart events that mean drawn
// (harness.protocol.CHART_DRAWN)}.
(options) => {
  if (window.__bench) return;
  const B = (window.__bench = {
    ws: [], keys: [], ap: [], dom: [], frames: [], charts: [], longtasks: [],
    nav: { first: null, all: null, drawn: 0, picture: null, still: false, stillGone: null,
           slider: null, end: null },
    framePending: false,
    expected: options.expected, move: null, hookMs: 0,
  });
  const BATCH = options.batch;  // widgets.batch.BATCH
  const BIG = options.big;  // message bodies parsed whole up to this size; larger ones only skimmed
  const text = new TextDecoder();
  const u64 = (view, at) => view.getUint32(at, true) + view.getUint32(at + 4, true) * 2 ** 32;
  const find = (re, s) => { const m = re.exec(s); return m ? m[1] : undefined; };
  function skim(head) {  // the fields we need from the start of a large JSON body
    const keys = [...head.matchAll(/"(revision|value)"\s*:/g)].map((m) => m[1]);
    return {
      msg_type: find(/"msg_type"\s*:\s*"([^"]+)"/, head),
      comm_id: find(/"comm_id"\s*:\s*"([^"]+)"/, head),
      data: { method: find(/"method"\s*:\s*"([^"]+)"/, head), keys,
              figure: /"revision"\s*:/.test(head),
              batch: head.includes(`"${BATCH}"`) },
    };
  }

  // A widget state that carries a chart's new figure (widgets.surface.Surface's revision).
  const drawing = (state) => "revision" in state;

  function decode(u8) {  // a Uint8Array: v1.kernel.websocket.jupyter.org, else the older binary framing
    const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
    const n = u64(view, 0);
    const part = (from, to) => text.decode(u8.subarray(from, to));
    if (n >= 5 && n < 1024 && u64(view, 8) === 8 * (n + 1)) {
      const at = [];
      for (let i = 0; i < n; i++) at.push(u64(view, 8 + 8 * i));
      at.push(u8.byteLength);
      const big = at[5] - at[4] > BIG;
      return { channel: part(at[0], at[1]), header: JSON.parse(part(at[1], at[2])),
               parent: JSON.parse(part(at[2], at[3])),
               content: big ? skim(part(at[4], at[4] + 4096)) : JSON.parse(part(at[4], at[5])) };
    }
    const start = view.getUint32(4, true);
    const end = view.getUint32(0, true) > 1 ? view.getUint32(8, true) : u8.byteLength;
    return whole(part(start, end));
  }
  function whole(body) {  // a JSON message as one string
    if (body.length > BIG) {
      const head = skim(body.slice(0, 4096));
      return { header: { msg_type: head.msg_type }, content: head };
    }
    const m = JSON.parse(body);
    return { channel: m.channel, header: m.header, parent: m.parent_header, content: m.content };
  }

  function record(dir, data) {
    const t = performance.now();
    try {
      let m, size;
      if (typeof data === "string") { m = whole(data); size = data.length; }
      else {
        const u8 = data instanceof ArrayBuffer ? new Uint8Array(data)
          : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        m = decode(u8);
        size = u8.byteLength;
      }
      const e = { t, dir, size, channel: m.channel };
      if (m.header) { e.type = m.header.msg_type; e.id = m.header.msg_id; e.date = m.header.date; }
      if (m.parent) e.parent = m.parent.msg_id;
      const c = m.content;
      if (c) {
        e.state = c.execution_state;
        e.comm = c.comm_id;
        const d = c.data || {};
        e.method = d.method;
        if (d.state) {
          e.keys = Object.keys(d.state);
          e.figure = drawing(d.state);
        } else if (d.method === "custom" && d.content && d.content.kind === BATCH) {
          // widgets/batch.py: the updates of one callback in one message
          const states = d.content.messages.map((part) => (part[1] && part[1].state) || {});
          e.keys = [...new Set(states.flatMap((state) => Object.keys(state)))];
          e.figure = states.some(drawing);
          e.batch = true;
        } else if (d.keys) {
          e.keys = d.keys;
          e.figure = d.figure;
          e.batch = d.batch;
        }
      }
      B.ws.push(e);
    } catch (error) {
      B.ws.push({ t, dir, error: String(error) });
    }
    B.hookMs += performance.now() - t;
  }

  const Native = window.WebSocket;
  class Watched extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => record("in", event.data));
    }
    send(data) {
      record("out", data);
      return super.send(data);
    }
  }
  window.WebSocket = Watched;

  window.addEventListener("keydown", (event) => B.keys.push(event.timeStamp), true);
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) B.longtasks.push([e.startTime, e.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch (error) {}

  // The animation frame after a change, which paints it, as [the time of its callbacks, the end of
  // its rendering]: a message posted from the frame's callback runs as the next task, after the
  // frame's style, layout and paint. The same for both pages (the echo's label, every chart).
  const frameAfter = () => {
    if (B.framePending) return;
    B.framePending = true;
    requestAnimationFrame(() => {
      const at = performance.now();
      B.framePending = false;  // a change after this callback is painted by the next frame
      const channel = new MessageChannel();
      channel.port1.onmessage = () => B.frames.push([at, performance.now()]);
      channel.port2.postMessage(null);
    });
  };

  // A chart has finished an operation (B.ap): a full redraw (afterplot), a data-only animation
  // without redraw (animated), a layout change drawn alone (relayout: a title); or its box was
  // shown or hidden.
  const DRAWN = options.drawn;
  const drawn = (gd) => gd.querySelector(".scatterlayer .trace, .heatmaplayer .hm") !== null;
  B.hook = () => {  // every chart on the page, in page order, with its afterplot events counted
    for (const gd of document.querySelectorAll(".js-plotly-plot")) {
      if (gd.__bench === undefined && typeof gd.on === "function") {
        const i = B.charts.length;
        gd.__bench = i;
        B.charts.push(gd);
        for (const event of DRAWN) gd.on(event, () => B.ap.push([performance.now(), i]));
        // When the chart's elements last changed (a mutation), and the frame that painted it.
        new MutationObserver(() => {
          B.dom.push([performance.now(), i]);
          frameAfter();
        }).observe(gd, { subtree: true, childList: true, attributes: true, characterData: true });
        // Its widget's box shown or hidden (ipywidgets' layout.display: the stability map's figure
        // of each kind), which is the whole change a person sees when a map drawn already is shown.
        const box = gd.parentElement;
        let hidden = box.style.display === "none";
        new MutationObserver(() => {
          if ((box.style.display === "none") === hidden) return;
          hidden = !hidden;
          const now = performance.now();
          B.ap.push([now, i]);
          B.dom.push([now, i]);
          frameAfter();
        }).observe(box, { attributes: true, attributeFilter: ["style"] });
      }
    }
    return B.charts.length;
  };
  // The charts laid out: not in a hidden box (display: none), wherever they are scrolled.
  const laidOut = () => [...document.querySelectorAll(".scanlab-chart")].filter((c) => c.clientWidth > 0);
  B.title = (gd) => {
    const title = gd.layout && gd.layout.title;
    return String((title && (title.text || title)) || "?").split("<")[0];
  };
  // Seen: a box of its own in the window, not hidden (a live output under its still is laid out but
  // visibility: hidden, serving's page template), not transparent.
  const seen = (e) => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight &&
      r.left < innerWidth &&
      (!e.checkVisibility || e.checkVisibility({ visibilityProperty: true, opacityProperty: true }));
  };
  const anySeen = (selector) => [...document.querySelectorAll(selector)].some(seen);
  // Each animation frame until the page has come (nav.end): the first and every chart drawn; the
  // first frame where a still's chart (widgets/still.py, `.scanlab-still svg`) is seen ("the first
  // picture"), and the first where no still remains once one was there; a slider seen (the echo
  // page's whole wait). In the frame's callbacks, before its paint, as nav.first and nav.all.
  const tick = () => {
    const nav = B.nav;
    let n = 0;
    for (const gd of document.querySelectorAll(".js-plotly-plot")) if (drawn(gd)) n++;
    const now = performance.now();
    nav.drawn = n;
    if (n > 0 && nav.first === null) nav.first = now;
    if (B.expected && n >= B.expected && nav.all === null) nav.all = now;
    const still = document.querySelector(".scanlab-still") !== null;
    if (still) nav.still = true;
    if (nav.picture === null && still && anySeen(".scanlab-still svg")) nav.picture = now;
    if (nav.still && !still && nav.stillGone === null) nav.stillGone = now;
    if (nav.slider === null && anySeen(".widget-slider")) nav.slider = now;
    const charts = B.expected === 0 ? nav.slider !== null : nav.all !== null;
    if (charts && (!nav.still || nav.stillGone !== null)) nav.end = now;
    else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);

  const start = (extra) => (B.move = {
    keyIdx: B.keys.length, wsIdx: B.ws.length, apIdx: B.ap.length, domIdx: B.dom.length,
    frameIdx: B.frames.length, ltIdx: B.longtasks.length,
    hookMs: B.hookMs, changed: null, ...extra,
  });
  B.armEcho = (selector) => {
    const label = document.querySelector(selector);
    const move = start({ text0: label.textContent });
    if (B.observer) B.observer.disconnect();
    B.observer = new MutationObserver(() => {
      if (move.changed === null && label.textContent !== move.text0) {
        move.changed = performance.now();
        frameAfter();
      }
    });
    B.observer.observe(label, { childList: true, characterData: true, subtree: true });
    return move.text0;
  };
  B.armCharts = () => start({ n: B.hook(), laidOut: laidOut().length }).n;
  B.failed = () => {  // the text of an output where the notebook failed (Voila renders it in the page)
    for (const e of document.querySelectorAll(".jp-OutputArea-output")) {
      const text = e.textContent;
      if (/error when executing cell|Traceback \(most recent/.test(text)) return text.slice(0, 400);
    }
    return null;
  };
  B.redrawn = () => {
    const m = B.move, key = B.keys[m.keyIdx], seen = new Set();
    if (key === undefined) return seen;
    for (let j = m.apIdx; j < B.ap.length; j++) if (B.ap[j][0] >= key) seen.add(B.ap[j][1]);
    return seen;
  };
  // The charts have settled when one has drawn (or been shown or hidden) since the key, none has a
  // change it has not drawn (widgets/surface.js marks those data-pending), and as many are laid out
  // as before, each drawn: a control need not change every chart (w0 leaves the per-step factors
  // as they are), and a map switch may hide one figure before the other's is made and drawn.
  const pending = () => B.charts.filter((gd) => gd.dataset.pending !== undefined);
  const settled = () => {
    const shown = laidOut();
    return shown.length >= B.move.laidOut && shown.every(drawn);
  };
  B.done = () =>
    B.move.n === undefined
      ? B.move.changed !== null
      : B.redrawn().size >= 1 && pending().length === 0 && settled();
  B.missing = () => {
    const seen = B.redrawn();
    const late = pending();
    return B.charts.filter((gd, i) => late.includes(gd) || (!seen.size && !seen.has(i))).map(B.title);
  };
  B.collect = () => {
    const m = B.move;
    return { key: B.keys[m.keyIdx], keys: B.keys.slice(m.keyIdx), ws: B.ws.slice(m.wsIdx),
             ap: B.ap.slice(m.apIdx), dom: B.dom.slice(m.domIdx), frames: B.frames.slice(m.frameIdx),
             longtasks: B.longtasks.slice(m.ltIdx),
             changed: m.changed, n: m.n,
             origin: performance.timeOrigin, hookMs: B.hookMs - m.hookMs,
             titles: B.charts.map((gd) => B.title(gd).split(/[:=]/)[0].trim()) };
  };
}
