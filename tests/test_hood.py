"""Issue 5's "under the hood" panels without a browser: each shows what core computes, no control
recompiles, bad values get a notice, and the live timing panel ends cleanly at its timeout."""

import time

import numpy as np
import plotly.colors as pc
import plotly.io as pio
import pytest
from traitlets import TraitError

import core
from widgets import PRESETS, Explorer
from widgets.chart import COLORS, TRACE_TYPES
from widgets.hood import (
    BATCH_SIZES,
    LR_DEMO,
    MAX_STEPS,
    MEASURING_SLOTS,
    MEMORY_LENGTHS,
    PANELS,
    SYNC_EVERY,
    UnderTheHood,
    take_slot,
)
from widgets.surface import Surface


@pytest.fixture(scope="module")
def hood():
    return UnderTheHood()


def test_panels_are_built_only_when_opened():
    hood = UnderTheHood()
    sections = {name: hood.show(name) for name in PANELS}
    assert hood.panels == {}
    assert all(section.selected_index is None for section in sections.values())
    assert hood.show("optax") is sections["optax"]  # one section per panel
    sections["invariants"].selected_index = 0
    assert list(hood.panels) == ["invariants"]
    assert sections["invariants"].children == (hood.panels["invariants"].widget,)
    with pytest.raises(ValueError, match="name must be one of"):
        hood.show("nonsense")


def test_the_explorer_has_the_section():
    explorer = Explorer(background=False)
    assert isinstance(explorer.hood, UnderTheHood) and explorer.hood.panels == {}


# Loop-invariant inputs -----------------------------------------------------------------------------


def test_invariants_panel_shows_seed_002s_numbers_for_all_three(hood):
    panel = hood.open("invariants")
    panel.length.value, panel.b.value = 5, 2.0
    for name in core.STRATEGIES:
        assert "total = <b>20</b>, per step = [0 2 4 6 8]" in panel.results[name].value, name
    assert "<b>scanned input</b>" in panel.results["duplicate"].value
    assert "<b>constant of the loop</b>" in panel.results["closure"].value
    assert "broadcast_in_dim b" in panel.jaxprs["duplicate"].value
    assert "broadcast_in_dim" not in panel.jaxprs["closure"].value


def test_invariants_panel_follows_its_controls(hood):
    panel = hood.open("invariants")
    panel.length.value, panel.b.value = 4, -1.5
    for name in core.STRATEGIES:
        assert "total = <b>-9</b>, per step = [-0 -1.5 -3 -4.5]" in panel.results[name].value
    assert "f32[4]" in panel.jaxprs["duplicate"].value
    panel.b.value = float("nan")  # a visitor can send it over the widget protocol
    assert panel.b.value == 2.0 and "not a number" in panel.notice.value
    assert "total = <b>12</b>" in panel.results["carry"].value
    panel.b.value = 1.0
    assert panel.notice.value == ""


def test_the_memory_chart_is_xlas_count(hood):
    panel = hood.open("invariants")
    expected = core.strategy_memory(MEMORY_LENGTHS)
    for trace, name in zip(panel.memory_figure.figure().data, core.STRATEGIES, strict=True):
        assert trace.name == name
        np.testing.assert_array_equal(trace.x, MEMORY_LENGTHS)
        np.testing.assert_array_equal(trace.y, expected.temp_bytes[name])
    assert panel.memory_figure.figure().data[0].y[-1] > 4 * MEMORY_LENGTHS[-1]  # duplicate: N floats


def test_the_lr_rule_shows_one_trace_for_many_learning_rates(hood):
    text = hood.open("invariants").lr_rule.value
    assert "<b>1 trace</b> with lr traced" in text and f"<b>{len(LR_DEMO)} traces</b>" in text
    assert "<td>0.1</td><td>0.64</td>" in text  # seed 000's example


# Pytree parameters and Optax -------------------------------------------------------------------------


def _expected_fit(panel):
    x, y = core.linear_data(panel.seed.value)
    return core.train_linear(
        x,
        y,
        optimizer=panel.optimizer.value,
        lr=panel.lr.value,
        steps=panel.steps.value,
        batch_size=BATCH_SIZES[panel.batch_size.value],
        seed=panel.seed.value,
        max_steps=MAX_STEPS,
    )


