"""What a room sees, without a browser (issue 39): the words above the trajectory, a toolbar without
Plotly's upload, momentum disabled where it changes nothing, Defaults, Play in a chosen time, a
share link that carries the view only when asked. tests/test_room_browser.py checks the same on the
page at three sizes."""

import math

import pytest

from widgets import DEFAULTS, PRESETS, Explorer
from widgets.controls import MOMENTUM_UNUSED
from widgets.export import charts_html
from widgets.playback import FRAME_MS, PLAY_TIMES, pace
from widgets.settings import Presentation, momentum_used
from widgets.surface import TOOLBAR

KEPT = {"toImage", "zoom2d", "resetScale2d"}  # download PNG, zoom, reset axes


@pytest.fixture(scope="module")
def explorer():
    return Explorer(background=False)


def test_the_words_stand_above_the_trajectory_not_in_the_control_panel(explorer):
    shown = explorer.show("trajectory", "loss")
    assert shown.children[0] is explorer.words
    assert explorer.words.children == (explorer.notice, explorer.status, explorer.standardize_button)
    assert explorer.words not in explorer.controls.children
    assert explorer.show("landscape").children[0] is not explorer.words  # one place on the page


def test_no_chart_offers_plotlys_upload():
    explorer = Explorer(background=False)
    explorer.hood.open("optax")
    surfaces = [
        *explorer.figures.values(),
        explorer.stability.figure,
        explorer.hood.open("optax").loss_figure,
    ]
    for surface in surfaces:
        buttons = {name for group in surface.config["modeBarButtons"] for name in group}
        assert buttons == KEPT, buttons
        assert surface.config["displaylogo"] is False
    assert "sendChartToCloud" not in str(TOOLBAR)
    page = charts_html([explorer.figures["trajectory"]], explorer.settings)  # the offline export too
    assert '"modeBarButtons": [["toImage", "zoom2d", "resetScale2d"]]' in page


@pytest.mark.parametrize(
    "optimizer, map_, used",
    [
        ("sgd", "B", False),
        ("adam", "B", False),
        ("momentum", "B", True),
        ("nesterov", "B", True),
        ("sgd", "momentum", True),
    ],
)
def test_momentum_is_disabled_with_its_reason_where_it_changes_nothing(explorer, optimizer, map_, used):
    explorer.apply(DEFAULTS._replace(optimizer=optimizer, map=map_))
    assert momentum_used(explorer.settings) is used
    assert explorer.inputs["momentum"].disabled is not used
    assert (explorer.momentum_note.layout.display != "none") is not used
    assert "momentum and nesterov" in MOMENTUM_UNUSED and explorer.momentum_note.value == MOMENTUM_UNUSED
    explorer.apply(DEFAULTS)


def test_a_hidden_momentum_keeps_its_note_hidden():
    explorer = Explorer(background=False, presentation=Presentation(hide=("momentum",)))
    assert explorer.inputs["momentum"].disabled and explorer.momentum_note.layout.display == "none"


def test_defaults_restores_every_control_and_the_runs_end(explorer):
    explorer.apply(PRESETS["diverging"][1]._replace(optimizer="adam"))
    explorer.reset_button.click()
    assert explorer.step == 0
    explorer.defaults_button.click()
    assert explorer.settings == DEFAULTS
    assert {name: widget.value for name, widget in explorer.inputs.items()} == DEFAULTS._asdict()
    assert explorer.step == DEFAULTS.N == explorer.play.value
    assert explorer.defaults_button in explorer.controls.children[1].children  # beside the presets


def _play_time(play) -> float:
    """How long ipywidgets.Play takes from 0 to its max: a frame every `interval` ms, `step` steps each,
    and the last frame, which would pass max, stops it (Playback shows max then)."""
    return play.interval * math.ceil(play.max / play.step) / 1000


@pytest.mark.parametrize("n", [1, 2, 10, 60, 997, 1000])
@pytest.mark.parametrize("seconds", [seconds for _, seconds in PLAY_TIMES])
def test_pace_spreads_the_chosen_time_over_any_n(n, seconds):
    interval, step = pace(n, seconds)
    assert interval >= FRAME_MS or step == 1
    assert math.isclose(interval * math.ceil(n / step), seconds * 1000, rel_tol=0.02)


