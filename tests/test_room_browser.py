"""What a room sees, in Chromium at the three sizes the lesson is shown at (issue 39): 1440 x 900, a
projector's 1024 x 768 (`?view=projector`) and a 390 x 844 phone with touch. The status sentence
and a link's notice are on the first screen; the share link and the exports can be reached; the
charts' toolbars offer no upload and, on touch, leave the titles clear; the sliders' handles are
large enough to touch; momentum, Defaults, Play's time and the share link's Copy work as they say.
tests/test_room.py checks the kernel's side without a browser."""

import re
import time

import numpy as np
import pytest

from harness.support.dashboard import Dashboard, expected_weights
from widgets.playback import PLAY_TIME, pace
from widgets.settings import DEFAULTS, PRESETS, to_query

PHONE = {"is_mobile": True, "has_touch": True}
VIEWS = {
    "desktop": ("", (1440, 900), {}),
    "projector": ("?view=projector", (1024, 768), {}),
    "phone": ("", (390, 844), PHONE),
}
KEPT = ["Download plot as a PNG", "Zoom", "Reset axes"]  # Plotly's titles of the buttons kept


def _view(view: str, query: str = "") -> tuple[str, tuple, dict]:
    """The address (`view`'s own query joined with `query`), window and device of `view`."""
    path, viewport, device = VIEWS[view]
    return (path + ("&" if path else "?") + query if query else path), viewport, device


def _open(browser, url, view: str, query: str = "", **options) -> Dashboard:
    address, viewport, device = _view(view, query)
    return Dashboard(browser, url + address, viewport=viewport, **device, **options)


def _read(page_to_read, view: str) -> Dashboard:
    """The page at `view`, shared by the module's tests that only read it."""
    address, viewport, device = _view(view)
    return page_to_read(address, viewport, **device)


# Whether the element matched by `selector` is in the window and is what is drawn at its middle
# (nothing, such as the phone's sheet of controls, covers it), with its box.
ON_SCREEN = """(selector) => {
    const element = document.querySelector(selector);
    const r = element.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
    const inside = r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0
        && r.bottom <= innerHeight && r.right <= innerWidth;
    return {inside, drawn: element.contains(document.elementFromPoint(x, y)),
            box: [r.left, r.top, r.right, r.bottom], text: element.innerText};
}"""


@pytest.mark.parametrize("view", VIEWS)
def test_the_status_and_a_links_notice_are_on_the_first_screen(browser, dashboard_url, view):
    page = _open(browser, dashboard_url, view, "lr=abc")
    for selector, words in [
        (".scanlab-words .scanlab-status", "sum loss: converging"),
        (".scanlab-words .scanlab-notice", "lr='abc' is not a number"),
    ]:
        seen = page.page.evaluate(ON_SCREEN, selector)
        assert seen["inside"] and seen["drawn"] and words in seen["text"], (view, selector, seen)
    # Next to the trajectory: directly above its chart.
    status = page.page.evaluate(ON_SCREEN, ".scanlab-words .scanlab-status")["box"]
    chart = page.page.evaluate("() => scanlabChart('Trajectory').getBoundingClientRect().top")
    assert 0 <= chart - status[3] < 60, (view, status, chart)
    assert page.errors == [], page.errors
    page.close()