def _assert_shows(panel, fit):
    w, b = fit.history["w"], fit.history["b"]
    for trace, values in zip(
        panel.params_figure.figure().data[:4], [w[:, 0], w[:, 1], w[:, 2], b], strict=True
    ):
        np.testing.assert_array_equal(trace.y, np.where(np.isfinite(values), values, np.nan))
        np.testing.assert_array_equal(trace.x, np.arange(1, len(values) + 1))
    losses = fit.losses.astype(np.float64)
    np.testing.assert_array_equal(panel.loss_figure.figure().data[0].y, np.where(losses > 0, losses, np.nan))


def test_optax_panel_starts_at_seed_004s_example(hood):
    panel = hood.open("optax")
    assert (panel.optimizer.value, panel.lr.value, panel.steps.value) == ("sgd", 0.1, 200)
    fit = _expected_fit(panel)
    _assert_shows(panel, fit)
    np.testing.assert_allclose(fit.params["w"], [2, -1, 0.5], atol=1e-2)
    assert "w = [2, -1, 0.5], b = 3" in panel.status.value


def test_optax_panel_never_recompiles(hood, count_compiles):
    panel = hood.open("optax")
    with count_compiles() as compiles:
        for optimizer in core.OPTIMIZERS:
            panel.optimizer.value = optimizer
            for lr, batch, steps, seed in [
                (0.03, "8", 17, 3),
                (0.5, "full (256)", 1024, 0),
                (1e-3, "1", 1, 9),
            ]:
                panel.lr.value, panel.batch_size.value = lr, batch
                panel.steps.value, panel.seed.value = steps, seed
                _assert_shows(panel, _expected_fit(panel))
    assert compiles == []


def test_optax_panel_says_when_a_run_diverges_and_recovers(hood):
    panel = hood.open("optax")
    panel.optimizer.value, panel.batch_size.value, panel.steps.value, panel.seed.value = (
        "sgd",
        "full (256)",
        200,
        0,
    )
    panel.lr.value = 3.0
    assert "Diverged" in panel.status.value
    assert np.isnan(panel.params_figure.figure().data[0].y[-1])  # drawn as a gap, not a broken chart
    panel.lr.value = float("nan")
    assert panel.lr.value == 0.1 and "not a number" in panel.status.value
    assert "Diverged" not in panel.status.value and "w = [2, -1, 0.5]" in panel.status.value


# Python loop vs scan vs unrolled ---------------------------------------------------------------------


