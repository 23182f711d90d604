// A visit's timings once every chart is drawn, or the echo's slider shown (benchmarks/browser.py
// `visit`): the navigation's and resources' entries up to then, and what the probe
// (browser_page.js) recorded.
() => {
    const n = performance.getEntriesByType('navigation')[0] || {}, B = window.__bench;
    const until = B.nav.all !== null ? B.nav.all : B.nav.slider;
    const r = performance.getEntriesByType('resource').filter((e) => e.responseEnd <= until);
    const big = r.reduce((a, e) => (a && a.decodedBodySize >= e.decodedBodySize ? a : e), null);
    return {
        first: B.nav.first, all: B.nav.all, ws: B.ws, longtasks: B.longtasks,
        picture: B.nav.picture, still_gone: B.nav.stillGone, slider: B.nav.slider,
        fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
        response_end: n.responseEnd, dcl: n.domContentLoadedEventEnd,
        html_bytes: n.decodedBodySize, resources: r.length,
        resource_bytes: r.reduce((a, e) => a + e.decodedBodySize, 0),
        largest_resource: big && [big.name.split('?')[0].split('/').pop(), big.decodedBodySize],
        last_resource_end: r.reduce((a, e) => Math.max(a, e.responseEnd), 0),
    };
}