# Each chart's title (its first line) and the top and bottom of its box.
CHART_BOXES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
    const r = gd.getBoundingClientRect();
    return [String(gd.layout.title.text).split('<')[0], r.top, r.bottom];
})"""


@pytest.mark.parametrize(
    ("view", "query", "whole"),
    [
        # The lesson's first two rows: the trajectory and the loss, then the landscape, legends and all.
        ("desktop", "", ["Trajectory: the carry w", "Loss per step", "Loss landscape: the steps drawn"]),
        # The room's picture of the w, b model: the contour first, under the status.
        ("projector", "model=w,b", ["Loss landscape: the steps on L(w, b)"]),
    ],
)
def test_the_first_screen_holds_whole_charts(page_to_read, view, query, whole):
    address, viewport, device = _view(view, query)
    page = page_to_read(address, viewport, **device)
    charts = page.page.evaluate(CHART_BOXES)
    first = [chart for chart in charts if chart[1] < viewport[1]][: len(whole)]  # by their place
    assert [title[: len(w)] for (title, *_), w in zip(first, whole, strict=False)] == whole, charts
    for title, top, bottom in first:
        assert 0 <= top and bottom <= viewport[1], (view, title, top, bottom)


@pytest.mark.parametrize("view", VIEWS)
def test_the_share_link_and_exports_can_be_reached(page_to_read, view):
    page = _read(page_to_read, view)
    sheet = page.page.locator(".scanlab-sheet-toggle")
    if view == "phone":
        sheet.click()  # "All controls"
    for target in [
        page.page.locator(".scanlab-share input[type=text]"),
        page.page.get_by_role("button", name="Copy link"),
        page.page.get_by_role("button", name="Export CSV"),
    ]:
        target.scroll_into_view_if_needed()
        box = target.bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= VIEWS[view][1][1], (view, box)
        target.click(trial=True)  # Playwright's check that a click would land on it
    if view == "phone":
        sheet.click()  # closed again, as the page opened
        assert sheet.get_attribute("aria-expanded") == "false"


# Each chart's toolbar buttons (by Plotly's titles), its toolbar's box and its title's box.
TOOLBARS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
    const box = (e) => { if (!e) return null; const r = e.getBoundingClientRect();
        return r.width ? [r.left, r.top, r.right, r.bottom] : null; };
    return {title: String(gd.layout.title.text).split('<')[0],
            buttons: [...gd.querySelectorAll('.modebar-btn')].map(b => b.getAttribute('data-title')),
            toolbar: box(gd.querySelector('.modebar')), heading: box(gd.querySelector('.gtitle'))};
})"""


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("view", VIEWS)
def test_the_charts_toolbars_offer_no_upload_and_leave_the_titles_clear_on_touch(page_to_read, view):
    page = _read(page_to_read, view)
    charts = page.page.evaluate(TOOLBARS)
    assert len(charts) == 6
    for chart in charts:
        assert chart["buttons"] == KEPT, chart  # no "Share chart...", no lasso, pan or spikes
    if view == "phone":
        for chart in charts:  # on touch the toolbar is always shown
            assert chart["toolbar"] and chart["heading"], chart
            assert not _overlap(chart["toolbar"], chart["heading"]), chart


HANDLES = """() => [...document.querySelectorAll('.widget-slider')].filter(s => s.offsetParent)
    .map(s => { const r = s.querySelector('.noUi-handle').getBoundingClientRect();
        return [s.querySelector('label').innerText, r.width, r.height]; })"""


def test_slider_handles_are_24_px_on_touch(page_to_read):
    page = _read(page_to_read, "phone")
    assert page.page.evaluate("() => matchMedia('(pointer: coarse)').matches")
    closed = page.page.evaluate(HANDLES)
    assert [name for name, *_ in closed] == ["lr", "N", "B"]
    sheet = page.page.locator(".scanlab-sheet-toggle")
    sheet.click()
    opened = page.page.evaluate(HANDLES)
    assert len(opened) >= 8  # every slider of the panel, step included
    for name, width, height in closed + opened:
        assert width >= 24 and height >= 24, (name, width, height)
    sheet.click()  # closed again, as the page opened
    desktop = _read(page_to_read, "desktop")  # a mouse keeps ipywidgets' 16 px
    assert all(width == 16 for _, width, _ in desktop.page.evaluate(HANDLES))


def test_momentum_is_disabled_with_its_reason_under_sgd_and_enabled_under_momentum(browser, dashboard_url):
    page = _open(browser, dashboard_url, "desktop")
    momentum = page.slider("momentum")
    reason = page.page.get_by_text("momentum changes nothing here")
    assert momentum.locator(".noUi-target[disabled]").count() == 1 and reason.is_visible()
    optimizer = page.page.locator(".widget-dropdown").filter(
        has=page.page.locator("label", has_text="optimizer")
    )
    optimizer.locator("select").select_option("momentum")
    page.page.wait_for_function(
        """() => [...document.querySelectorAll('.widget-slider')]
            .find(s => s.querySelector('label').innerText === 'momentum')
            .querySelector('.noUi-target:not([disabled])')""",
        timeout=10_000,
    )
    reason.wait_for(state="hidden", timeout=10_000)
    assert page.errors == [], page.errors
    page.close()