def _wait_until(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


def test_loops_panel_measures_every_way_and_the_host_syncs(hood):
    panel = hood.open("loops")
    panel.largest.value, panel.timeout.value = "up to 100", 120
    panel.measure()
    assert panel.running and panel.measure_button.disabled and not panel.stop_button.disabled
    panel.wait(150)
    assert not panel.running and panel.last_returncode == 0, panel.status.value
    assert panel.status.value.startswith("Done in")
    ns = (10, 20, 50, 100)
    assert set(panel.points) == {(way, n) for way in core.WAYS for n in ns}
    for way, trace in zip(core.WAYS, panel.compile_figure.figure().data, strict=True):
        np.testing.assert_array_equal(trace.x, ns)
        assert np.all(np.asarray(trace.y) > 0), way
        np.testing.assert_array_equal(
            panel.run_figure.figure().data[core.WAYS.index(way)].y, [panel.points[way, n][1] for n in ns]
        )
    assert set(panel.syncs) == set(SYNC_EVERY)
    assert [panel.syncs[k][1] for k in SYNC_EVERY] == [1000, 100, 10, 1]
    assert list(panel.sync_figure.figure().data[0].customdata) == [1000, 100, 10, 1]
    assert not panel.measure_button.disabled and panel.stop_button.disabled


def test_loops_panel_returns_at_its_timeout_and_leaves_the_controls_usable(hood):
    panel = hood.open("loops")
    optax = hood.open("optax")
    panel.largest.value, panel.timeout.value = "up to 200", 5  # unrolled at N = 200 compiles for 10 s+
    started = time.monotonic()
    panel.measure()
    # While it measures, the other controls answer at once: the work is in another process.
    optax.lr.value = 0.05
    _assert_shows(optax, _expected_fit(optax))  # answered at once, with the run core computes
    panel.measure()  # a second press while running starts nothing
    assert _wait_until(lambda: not panel.running, 30), "the panel did not return at its timeout"
    assert time.monotonic() - started < 15
    # The status names the first six points not measured: which they are follows the machine's
    # speed (under load the unrolled loop's smaller N are missing too, and N = 200 is listed after
    # them, past the six), but an unrolled point is always among them.
    status = panel.status.value
    assert "Stopped at the timeout" in status and "unrolled at N = " in status.split("not measured:")[1]
    assert panel.last_returncode is not None and panel.last_returncode < 0  # the process was killed
    assert ("unrolled", 200) not in panel.points
    assert not panel.measure_button.disabled and panel.stop_button.disabled
    # usable again: a new measurement starts, and Stop ends it
    panel.largest.value = "up to 100"
    panel.measure()
    assert panel.running
    panel.stop_button.click()
    assert _wait_until(lambda: not panel.running, 10)
    assert "Stopped after" in panel.status.value and not panel.measure_button.disabled


def test_a_visitor_cannot_move_the_panels_bounds_or_break_their_controls(hood):
    loops, optax = hood.open("loops"), hood.open("optax")
    loops.timeout.min = 0  # a visitor can send any trait over the widget protocol: it is put back
    assert loops.timeout.min == 5
    loops.timeout.value = 1
    assert loops.timeout.value == 5
    with pytest.raises(TraitError):
        optax.lr.set_state({"max": 5000, "value": 1e300})  # overflowed 10 ** max before
    assert optax.lr.max == 0.5
    optax.lr.value = 0.05
    assert "After 200 steps" in optax.status.value
    with pytest.raises(TraitError):
        optax.batch_size.set_state({"_options_labels": list("abcdefghij"), "index": 9})
    assert optax.batch_size._options_labels == tuple(BATCH_SIZES)
    with pytest.raises(TraitError):
        optax.optimizer.set_state({"index": True})
    assert optax.optimizer.index in (0, 1, 2) and type(optax.optimizer.index) is int


def test_a_busy_server_runs_no_more_measurements_than_its_slots(hood, tmp_path):
    panel = hood.open("loops")
    panel.slot_folder = str(tmp_path)
    held = [take_slot(str(tmp_path)) for _ in range(MEASURING_SLOTS)]  # other kernels measuring
    assert all(held) and take_slot(str(tmp_path)) is None
    try:
        returncode = panel.last_returncode = "untouched"
        panel.measure()
        assert _wait_until(lambda: not panel.running, 10)
        assert "already running on this server" in panel.status.value
        assert panel.last_returncode == returncode  # no process was started
        assert not panel.measure_button.disabled
    finally:
        held.pop().close()
    panel.timeout.value = 5
    panel.measure()  # a slot is free again
    assert _wait_until(lambda: "Measuring" in panel.status.value or not panel.running, 20)
    panel.stop()
    assert _wait_until(lambda: not panel.running, 10)
    assert "already running" not in panel.status.value
    for handle in held:
        handle.close()
    panel.slot_folder = None


def _every_chart(hood) -> list:
    """Every chart of the dashboard (go.Figure): the explorer's six of the lesson's w, its contour
    chart of the w, b model (drawn from a w, b run), and the panels' six."""
    explorer = Explorer(background=False)
    figures = [explorer.figures[name].figure() for name in explorer.drawn] + [
        explorer.stability.figure.figure()
    ]
    explorer.apply(PRESETS["narrow-valley"][1])
    figures.append(explorer.figures["plane"].figure())
    for name in ("invariants", "loops", "optax"):
        panel = hood.open(name)
        figures += [value.figure() for value in vars(panel).values() if isinstance(value, Surface)]
    assert len(figures) == 6 + 1 + 6
    return figures


def test_every_chart_has_its_trace_types_defaults_from_plotly_white(hood):
    # widgets.figures.template keeps plotly_white's defaults for TRACE_TYPES only (a smaller widget
    # state); a chart with any other type would lose its defaults.
    white = pio.templates["plotly_white"]
    for figure in _every_chart(hood):
        kinds = {trace.type for trace in figure.data}
        assert kinds <= set(TRACE_TYPES), kinds
        template = figure.layout.template
        assert template.layout == white.layout
        for kind in kinds:
            assert template.data[kind] == white.data[kind], kind


def _luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of "#rrggbb" (or "white", plotly_white's plot)."""
    colour = {"white": "#ffffff"}.get(colour, colour)
    channels = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours, 1 to 21."""
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_contrast_ratio_is_wcags():
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # WebAIM's figure
    assert contrast("#E69F00", "#ffffff") < 3  # the Okabe-Ito orange the explorer had


def _colours(trace) -> set[str]:
    """The opaque colours a scatter or bar trace draws with: its line, its markers and their edges."""
    found = {trace.line.color} if "line" in trace else set()
    found |= {trace.marker.color, trace.marker.line.color}
    return {c for c in found if isinstance(c, str) and c.startswith("#")}


def test_every_line_that_carries_meaning_stands_out_from_what_it_is_drawn_on(hood):
    # WCAG 2.1 AA 1.4.11: the parts of a chart needed to read it have 3:1 against what is beside
    # them. Lines and markers on the white plot, each on its own; lines over the stability map's
    # cells, as a pair drawn one on the other (a line and its outline), one of which has 3:1 with
    # every colour a cell can have.
    seen = 0
    for figure in _every_chart(hood):
        background = figure.layout.plot_bgcolor or figure.layout.template.layout.plot_bgcolor
        lines = [trace for trace in figure.data if trace.type in ("scatter", "bar")]
        if not any(trace.type == "heatmap" for trace in figure.data):
            for trace in lines:
                for colour in _colours(trace):
                    seen += 1
                    assert contrast(colour, background) >= 3, (figure.layout.title.text, trace.name, colour)
            continue
        assert [c for _, c in figure.layout.coloraxis.colorscale] == pc.sequential.Viridis
        cells = [*pc.sequential.Viridis, COLORS["diverged"]]  # the scale's stops, and a diverged cell
        pairs: dict = {}
        for trace in lines:
            where = (trace.xaxis, tuple(np.nan_to_num(np.asarray(trace.x, dtype=np.float64))))
            pairs.setdefault(where, set()).update(_colours(trace))
        for shape in figure.layout.shapes:
            pairs.setdefault((shape.xref, shape.x0, shape.y0), set()).add(shape.line.color)
        assert len(pairs) == 4  # the critical lr's line and the box, on each panel
        for where, colours in pairs.items():
            for cell in cells:
                seen += 1
                assert max(contrast(c, cell) for c in colours) >= 3, (where, colours, cell)
    assert seen > 50


def test_the_learning_rate_panel_shows_each_place_and_follows_its_controls(hood):
    panel = hood.open("lr")
    x = np.ones((5, 2), np.float32)
    runs = core.lr_places(0.0, 0.1, x, x)
    assert "final w = <b>0.92224</b>" in panel.results["closed over"].value  # the worked example's steps
    for name, words in (
        ("closed over", "constant of the loop"),
        ("scanned", "scanned input"),
        ("carry", "carry"),
    ):
        assert f"final w = <b>{runs[name].final_w:.6g}</b>" in panel.results[name].value
        assert words in panel.results[name].value
        assert "scan[" in panel.jaxprs[name].value
    panel.steps.value = 3
    panel.lr.value = 0.25  # the critical lr of two ones: the first step lands on w* = 1
    assert all("final w = <b>1</b>" in panel.results[name].value for name in core.LR_PLACES)
    panel.lr.value = 0.3
    assert panel.notice.value == ""


def test_the_learning_rate_panel_keeps_its_bounds_against_a_visitor(hood):
    panel = hood.open("lr")
    panel.lr.max = 5.0  # a visitor can send any trait over the widget protocol: it is put back
    assert panel.lr.max == 0.3
    panel.lr.value = 4.0
    assert panel.lr.value == 0.3
    x = np.ones((panel.steps.value, 2), np.float32)
    final = core.lr_places(0.0, 0.3, x, x)["carry"].final_w
    assert f"final w = <b>{final:.6g}</b>" in panel.results["carry"].value
