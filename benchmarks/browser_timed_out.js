// What a page that timed out shows (benchmarks/browser_page.py `page_state`): its charts drawn,
// and any error output in it.
() => {
    const gds = document.querySelectorAll('.js-plotly-plot');
    const out = [...document.querySelectorAll('.jp-OutputArea-output')]
        .map((e) => e.innerText).filter((t) => /error|traceback|exception/i.test(t));
    return `${window.__bench.nav.drawn} of ${gds.length} charts drawn; error outputs: `
        + (JSON.stringify(out).slice(0, 1500) || 'none');
}