def test_play_takes_the_chosen_time_whatever_n(explorer):
    for n in (1000, 10):
        explorer.apply(DEFAULTS._replace(N=n))
        assert math.isclose(_play_time(explorer.play), 10, rel_tol=0.02), (n, explorer.play.interval)
        explorer.playback.time.value = 30
        assert math.isclose(_play_time(explorer.play), 30, rel_tol=0.02)
        explorer.playback.time.value = 10
    assert (explorer.play.interval, explorer.play.step) == (1000, 1)  # N = 10: a step a second
    explorer.apply(DEFAULTS)


def test_play_shows_the_end_when_its_last_frame_would_pass_it(explorer):
    explorer.apply(DEFAULTS._replace(N=997))
    assert explorer.play.step == 10
    explorer.play.value = 990
    explorer.play.playing = True
    explorer.play.playing = False  # as the page's Play stops: 990 + 10 > 997
    assert explorer.play.value == 997 and explorer.step == 997
    explorer.play.value = 500
    explorer.play.playing = True
    explorer.play.playing = False  # a pause mid-run stays where it is
    assert explorer.step == 500
    explorer.apply(DEFAULTS)


def test_play_and_the_step_slider_are_linked_in_the_kernel(explorer):
    # The page links nothing (see widgets/playback.py): what a visitor moves, the kernel follows.
    explorer.step_slider.value = 7  # a drag
    assert explorer.play.value == 7 == explorer.step
    explorer.play.value = 3  # a frame of the page's Play
    assert explorer.step_slider.value == 3 == explorer.step
    explorer.reset_button.click()
    assert explorer.play.value == 0 == explorer.step_slider.value == explorer.step
    # A new N never sends a value past a max (the page's slider would clamp it and send it back).
    seen = []
    record = lambda change: seen.append((change["owner"], change["name"], change["new"]))  # noqa: E731
    for widget in (explorer.play, explorer.step_slider):
        widget.observe(record, names=["value", "max"])
    for n in (40, 300, DEFAULTS.N):
        explorer.apply(DEFAULTS._replace(N=n))
        assert explorer.play.value == explorer.step_slider.value == explorer.step == n
    for widget in (explorer.play, explorer.step_slider):
        widget.unobserve(record, names=["value", "max"])
        state = {"value": 0, "max": DEFAULTS.N}
        for owner, name, new in seen:
            if owner is widget:
                state[name] = new
                assert state["value"] <= state["max"], (widget.description, seen)


def test_a_visitor_cannot_change_plays_pace(explorer):
    before = (explorer.play.interval, explorer.play.step)
    explorer.play.interval = 0  # a comm message can set any trait: Play would flood the kernel
    explorer.play.step = -5
    assert (explorer.play.interval, explorer.play.step) == before


def test_the_share_link_carries_the_view_only_when_asked():
    explorer = Explorer(background=False, presentation=Presentation("projector", ("seed",)))
    assert explorer.exports.with_view.layout.display != "none"
    assert "view=" not in explorer.share.value and "hide=" not in explorer.share.value
    explorer.exports.with_view.value = True
    assert explorer.share.value.endswith("&view=projector&hide=seed")
    explorer.inputs["lr"].value = 0.05
    assert "lr=0.05" in explorer.share.value and explorer.share.value.endswith("&view=projector&hide=seed")
    explorer.exports.with_view.value = False
    assert "view=" not in explorer.share.value
    # On a page of the default view there is no view to pass on: no box to tick.
    assert Explorer(background=False).exports.with_view.layout.display == "none"


def test_the_share_link_has_a_copy_button(explorer):
    assert explorer.exports.copy in explorer.exports.row
    assert ">Copy link</button>" in explorer.exports.copy.value
    assert (
        "scanlab-share"
        in next(
            row for row in explorer.controls.children if explorer.share in getattr(row, "children", ())
        )._dom_classes
    )
