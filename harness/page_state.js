// A dashboard page as harness/pages.py checks it: every chart's traces as set, by the chart's
// title; the status line; the share link. A chart out of view holds a change without drawing it
// (widgets/surface.js): its held state is read then (scanlabHeld), else what Plotly draws from.
() => {
    const values = (v) => v == null ? null : Array.from(v, (x) => (typeof x === 'number' ? x : null));
    const charts = {};
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
        const held = typeof gd.scanlabHeld === 'function' ? gd.scanlabHeld() : null;
        const { data, layout } = held || gd;
        const title = String((layout && layout.title && layout.title.text) || '');
        charts[title] = (data || []).map((t) => ({
            x: values(t.x), y: values(t.y), z: t.z ? Array.from(t.z, values) : null,
        }));
    }
    const share = [...document.querySelectorAll('.widget-text')].find((w) => /share link/.test(w.innerText));
    return {
        charts,
        status: (document.querySelector('.scanlab-status') || {}).innerText || '',
        share: share ? share.querySelector('input').value : '',
    };
}
