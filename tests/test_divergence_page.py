"""A diverging run as a room sees it, in Chromium at the three sizes: the ✖ of "diverged at step k"
stands inside the trajectory's plotted area, not on a flat line at its foot, and the chart says
which scale it is on."""

import pytest

SIZES = [("", (1440, 900), False), ("&view=projector", (1024, 768), False), ("", (390, 844), True)]

# The ✖ of the trajectory (the one point of the diverged colour, #D55E00) and the plotted area, in
# page pixels, from the SVG that Plotly draws (public DOM, no Plotly internals). A hidden trace has no
# element, so the ✖ is found by its colour, not by its trace's place.
PLACES = """() => {
    const gd = [...document.querySelectorAll('.js-plotly-plot')]
        .find(g => (g.querySelector('.gtitle') || {}).textContent?.startsWith('Trajectory'));
    if (!gd) return null;
    const cross = [...gd.querySelectorAll('.scatterlayer .point')]
        .find(p => getComputedStyle(p).fill === 'rgb(213, 94, 0)');
    const area = gd.querySelector('.bglayer .bg') || gd.querySelector('.nsewdrag');
    const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const axis = gd.querySelector('.ytitle');
    return cross && area ? {cross: box(cross), area: box(area), ytitle: axis && axis.textContent} : null;
}"""


@pytest.fixture
def url(dashboard_url):
    return dashboard_url


@pytest.mark.parametrize(("query", "viewport", "phone"), SIZES, ids=["1440", "projector", "phone"])
def test_the_divergence_cross_is_inside_the_plotted_area(browser, url, query, viewport, phone):
    width, height = viewport
    context = browser.new_context(
        viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone
    )
    try:
        page = context.new_page()
        page.goto(url + "?preset=diverging" + query, timeout=60_000)
        places = page.wait_for_function(PLACES, timeout=90_000, polling=200).json_value()
        (cl, ct, cr, cb), (al, at, ar, ab) = places["cross"], places["area"]
        x, y = (cl + cr) / 2, (ct + cb) / 2
        assert al <= x <= ar and at <= y <= ab, places
        # Not at the foot or the top of the area, where a linear axis put it (1e-9 of its height).
        assert at + 0.1 * (ab - at) < y < ab - 0.1 * (ab - at), places
        assert places["ytitle"] == "weight w (signed log)"
    finally:
        context.close()