def test_defaults_brings_every_control_back(browser, dashboard_url):
    page = _open(browser, dashboard_url, "desktop")
    diverging = PRESETS["diverging"][1]
    page.page.get_by_role("button", name="Diverging", exact=True).click()
    expected = expected_weights(diverging)
    page.wait_for_trajectory(lambda now: now.shape == expected.shape, "showed the Diverging preset")
    page.page.locator(".widget-button", has_text="Reset").click()
    page.page.locator(".widget-button", has_text="Defaults").click()
    expected = expected_weights(DEFAULTS)
    after = page.wait_for_trajectory(
        lambda now: now.shape == expected.shape and np.allclose(now, expected, rtol=1e-6),
        "showed the defaults",
    )
    np.testing.assert_allclose(after, expected, rtol=1e-6)
    share = page.page.locator(".scanlab-share input[type=text]")
    assert share.input_value().endswith("?" + to_query(DEFAULTS))
    # At the run's end, as the page opened. The charts can be drawn before the step's readout:
    # read it once the page has settled (a full run found "0" read between the two).
    step = page.slider("step").locator(".widget-readout")
    page.page.wait_for_function(
        "([el, n]) => el.innerText === n", arg=[step.element_handle(), str(DEFAULTS.N)], timeout=10_000
    )
    assert step.inner_text() == str(DEFAULTS.N)
    assert page.errors == [], page.errors
    page.close()


def _quiet(page, still: float = 0.5, limit: float = 10.0) -> None:
    """Wait until the page has received nothing over its websockets for `still` seconds."""
    end = time.monotonic() + limit
    count = -1
    while count != len(page.frames_received) and time.monotonic() < end:
        count = len(page.frames_received)
        page.page.wait_for_timeout(still * 1000)


def test_reset_then_defaults_at_once_ends_at_the_runs_end(browser, dashboard_url):
    # Clicked in one task of the page (0 ms apart), three times: with the step slider linked to
    # Play in the page, the page's answer to Reset reached the kernel after Defaults and put the
    # step back to 0 (10 of 18 tries 0 to 30 ms apart).
    page = _open(browser, dashboard_url, "desktop")
    step = page.slider("step").locator(".widget-readout")
    expected = expected_weights(DEFAULTS)
    for _ in range(3):
        page.page.get_by_role("button", name="Diverging", exact=True).click()
        page.wait_for_trajectory(lambda now: now.shape != expected.shape, "showed the Diverging preset")
        page.page.evaluate("""() => {
            const button = (text) => [...document.querySelectorAll('.widget-button')]
                .find(b => b.innerText.includes(text));
            button('Reset').click();
            button('Defaults').click();
        }""")
        page.wait_for_trajectory(lambda now: now.shape == expected.shape, "showed the defaults")
        _quiet(page)  # every message of the two clicks answered: the state the page stays in
        assert step.inner_text() == str(DEFAULTS.N)
    assert page.errors == [], page.errors
    page.close()


# Each text the step's readout shows, as the page shows it (a MutationObserver: no frame missed
# between two reads from here).
READOUTS = """(el) => {
    window.scanlabReadouts = [];
    new MutationObserver(() => window.scanlabReadouts.push(el.innerText))
        .observe(el, {childList: true, characterData: true, subtree: true});
}"""


