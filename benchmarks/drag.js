// What a page paints during a drag (benchmarks/drag.py), from the mouse going down on a slider's
// handle: each change with its time (performance.now(), ms) at the animation frame that paints it.
// The echo: its label's text. The explorer: the trajectory chart at each of Plotly's drawing events
// (a full redraw, a points-only frame, a relayout), with the last weight it draws.
({ kind }) => {
  const changes = [];
  let down = null;
  let armed = false;
  // One change per painted frame: Plotly may fire two drawing events for one redraw.
  const painted = (value) => requestAnimationFrame((frame) => {
    const last = changes[changes.length - 1];
    if (last && last.frame === frame) last.value = value;
    else changes.push({ t: performance.now(), frame, value });
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
      painted(y && y.length ? Number(y[y.length - 1]) : null);
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
