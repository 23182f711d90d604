// A load test's browser page: true once its charts are drawn, the trajectory's drawing events
// (harness.protocol.CHART_DRAWN, the argument) then noted in window.__load.drawn.
(drawnEvents) => {
    const first = document.querySelectorAll('.js-plotly-plot .scatterlayer .trace').length > 0;
    if (!first || document.querySelectorAll('.js-plotly-plot').length < 6) return false;
    if (!window.__load) {
        const gd = [...document.querySelectorAll('.js-plotly-plot')]
            .find(g => g.layout && g.layout.title && String(g.layout.title.text).startsWith('Trajectory'));
        if (!gd || !gd.on) return false;
        window.__load = {drawn: 0};
        for (const event of drawnEvents) gd.on(event, () => { window.__load.drawn = performance.now(); });
    }
    return true;
}