@pytest.mark.parametrize("n", [10, 1000])
def test_play_takes_the_chosen_time_whatever_n(browser, dashboard_url, n):
    page = _open(browser, dashboard_url, "desktop", f"N={n}")
    menu = page.page.locator(".widget-dropdown").filter(has=page.page.locator("label", has_text="play time"))
    since = len(page.frames_received)
    menu.locator("select").select_option("5 s")
    per_frame = pace(n, 5)[1]
    # The kernel's new pace has reached the Play widget (a message to the page sets its interval or
    # its steps per frame, whichever the new time changes).
    changed = [
        f'"{key}":\\s*{new}\\b'
        for key, new, old in zip(("interval", "step"), pace(n, 5), pace(n, PLAY_TIME), strict=True)
        if new != old
    ]
    paced = re.compile("|".join(changed))
    for _ in range(100):
        if any(paced.search(str(frame)) for frame in page.frames_received[since:]):
            break
        page.page.wait_for_timeout(100)  # Playwright records frames only while it is called
    else:
        raise AssertionError(f"the new play time never reached the page: {paced.pattern}")
    step = page.slider("step").locator(".widget-readout")
    page.page.locator(".widget-button", has_text="Reset").click()
    for _ in range(50):
        if step.inner_text() == "0":
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"Reset left the step at {step.inner_text()}")
    step.evaluate(READOUTS)
    start = time.monotonic()
    page.page.get_by_role("button", name="Play", exact=True).click()
    while step.inner_text() != str(n):
        assert time.monotonic() - start < 12, step.inner_text()
        time.sleep(0.05)
    took = time.monotonic() - start
    # The chosen time, whatever N: ceil(N / step) frames of `interval` ms (5 s at N = 10, one step a
    # frame, as at N = 1000, 20 a frame; 400 ms a step once took 400 s). The readout follows the
    # kernel, which a busy page's messages reach coalesced (ipywidgets' throttle): every step shown is
    # a frame's, in order, up to N. The time stretches with a loaded machine's timers (7.3 s once in
    # CI), so from here it bounds the interval only roughly: under 12 s, at least 4.
    shown = [int(text) for text in page.page.evaluate("() => window.scanlabReadouts")]
    assert shown and shown[-1] == n and all(k % per_frame == 0 for k in shown), shown
    assert list(dict.fromkeys(shown)) == sorted(set(shown)), shown  # forward only
    assert took >= 4.0, took
    assert page.errors == [], page.errors
    page.close()


def test_the_share_links_copy_and_its_view_only_when_asked(browser, dashboard_url):
    page = _open(
        browser,
        dashboard_url,
        "projector",
        "lr=0.05&hide=seed",
        permissions=["clipboard-read", "clipboard-write"],
    )
    share = page.page.locator(".scanlab-share input[type=text]")
    assert share.input_value().endswith("?lr=0.05&N=100&B=16&loss=sum")  # no view=, no hide=
    page.page.get_by_role("button", name="Copy link").click()
    page.page.get_by_role("button", name="Copied").wait_for(timeout=10_000)
    assert page.page.evaluate("navigator.clipboard.readText()") == share.input_value()
    page.page.get_by_role("checkbox", name="with this view").check()
    page.page.wait_for_function(
        "(end) => document.querySelector('.scanlab-share input[type=text]').value.endsWith(end)",
        arg="&view=projector&hide=seed",
        timeout=10_000,
    )
    assert page.errors == [], page.errors
    page.close()


# The first explanation's heading: its hand, the words beside it, and its focus ring when tabbed to.
HEADING = """() => {
    const summary = document.querySelector('details.scanlab-explanation > summary');
    const after = getComputedStyle(summary, '::after');
    return {cursor: getComputedStyle(summary).cursor, words: after.content, border: after.borderTopStyle,
            open: summary.parentElement.open};
}"""


def test_the_explanations_headings_say_they_open(page_to_read):
    page = _read(page_to_read, "desktop")
    closed = page.page.evaluate(HEADING)
    assert closed == {"cursor": "pointer", "words": '"show"', "border": "solid", "open": False}, closed
    summary = page.page.locator("details.scanlab-explanation > summary").first
    summary.focus()
    page.page.keyboard.press("Enter")
    opened = page.page.evaluate(HEADING)
    assert opened["open"] and opened["words"] == '"hide"', opened
    page.page.keyboard.press("Enter")  # closed again, as the page opened
    assert not page.page.evaluate(HEADING)["open"]


# Each visible readout and drop-down of the control panel: its text, whether the text overflows its
# box, and its font size.
CONTROL_TEXTS = """() => [...document.querySelectorAll('.scanlab-controls :is(.widget-readout, select)')]
    .filter(e => e.offsetParent)
    .map(e => [e.innerText || e.value, e.scrollWidth > e.clientWidth, getComputedStyle(e).fontSize])"""


def test_the_projectors_readouts_hold_their_values_and_the_drop_downs_its_size(page_to_read):
    path, viewport, device = _view("projector", "preset=narrow-valley")
    found = page_to_read(path, viewport, **device).page.evaluate(CONTROL_TEXTS)
    assert ["0.005750", False, "20px"] in found, found  # lr's 4 significant digits, whole
    assert [text for text, clipped, _ in found if clipped] == [], found
    assert {size for _, _, size in found} == {"20px"}, found
