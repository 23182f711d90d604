// What a page paints during a drag (benchmarks/drag.py), from the mouse going down on a slider's
// handle: each change with its time (performance.now(), ms) at the animation frame that paints it.
// The echo: its label's text. The explorer: the trajectory chart at each of Plotly's drawing events
// (a full redraw, a points-only frame, a relayout), with the run it draws.
({ kind }) => {
  const changes = [];
  let down = null;
  let armed = false;
  // One change per painted frame, and only a distinct one: Plotly may fire two drawing events for
  // one redraw, in one frame or two (a relayout's event comes before the points it moves with).
  const painted = (value) => requestAnimationFrame((frame) => {
    const last = changes[changes.length - 1];
    if (last && last.frame === frame) last.value = value;
    else if (!last || last.value !== value) changes.push({ t: performance.now(), frame, value });
  });
  addEventListener("pointerdown", () => { if (armed && down === null) down = performance.now(); }, true);
  const watch = () => {
    if (kind === "echo") {
      const label = document.querySelector(".echo");
      if (!label) return false;
      new MutationObserver(() => { if (down !== null) painted(label.textContent); })
        .observe(label, { childList: true, characterData: true, subtree: true });
      return true;
    }
    const chart = [...document.querySelectorAll(".js-plotly-plot")]
      .find((gd) => gd.layout && String((gd.layout.title || {}).text || "").startsWith("Trajectory"));
    if (!chart || !chart.on) return false;
    const drawn = () => {
      if (down === null) return;
      const y = chart.data && chart.data[0] && chart.data[0].y;
      // The run drawn, by its length and a checksum of its weights (runs that converge share
      // their last weight, and a w0 drag's share it too).
      let sum = 0;
      for (let i = 0; y && i < y.length; i++) if (Number.isFinite(Number(y[i]))) sum += Number(y[i]) * (i + 1);
      painted(y && y.length ? `${y.length}: ${sum}` : null);
    };
    for (const event of ["plotly_afterplot", "plotly_animated", "plotly_relayout"]) chart.on(event, drawn);
    return true;
  };
  const poll = setInterval(() => { if (watch()) clearInterval(poll); }, 100);
  window.__drag = {
    arm: () => { armed = true; down = null; changes.length = 0; },
    downAt: () => down,
    changes: () => changes.slice(),
  };
};
