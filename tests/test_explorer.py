"""The explorer without a browser: every control, preset, view change and playback step puts
exactly what core computes into the figures, and bad values never break a chart."""

import asyncio
import html
import json
import re
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import ipywidgets as ipw
import jax
import numpy as np
import plotly
import plotly.graph_objects as go
import plotly.offline
import pytest
from traitlets import TraitError

import core
import widgets.explorer
import widgets.stability
from harness.support.reference import batches_for
from widgets import DEFAULTS, PRESETS, Explorer
from widgets.axes import SignedLog, figure_scale
from widgets.chart import TRACE_TYPES
from widgets.figures import CHARTS
from widgets.model import LOSSES, MAP_BATCH_SIZES, MAP_LRS, MAP_MOMENTA
from widgets.settings import RANGES
from widgets.stability import BOX, SETTLE_S, TRACES_PER_LOSS
from widgets.surface import PLOTLY_PATH, PLOTLY_VERSION, SURFACE_JS, plotly_js, plotly_url, surface_maker


@pytest.fixture(scope="module")
def shared_explorer():
    return Explorer()


@pytest.fixture
def explorer(shared_explorer):
    shared_explorer.apply(DEFAULTS)
    return shared_explorer


def _expected(settings, loss="sum"):
    x, y = batches_for(settings)
    return x, y, core.training_history(settings.w0, settings.lr, x, y, loss=loss)


def _drawn(trace):
    """The values a trace draws; for weights on a signed log scale (a diverging run), the weights
    themselves, which it carries as customdata, once checked against the positions drawn."""
    if trace.customdata is None:
        return np.asarray(trace.y, dtype=np.float64)
    weights, drawn = (np.asarray(a, dtype=np.float64) for a in (trace.customdata, trace.y))
    finite = np.isfinite(weights)
    assert np.all(np.isnan(drawn[~finite]))
    assert any(np.allclose(SignedLog(10.0**e)(weights[finite]), drawn[finite]) for e in range(-3, 20))
    return weights


def _weights(history) -> np.ndarray:
    """w per step of a run: the explorer's (a core.PytreeHistory) or core's optimizer_history."""
    return history.params["w"] if hasattr(history, "params") else history.weights


def _as_drawn(history):
    """What the trajectory should draw: every finite weight, NaN (a gap) for the rest."""
    weights = _weights(history).astype(np.float64)
    weights[~np.isfinite(weights)] = np.nan
    return weights


def _assert_pytree_matches_core(explorer):
    """The w, b model's charts draw core.pytree_history's runs on make_batches' data, bit for bit."""
    s = explorer.settings
    x, y = batches_for(s)
    params = {"w": s.w0, "b": s.b0}
    runs = {loss: core.pytree_history(params, s.lr, x, y, loss=loss) for loss in ("sum", "mean")}
    trajectory = explorer.figures["trajectory"].figure().data
    for i, loss in enumerate(("sum", "mean")):
        w, b = (runs[loss].params[key].astype(np.float64) for key in ("w", "b"))
        np.testing.assert_array_equal(_drawn(trajectory[i]), w)
        np.testing.assert_array_equal(_drawn(trajectory[5 + i]), b)  # b per step, beside w
    w_star, b_star = core.optimum(x, y, intercept=True)
    np.testing.assert_allclose(_drawn(trajectory[7]), [b_star] * 2, rtol=1e-12)
    plane = explorer.figures["plane"].figure()
    assert "plane" in explorer.drawn and "landscape" not in explorer.drawn
    (w_low, w_high), (b_low, b_high) = plane.layout.xaxis.range, plane.layout.yaxis.range
    w, b = (runs["sum"].params[key].astype(np.float64) for key in ("w", "b"))
    assert np.all((w >= w_low) & (w <= w_high) & (b >= b_low) & (b <= b_high))  # a converging run
    np.testing.assert_array_equal(np.asarray(plane.data[1].x, dtype=np.float64), w)
    np.testing.assert_array_equal(np.asarray(plane.data[1].y, dtype=np.float64), b)
    np.testing.assert_allclose((plane.data[4].x[0], plane.data[4].y[0]), (w_star, b_star), rtol=1e-12)
    # Every contour is a level set of the average loss: its points all at its level.
    contour = plane.data[0]
    at = np.isfinite(np.asarray(contour.x, dtype=np.float64))
    cw, cb, level = (np.asarray(a, dtype=np.float64)[at] for a in (contour.x, contour.y, contour.customdata))
    np.testing.assert_allclose(core.average_loss(cw, x, y, b=cb), level, rtol=1e-9)
    factors = explorer.figures["divergence"].figure().data
    for i, loss in enumerate(("sum", "mean")):
        want = np.abs(core.step_factors(s.lr, x, loss=loss, intercept=True))
        np.testing.assert_allclose(_drawn(factors[i]), want, rtol=1e-12)


def _assert_matches_core(explorer):
    s = explorer.settings
    if s.model == "w,b":
        return _assert_pytree_matches_core(explorer)
    x, y, summed = _expected(s, "sum")
    averaged = core.training_history(s.w0, s.lr, x, y, loss="mean")
    trajectory = explorer.figures["trajectory"].figure()
    np.testing.assert_array_equal(_drawn(trajectory.data[0]), _as_drawn(summed))
    np.testing.assert_array_equal(_drawn(trajectory.data[1]), _as_drawn(averaged))
    np.testing.assert_array_equal(np.asarray(trajectory.data[0].x), np.arange(s.N + 1))
    assert tuple(_drawn(trajectory.data[2])) == (core.optimum(x, y),) * 2
    losses = explorer.figures["loss"].figure().data
    positive = summed.losses.astype(np.float64)
    positive[~(np.isfinite(positive) & (positive > 0))] = np.nan
    np.testing.assert_array_equal(_drawn(losses[0]), positive)
    factors = explorer.figures["divergence"].figure().data
    np.testing.assert_allclose(_drawn(factors[0]), np.abs(core.step_factors(s.lr, x)), rtol=1e-12)
    np.testing.assert_allclose(
        _drawn(factors[1]), np.abs(core.step_factors(s.lr, x, loss="mean")), rtol=1e-12
    )
    landscape = explorer.figures["landscape"].figure().data
    low, high = explorer.figures["landscape"].figure().layout.xaxis.range
    framed = _as_drawn(summed)
    with np.errstate(invalid="ignore"):
        outside = ~((_weights(summed) >= low) & (_weights(summed) <= high))
    if outside.any():  # a run that leaves the frame ends at its edge (an arrow says from which step)
        framed[np.argmax(outside) :] = np.nan
    np.testing.assert_array_equal(np.asarray(landscape[1].x, dtype=np.float64), framed)
    path_loss = core.average_loss(_weights(summed), x, y)
    path_loss[np.isnan(framed)] = np.nan
    np.testing.assert_allclose(_drawn(landscape[1]), path_loss, rtol=1e-12)
    assert landscape[3].x == (core.optimum(x, y),)
    assert landscape[3].y == (float(core.average_loss(core.optimum(x, y), x, y)),)
    np.testing.assert_allclose(
        _drawn(landscape[0]), core.average_loss(np.asarray(landscape[0].x), x, y), rtol=1e-12
    )


@pytest.mark.parametrize(
    ("control", "value"),
    [
        ("lr", 0.003),
        ("lr", 0.05),
        ("N", 1),
        ("N", 1000),
        ("B", 1),
        ("B", 512),
        ("w0", -4.5),
        ("true_w", -1.0),
        ("noise", 0.0),
        ("noise", 2.0),
        ("kind", "ones"),
        ("seed", 42),
    ],
)
def test_each_control_changes_the_figures_as_core_computes(explorer, control, value):
    before = _drawn(explorer.figures["trajectory"].figure().data[0]).copy()
    explorer.inputs[control].value = value
    assert getattr(explorer.settings, control) == value
    _assert_matches_core(explorer)
    after = _drawn(explorer.figures["trajectory"].figure().data[0])
    assert before.shape != after.shape or not np.array_equal(before, after, equal_nan=True)


EXPECTED_REGIMES = {
    "worked-example": "monotone",
    "smooth": "monotone",
    "oscillating": "oscillating",
    "two-cycle": "two-cycle",
    "diverging": "diverging",
    "sum-vs-mean": "oscillating",
    "schedule-rescue": "diverging",  # at its constant lr; the schedule's run is checked on its own
    "narrow-valley": "oscillating",  # 0.98 of SGD's critical lr: across the valley's walls
}


@pytest.mark.parametrize("preset", PRESETS)
def test_each_preset_lands_on_its_regime(explorer, preset):
    explorer.presets[preset].click()
    assert explorer.settings == PRESETS[preset][1]
    assert explorer.result.regimes["sum"] == EXPECTED_REGIMES[preset]
    _assert_matches_core(explorer)
    status = explorer.status.value
    if preset == "diverging":
        assert explorer.result.histories["sum"].diverged_at is not None
        k = explorer.result.histories["sum"].diverged_at
        # The word defined where it is said, and true of the run.
        assert (
            f"diverged at step {k} (after {k + 1} steps the distance of the carry from w* had grown over "
            "a million-fold)" in status
        )
        weights = explorer.result.histories["sum"].params["w"].astype(float)
        start, star = abs(weights[0] - explorer.result.w_star), explorer.result.w_star
        assert abs(weights[k + 1] - star) > 1e6 * start and abs(weights[k] - star) <= 1e6 * max(1.0, start)
        # The trajectory marks the weight step k produced, after k + 1 steps, and says so.
        marker = explorer.figures["trajectory"].figure().data[3]
        assert marker.x == (k + 1,) and "w after %{x} steps" in marker.hovertemplate
    if preset == "narrow-valley":
        # What its name promises, on the paths: SGD zig-zags across the floor at most steps and
        # crawls; momentum keeps near the floor once under way and ends far closer to the star.
        sgd, heavy = explorer.result.valley_paths["sum"]
        assert sgd.crossings > 0.8 * sgd.steps
        assert heavy.settled < 0.5 * sgd.settled and heavy.end < 0.1 * sgd.end
        said = explorer.captions["plane"].value
        assert f"at {sgd.crossings} of its {sgd.steps} steps" in said
        assert (
            f"(dotted): {heavy.crossings} of {heavy.steps}, {heavy.settled:.2g} and {heavy.end:.3g}" in said
        )
    if preset == "sum-vs-mean":
        assert explorer.result.regimes["mean"] == "monotone"
        moved = {loss: abs(float(h.params["w"][-1]) - 0.0) for loss, h in explorer.result.histories.items()}
        assert moved["mean"] < 0.5 * moved["sum"]  # the same lr moves the mean B times more slowly


def test_seed_example_shows_0_4_and_0_64(explorer):
    explorer.presets["worked-example"].click()
    np.testing.assert_allclose(
        _drawn(explorer.figures["trajectory"].figure().data[0]), [0.0, 0.4, 0.64], rtol=1e-6
    )
    explorer.reset_button.click()
    explorer.step_button.click()
    assert "w<sub>1</sub> = 0.4" in explorer.step_info.value and "= 0.64" in explorer.step_info.value
    assert "g = -2.4" in explorer.step_info.value


def test_the_words_fit_one_step_and_a_batch_of_one(explorer):
    explorer.apply(DEFAULTS._replace(N=1, B=1, loss="both"))
    assert explorer.step_info.value.count("after its one step the carry is") == 2
    caption = explorer.captions["sum_vs_mean"].value
    assert "(the same: B = 1)" in caption and "times larger" not in caption
    explorer.apply(DEFAULTS._replace(N=2, B=2))
    assert "after all 2 steps" in explorer.step_info.value
    assert "(B = 2 times larger)" in explorer.captions["sum_vs_mean"].value


def test_view_change_reuses_the_result(explorer, monkeypatch):
    calls = []
    monkeypatch.setattr(explorer.model, "compute", lambda s: calls.append(s))
    histories = explorer.result.histories
    for view in ("mean", "both", "sum"):
        explorer.inputs["loss"].value = view
        assert explorer.figures["trajectory"].figure().data[0].visible == (view in ("sum", "both"))
        assert explorer.figures["trajectory"].figure().data[1].visible == (view in ("mean", "both"))
    assert calls == [] and explorer.result.histories is histories


def test_playback_moves_the_highlight_on_every_chart(explorer):
    explorer.apply(DEFAULTS._replace(N=10))
    explorer.reset_button.click()
    assert explorer.step == 0
    for _ in range(3):
        explorer.step_button.click()
    assert explorer.step == 3
    weights = explorer.result.histories["sum"].params["w"]
    assert explorer.figures["trajectory"].figure().data[-1].y == (float(weights[3]),)
    assert explorer.figures["loss"].figure().data[-1].x == (3,)
    assert explorer.figures["landscape"].figure().data[-1].x == (float(weights[3]),)
    assert explorer.figures["divergence"].figure().data[-1].x == (3,)
    mean_weights = explorer.result.histories["mean"].params["w"]
    assert explorer.figures["sum_vs_mean"].figure().data[-1].y == (float(weights[3]), float(mean_weights[3]))
    explorer.inputs["N"].value = 5  # a new N puts the playback at its end
    assert explorer.step == 5 and explorer.play.max == 5


def test_non_finite_runs_render(explorer):
    explorer.apply(DEFAULTS._replace(lr=10.0, N=1000, B=512, noise=2.0))
    history = explorer.result.histories["sum"]
    assert history.diverged_at is not None and not np.all(np.isfinite(history.params["w"]))
    for figure in explorer.figures.values():
        for trace in figure.figure().data:
            if trace.y is not None and len(trace.y):
                values = np.asarray(trace.y, dtype=np.float64)
                assert not np.any(np.isinf(values))
    # A diverging run's weights are drawn on a signed log scale (widgets.figures.SignedLog), and the
    # trace carries the weights themselves for hover.
    trace = explorer.figures["trajectory"].figure().data[0]
    drawn, weights = (np.asarray(a, dtype=np.float64) for a in (trace.y, trace.customdata))
    finite = np.isfinite(history.params["w"])
    np.testing.assert_array_equal(weights[finite], history.params["w"][finite])  # the finite part is drawn
    np.testing.assert_allclose(drawn[finite], figure_scale(explorer.figures["trajectory"])(weights[finite]))
    assert np.all(np.isnan(drawn[~finite])) and np.all(np.isnan(weights[~finite]))
    assert explorer.figures["trajectory"].figure().data[3].x  # and the divergence step is marked


def test_widget_protocol_values_are_validated(explorer):
    explorer.inputs["lr"].value = float("nan")
    assert explorer.settings.lr == DEFAULTS.lr and explorer.inputs["lr"].value == DEFAULTS.lr
    assert "lr" in explorer.notice.value
    # And under the controls, where it was typed: the words above the trajectory may be far away.
    assert explorer.control_notice.value == explorer.notice.value
    assert explorer.control_notice in explorer.controls.children
    explorer.inputs["w0"].value = float("inf")  # the slider clamps this one itself
    assert explorer.settings.w0 == RANGES["w0"][1] == explorer.inputs["w0"].value
    assert explorer.control_notice.value == explorer.notice.value == ""  # the next move clears both


def test_a_links_notice_stays_in_the_words_above_the_trajectory(monkeypatch):
    monkeypatch.setenv("QUERY_STRING", "lr=abc")
    explorer = Explorer.from_environment()
    assert "lr=&#x27;abc&#x27; is not a number" in explorer.notice.value
    assert explorer.control_notice.value == ""


def test_visitors_cannot_move_the_bounds(explorer):
    # A visitor can send any trait over the widget protocol, bounds included (found in review:
    # N.max = 5 made the Smooth preset land on N = 5; lr.base = 0 made presets raise).
    explorer.inputs["N"].max = 5
    explorer.inputs["lr"].base = 0.0
    explorer.inputs["B"].min = -5
    with pytest.raises(TraitError):  # min is back at 1, so this is refused (the protocol logs it)
        explorer.inputs["B"].max = 0
    explorer.inputs["loss"].options = ["sum"]
    explorer.play.max = 3
    assert explorer.inputs["N"].max == RANGES["N"][1] and explorer.inputs["lr"].base == 10
    assert (explorer.inputs["B"].min, explorer.inputs["B"].max) == RANGES["B"]
    assert explorer.inputs["loss"].options == ("sum", "mean", "both")
    assert explorer.play.max == explorer.settings.N
    explorer.presets["smooth"].click()
    assert explorer.settings == PRESETS["smooth"][1]
    explorer.inputs["N"].value = 5000  # clamped by the restored bound
    assert explorer.settings.N == RANGES["N"][1] and explorer.play.max == RANGES["N"][1]


def test_url_state_and_share_link(monkeypatch):
    monkeypatch.setenv("QUERY_STRING", "preset=two-cycle&loss=<script>&N=1e9")
    monkeypatch.setenv("VOILA_REQUEST_URL", "http://127.0.0.1:8866/?preset=two-cycle")
    explorer = Explorer.from_environment()
    assert explorer.settings == PRESETS["two-cycle"][1]._replace(N=1000)
    assert "&lt;script&gt;" in explorer.notice.value and "<script>" not in explorer.notice.value
    assert (
        explorer.share.value
        == "http://127.0.0.1:8866/?lr=0.25&N=1000&B=4&loss=sum&true_w=1&noise=0&kind=ones"
    )
    explorer.inputs["lr"].value = 0.2
    assert explorer.share.value.startswith("http://127.0.0.1:8866/?lr=0.2&")


def test_no_control_change_recompiles(explorer, count_compiles):
    rng = np.random.default_rng(0)
    # The lr x momentum map compiles on its first use, as each optimizer does (the dashboard's
    # Explorer.from_environment compiles it before a visitor arrives); after that, nothing does.
    explorer.apply(DEFAULTS._replace(map="momentum"))
    explorer.stability.wait()
    with count_compiles() as compiles:
        for _ in range(25):
            explorer.apply(
                DEFAULTS._replace(
                    lr=float(10 ** rng.uniform(-4, 1)),
                    N=int(rng.integers(1, 1001)),
                    B=int(rng.integers(1, 513)),
                    loss=str(rng.choice(["sum", "mean", "both"])),
                    w0=float(rng.uniform(-10, 10)),
                    kind=str(rng.choice(["gaussian", "ones"])),
                    momentum=float(rng.uniform(0, 0.99)),
                    map=str(rng.choice(["B", "momentum"])),
                )
            )
            explorer.stability.wait()  # the map's own compiled grid counts too
    assert compiles == []


def _map_traces(explorer):
    """{loss: (outcome, diverged, boundary's outline, boundary, the current setting's box)} of the
    stability figure."""
    figure = explorer.stability.figure.figure()
    data, shapes = figure.data, figure.layout.shapes
    n = TRACES_PER_LOSS
    boxes = [shape for shape in shapes if shape.line.color == BOX["color"]]
    return {loss: (*data[n * i : n * i + n], boxes[i]) for i, loss in enumerate(LOSSES)}


def _expected_map(settings):
    x, y = batches_for(settings._replace(N=RANGES["N"][1], B=RANGES["B"][1]))
    padded = core.HistoryEngine(RANGES["N"][1], RANGES["B"][1]).pad(x, y)
    if settings.model == "w,b":
        params0 = {"w": settings.w0, "b": settings.b0}
        return core.pytree_stability_map(padded, MAP_LRS, MAP_BATCH_SIZES, params0=params0, n=settings.N)
    return core.stability_map(padded, MAP_LRS, MAP_BATCH_SIZES, w0=settings.w0, n=settings.N)


def _assert_map_shows(explorer, settings):
    expected = _expected_map(settings)
    for loss, (outcome, diverged, outline, boundary, marker) in _map_traces(explorer).items():
        z = np.asarray(outcome.z, dtype=np.float64)
        want = np.clip(expected.log10_error[loss], -6, 3)
        np.testing.assert_array_equal(np.isnan(z), np.isnan(want))
        np.testing.assert_allclose(z[~np.isnan(z)], want[~np.isnan(want)], rtol=1e-12)
        np.testing.assert_array_equal(
            ~np.isnan(np.asarray(diverged.z, dtype=np.float64)), expected.diverged[loss]
        )
        np.testing.assert_allclose(10 ** np.asarray(boundary.x), expected.critical_lr[loss], rtol=1e-9)
        for axis in ("x", "y"):  # the outline is drawn beneath it, along the same points
            np.testing.assert_array_equal(np.asarray(outline[axis]), np.asarray(boundary[axis]))
        # The box: a rectangle around the current setting's cell, on the outcome's axes.
        assert marker.type == "rect"
        np.testing.assert_allclose(10 ** ((marker.x0 + marker.x1) / 2), settings.lr, rtol=1e-12)
        np.testing.assert_allclose(2 ** ((marker.y0 + marker.y1) / 2), settings.B, rtol=1e-12)
        np.testing.assert_allclose(
            marker.x1 - marker.x0, np.log10(MAP_LRS[1] / MAP_LRS[0]), rtol=1e-9
        )  # a cell
        assert (marker.xref, marker.yref) == (outcome.xaxis or "x", outcome.yaxis or "y")


def test_the_w_b_models_map_shows_what_core_computes(explorer):
    settings = PRESETS["narrow-valley"][1]._replace(map="B", N=80)
    explorer.apply(settings)
    explorer.stability.wait()
    _assert_map_shows(explorer, settings)
    assert "(w0, b0) = (-1, 6)" in explorer.stability.figure.get("title.text")
    assert explorer.stability.key.value.startswith("Colour: log10 |(w, b)_N − (w*, b*)|")
    explorer.apply(DEFAULTS)
    explorer.stability.wait()
    assert explorer.stability.key.value.startswith("Colour: log10 |w_N − w*|")


def test_no_control_of_the_w_b_model_recompiles(explorer, count_compiles):
    # The w, b model's run and map compile on their first use (the dashboard's
    # Explorer.from_environment compiles both before a visitor arrives); then nothing does.
    for optimizer, schedule in zip(core.OPTIMIZERS * 2, core.SCHEDULES, strict=False):
        explorer.apply(DEFAULTS._replace(model="w,b", optimizer=optimizer, schedule=schedule))
    explorer.stability.wait()
    rng = np.random.default_rng(7)
    with count_compiles() as compiles:
        for _ in range(20):
            explorer.apply(
                DEFAULTS._replace(
                    model="w,b",
                    lr=float(10 ** rng.uniform(-4, 0)),
                    N=int(rng.integers(1, 1001)),
                    B=int(rng.integers(1, 513)),
                    loss=str(rng.choice(["sum", "mean", "both"])),
                    w0=float(rng.uniform(-10, 10)),
                    b0=float(rng.uniform(-10, 10)),
                    true_b=float(rng.uniform(-5, 5)),
                    x_mean=float(rng.uniform(-5, 5)),
                    kind=str(rng.choice(["gaussian", "ones"])),
                    optimizer=str(rng.choice(core.OPTIMIZERS)),
                    momentum=float(rng.uniform(0, 0.99)),
                    schedule=str(rng.choice(core.SCHEDULES)),
                )
            )
            explorer.stability.wait()
    assert compiles == []
    explorer.apply(DEFAULTS)


def test_stability_map_shows_what_core_computes(explorer):
    settings = DEFAULTS._replace(N=120, w0=2.0, noise=0.5)
    explorer.apply(settings)
    explorer.stability.wait()
    _assert_map_shows(explorer, settings)
    assert "up to date" in explorer.stability.status.value
    # Sum and mean differ, and both show diverged and converged cells on the default grid.
    outcome = {loss: traces[0].z for loss, traces in _map_traces(explorer).items()}
    assert not np.array_equal(np.asarray(outcome["sum"]), np.asarray(outcome["mean"]))
    for _, diverged, *_ in _map_traces(explorer).values():
        drawn = ~np.isnan(np.asarray(diverged.z, dtype=np.float64))
        assert drawn.any() and not drawn.all()


def test_stability_map_lr_and_b_move_only_the_marker(explorer, monkeypatch):
    explorer.apply(DEFAULTS._replace(N=80))
    explorer.stability.wait()
    calls = []
    monkeypatch.setattr(core, "stability_map", lambda *a, **k: calls.append(a) or pytest.fail("recomputed"))
    explorer.inputs["lr"].value = 0.003
    explorer.inputs["B"].value = 37
    explorer.inputs["loss"].value = "both"
    explorer.stability.wait()
    assert calls == []
    monkeypatch.undo()
    _assert_map_shows(explorer, explorer.settings)


def test_stability_map_keeps_only_the_newest_request(explorer):
    for w0 in (-3.0, 1.0, 4.0):
        explorer.inputs["w0"].value = w0  # each queues a recompute; older ones are dropped
    explorer.inputs["N"].value = 333
    explorer.stability.wait()
    assert "up to date" in explorer.stability.status.value and "N = 333" in explorer.stability.status.value
    _assert_map_shows(explorer, explorer.settings)


def test_a_single_move_computes_the_map_at_once_and_a_drag_once_it_rests(explorer, monkeypatch):
    panel = explorer.stability
    explorer.apply(DEFAULTS._replace(N=70))
    panel.wait()
    waits = []  # the worker's waits for a newer request, in s
    now = [time.monotonic()]  # the panel's clock, moved by hand from here
    monkeypatch.setattr(
        widgets.stability, "time", types.SimpleNamespace(sleep=waits.append, monotonic=lambda: now[0])
    )
    now[0] += 1.0
    explorer.inputs["w0"].value = 1.0  # a move on its own: no wait
    panel.wait()
    assert waits == [] and "w0 = 1:" in panel.status.value
    # A drag: moves 10 ms apart, queued behind a busy worker. Only the newest is computed, after
    # one wait (when each queued request waited in turn, 10 waits).
    now[0] += 1.0
    gate = threading.Event()
    panel._executor.submit(gate.wait, 30)
    for w0 in np.linspace(-3.0, 3.0, 10):
        explorer.inputs["w0"].value = float(w0)
        now[0] += 0.01
    gate.set()
    panel.wait()
    assert waits == [SETTLE_S] and "w0 = 3:" in panel.status.value
    _assert_map_shows(explorer, explorer.settings)
    # A drag at the pace a page sends it: the next value once the kernel has answered the last, 8
    # to 15 times a second in benchmarks.drag (here the slowest, 125 ms apart). Each of those moves
    # is a drag's too, not a move on its own: the worker does not compute a map for each.
    waits.clear()
    now[0] += 1.0
    gate = threading.Event()
    panel._executor.submit(gate.wait, 30)
    for w0 in (-2.0, -1.0, 0.5, 2.5):
        explorer.inputs["w0"].value = w0
        now[0] += 0.125
    gate.set()
    panel.wait()
    assert waits == [SETTLE_S] and "w0 = 2.5:" in panel.status.value


def test_the_map_is_drawn_on_the_kernels_thread_once_it_is_free():
    # A kernel runs cells and answers messages on one thread, in an event loop; the map's worker
    # only computes. A map finished while that thread is busy (writing a reconnected page's reply
    # of every widget's state) waits until the thread is free, so it goes after that reply.
    async def scenario():
        explorer = Explorer()  # made in a running loop, as a kernel runs the notebook's cell
        panel = explorer.stability
        threads = []
        panel.figure.observe(lambda _: threads.append(threading.current_thread()), "plot_layout")
        explorer.apply(DEFAULTS._replace(N=40))
        panel.wait()  # the worker has computed the map, while this thread was busy
        busy = panel.figure.get("title.text"), panel.status.value
        for _ in range(100):
            await asyncio.sleep(0.01)
            if "N = 40" in panel.figure.get("title.text"):
                break
        return busy, panel.figure.get("title.text"), threads

    (busy_title, busy_status), title, threads = asyncio.run(scenario())
    assert "N = 40" not in busy_title and "Computing" in busy_status
    assert "N = 40" in title
    assert threads and all(thread is threading.main_thread() for thread in threads)


def test_without_a_worker_the_map_is_drawn_in_the_move_even_in_a_running_loop():
    async def scenario():
        explorer = Explorer(background=False)
        explorer.apply(DEFAULTS._replace(N=40))
        return explorer.stability.figure.get("title.text")

    assert "N = 40" in asyncio.run(scenario())


def test_a_map_computed_already_is_drawn_in_the_move_itself(explorer, monkeypatch):
    # Switching between the two maps with nothing else changed needs no worker: the kept map is
    # drawn in the move's own message, with no "Computing…" first.
    explorer.apply(DEFAULTS._replace(N=70, map="momentum"))
    explorer.stability.wait()
    explorer.inputs["map"].value = "B"
    explorer.stability.wait()
    monkeypatch.setattr(explorer.stability._executor, "submit", lambda *a: pytest.fail("sent to the worker"))
    explorer.inputs["map"].value = "momentum"
    assert explorer.stability.figure.figure().layout.yaxis.title.text == "momentum"
    assert (
        "lr × momentum" in explorer.stability.status.value and "up to date" in explorer.stability.status.value
    )
    explorer.inputs["map"].value = "B"
    _assert_map_shows(explorer, explorer.settings)
    assert "up to date" in explorer.stability.status.value


def test_each_kind_of_map_keeps_its_figure_and_a_switch_back_sends_no_map(explorer):
    # One figure of each kind, the other one hidden: a switch back to a map drawn already shows its
    # figure, where one figure for both made the page draw both heatmaps anew. A move made meanwhile
    # reaches the hidden figure's box when it is shown again; its cells are not sent again.
    panel = explorer.stability
    explorer.apply(DEFAULTS._replace(N=70))
    panel.wait()
    lr_b = panel.figure
    explorer.inputs["map"].value = "momentum"
    panel.wait()
    momentum = panel.figure
    assert momentum is not lr_b and momentum.figure().layout.yaxis.title.text == "momentum"
    assert panel.widget.children[-3:] == (lr_b, momentum, panel.key)
    assert (lr_b.layout.display, momentum.layout.display) == ("none", None)
    explorer.inputs["lr"].value = 0.02  # moves the momentum map's box, not the hidden figure's
    data, revision = lr_b.data, lr_b.revision
    explorer.inputs["map"].value = "B"
    assert panel.figure is lr_b and (lr_b.layout.display, momentum.layout.display) == (None, "none")
    assert lr_b.data is data and lr_b.revision == revision + 1  # its box alone
    assert "up to date" in panel.status.value and lr_b.alt.startswith("Stability map for N = 70")
    _assert_map_shows(explorer, explorer.settings)
    data, revisions = momentum.data, (lr_b.revision, momentum.revision)
    explorer.inputs["map"].value = "momentum"
    assert panel.figure is momentum and momentum.data is data
    assert (lr_b.revision, momentum.revision) == revisions  # nothing moved since it was shown
    assert panel.widget.children[-3:] == (lr_b, momentum, panel.key)  # no third figure
    explorer.apply(DEFAULTS)
    panel.wait()


def test_stability_map_failure_is_a_notice_not_a_crash(explorer, monkeypatch):
    explorer.apply(DEFAULTS._replace(N=90))
    explorer.stability.wait()
    before = np.asarray(explorer.stability.figure.figure().data[0].z, dtype=np.float64).copy()

    def broken(settings):
        raise FloatingPointError("<b>overflow</b>")

    monkeypatch.setattr(explorer.model, "stability", broken)
    explorer.inputs["w0"].value = 3.0
    explorer.stability.wait()
    status = explorer.stability.status.value
    assert "could not be computed" in status and "&lt;b&gt;overflow" in status and "<b>" not in status
    np.testing.assert_array_equal(
        np.asarray(explorer.stability.figure.figure().data[0].z, dtype=np.float64), before
    )
    assert explorer.settings.w0 == 3.0  # the rest of the explorer moved on
    monkeypatch.undo()
    explorer.inputs["w0"].value = 2.0
    explorer.stability.wait()
    assert "up to date" in explorer.stability.status.value


def test_stability_map_click_sets_lr_and_b(explorer):
    panel = explorer.stability
    cell = {"trace": 0, "x": float(np.log10(MAP_LRS[10])), "y": float(np.log2(MAP_BATCH_SIZES[20]))}
    click = {"kind": "click", "points": [cell]}
    panel.figure._on_page(panel.figure, click, [])  # what the page sends (widgets/surface.js)
    assert explorer.inputs["B"].value == MAP_BATCH_SIZES[20]
    assert explorer.settings.B == MAP_BATCH_SIZES[20]
    np.testing.assert_allclose(explorer.settings.lr, MAP_LRS[10], rtol=1e-5)  # 6 significant digits
    # Nothing picked: no point, the boundary's line, points a visitor made up.
    for points in ([], [{**cell, "trace": 2, "y": 0.0}], [{"trace": 0, "x": "a"}], [{"trace": 0}], ["x"]):
        panel.figure._on_page(panel.figure, {"kind": "click", "points": points}, [])
        assert explorer.settings.B == MAP_BATCH_SIZES[20], points
    panel.figure._on_page(panel.figure, {"kind": "click", "points": "nonsense"}, [])
    assert explorer.settings.B == MAP_BATCH_SIZES[20]


def test_the_lr_x_momentum_map_shows_what_core_computes_and_a_click_sets_lr_and_momentum(explorer):
    settings = DEFAULTS._replace(N=60, B=8, w0=-1.0, momentum=0.42, map="momentum")
    explorer.apply(settings)
    explorer.stability.wait()
    panel = explorer.stability
    assert "lr × momentum at B = 8" in panel.status.value and "up to date" in panel.status.value
    x, y = batches_for(settings._replace(N=RANGES["N"][1], B=RANGES["B"][1]))
    padded = core.HistoryEngine(RANGES["N"][1], RANGES["B"][1]).pad(x, y)
    expected = core.momentum_map(padded, MAP_LRS, MAP_MOMENTA, batch_size=8, w0=-1.0, n=60)
    figure = panel.figure.figure()
    for loss, (outcome, diverged, _outline, boundary, marker) in _map_traces(explorer).items():
        z = np.asarray(outcome.z, dtype=np.float64)
        want = np.clip(expected.log10_error[loss], -6, 3)
        np.testing.assert_array_equal(~np.isnan(np.asarray(diverged.z, np.float64)), expected.diverged[loss])
        assert z.shape == (MAP_MOMENTA.size, MAP_LRS.size)
        np.testing.assert_array_equal(np.isnan(z), np.isnan(want))
        np.testing.assert_allclose(z[~np.isnan(z)], want[~np.isnan(want)], rtol=1e-12)
        np.testing.assert_array_equal(np.asarray(outcome.y), MAP_MOMENTA)
        np.testing.assert_allclose(10 ** np.asarray(boundary.x), expected.critical_lr[loss], rtol=1e-9)
        # Each cell's hover words name its own lr and momentum (customdata), not the current 0.42.
        cells = np.asarray(outcome.customdata, dtype=np.float64)
        assert cells.shape == (MAP_MOMENTA.size, MAP_LRS.size, 2)
        lrs, rows = np.meshgrid(MAP_LRS, MAP_MOMENTA)
        np.testing.assert_allclose(cells[..., 0], lrs, rtol=1e-6)
        np.testing.assert_allclose(cells[..., 1], rows, rtol=1e-6)
        assert "momentum = %{customdata[1]" in outcome.hovertemplate
        np.testing.assert_allclose((marker.y0 + marker.y1) / 2, 0.42, rtol=1e-12)
    assert figure.layout.yaxis.title.text == "momentum" and "lr × momentum" in figure.layout.title.text
    assert not figure.layout.yaxis2.title.text  # the rows are the sum panel's, titled there
    assert "momentum" in panel.figure.alt and "B = 8" in panel.figure.alt
    # A click: lr and momentum of the cell, and the momentum optimizer whose runs the map shows.
    cell = {"trace": 0, "x": float(np.log10(MAP_LRS[12])), "y": float(MAP_MOMENTA[30])}
    panel.figure._on_page(panel.figure, {"kind": "click", "points": [cell]}, [])
    assert explorer.settings.momentum == MAP_MOMENTA[30] and explorer.settings.optimizer == "momentum"
    assert explorer.settings.B == 8
    np.testing.assert_allclose(explorer.settings.lr, MAP_LRS[12], rtol=1e-5)
    # Back to lr x B: the batch-size rows again, as core computes them.
    explorer.inputs["map"].value = "B"
    explorer.stability.wait()
    _assert_map_shows(explorer, explorer.settings)
    # "B" on the sum panel alone: beside the mean panel it ran into the sum panel's cells on a phone.
    layout = panel.figure.figure().layout
    assert layout.yaxis.title.text == "B" and not layout.yaxis2.title.text
    explorer.apply(DEFAULTS)
    explorer.stability.wait()


def _served(root):
    """What tools/plotly_bundle.py writes, under `root`."""
    (root / PLOTLY_PATH).parent.mkdir(parents=True)
    (root / PLOTLY_PATH).write_text("window.Plotly = {};")


def test_charts_load_plotly_from_the_server(tmp_path):
    _served(tmp_path)
    # A path from the server's root: the page's own host, whatever address its visitor used.
    assert plotly_url("/", root=tmp_path) == f"/voila/files/{PLOTLY_PATH}"
    assert (
        plotly_url("/u/x/", root=tmp_path)
        == plotly_url("u/x", root=tmp_path)
        == f"/u/x/voila/files/{PLOTLY_PATH}"
    )
    assert plotly_url("/", root=tmp_path / "missing") is None  # make run did not write it
    url = plotly_url("/", root=tmp_path)
    figure = surface_maker(url)(data=[go.Scatter(y=[1.0, 2.0])])
    # The chart's module is widgets/surface.js, which loads Plotly.js from the address once per page.
    assert figure.plotly_js == url and figure._esm == SURFACE_JS.replace('"__PLOTLY__"', json.dumps(url))
    assert len(figure._esm) < 20_000
    inline = surface_maker()(data=[])
    assert inline.plotly_js is None and len(inline._esm) > 1_000_000  # JupyterLab: Plotly.js inside
    figure.close()
    inline.close()


def test_the_served_plotly_is_the_version_plotly_py_writes_figures_for():
    # plotly.py validates every figure against its own Plotly.js's schema; the bundle the page runs
    # must be that version (`make plotly-js` fetches it), with every trace type the charts use.
    assert PLOTLY_VERSION == plotly.offline.get_plotlyjs_version()
    head = plotly_js()
    assert head.startswith(f"/**\n* plotly.js (cartesian - minified) v{PLOTLY_VERSION}\n")
    assert "window.Plotly = Plotly;" in head[-200:]
    for kind in TRACE_TYPES:
        assert f'"{kind}"' in head, kind


def test_make_run_writes_plotly_and_voila_serves_exactly_it(tmp_path):
    root = Path(__file__).resolve().parent.parent
    stale = tmp_path / Path(PLOTLY_PATH).with_name("plotly-widget-7.0.0.js")
    stale.parent.mkdir(parents=True)
    stale.write_text("// what an earlier version served")
    subprocess.run([sys.executable, str(root / "tools/plotly_bundle.py")], cwd=tmp_path, check=True)
    assert not stale.exists()
    assert (tmp_path / PLOTLY_PATH).read_bytes() == plotly_js().encode("utf-8")
    voila = json.loads((root / "voila.json").read_text())["VoilaConfiguration"]
    # The page's template inserts it at the page's load event, from the same address.
    assert voila["resources"]["plotly_js"] == PLOTLY_PATH
    allowed = voila["file_allowlist"]
    served = [
        path
        for path in (PLOTLY_PATH, "app.ipynb", ".cache/jax/x", ".cache/static/x.js")
        if any(re.fullmatch(a, path) for a in allowed)
    ]
    assert served == [PLOTLY_PATH]


def test_behind_a_hub_plotly_is_fetched_under_the_browsers_prefix(tmp_path, monkeypatch):
    # Under Jupyter server's Voila extension (Binder, JupyterHub) VOILA_SERVER_URL stays "/" while
    # the browser sees /user/<name>/: the address must use VOILA_BASE_URL.
    _served(tmp_path)
    monkeypatch.chdir(tmp_path)
    # A preheated kernel's VOILA_REQUEST_URL is the previous visitor's page; the request details
    # (SERVER_NAME, SERVER_PORT, SCRIPT_NAME, QUERY_STRING) are this visitor's.
    monkeypatch.setenv("VOILA_REQUEST_URL", "https://other.example/user/ana/voila/render/app.ipynb?lr=0.3")
    monkeypatch.setenv("SERVER_NAME", "hub.example")
    monkeypatch.setenv("SERVER_PORT", "")
    monkeypatch.setenv("SCRIPT_NAME", "/user/ana/voila/render/app.ipynb")
    monkeypatch.setenv("QUERY_STRING", "lr=0.1")
    monkeypatch.setenv("VOILA_BASE_URL", "/user/ana/")
    monkeypatch.setenv("VOILA_SERVER_URL", "/")
    explorer = Explorer.from_environment()
    assert explorer.settings.lr == 0.1
    assert explorer.figures["trajectory"].plotly_js == f"/user/ana/voila/files/{PLOTLY_PATH}"
    assert (
        explorer.share.value
        == "https://hub.example/user/ana/voila/render/app.ipynb?lr=0.1&N=100&B=16&loss=sum"
    )


def _page_state(explorer):
    """What a page gets of an explorer: every figure, text and control."""
    figures = {**explorer.figures, "map": explorer.stability.figure}
    texts = [explorer.status, explorer.share, explorer.notice, explorer.step_info, explorer.stability.status]
    return {
        "figures": {name: figure.figure().to_plotly_json() for name, figure in figures.items()},
        "alt": [figure.alt for figure in figures.values()],
        "texts": [text.value for text in texts + list(explorer.captions.values())],
        "inputs": {name: widget.value for name, widget in explorer.inputs.items()},
        "playback": (explorer.play.value, explorer.play.max, explorer.step_slider.value),
    }


@pytest.mark.parametrize(
    "query",
    [
        "",
        "lr=0.05&N=50&B=8&loss=both&w0=1.5",
        "map=momentum&B=8&N=1e9&loss=<b>",
        "preset=diverging",
        "view=projector",
    ],
)
def test_a_preheated_kernel_builds_ahead_the_view_its_visitor_asks_for(monkeypatch, query):
    # Built before the request and then given its settings, or built after it: the same page.
    monkeypatch.setenv("QUERY_STRING", query)
    monkeypatch.setenv("VOILA_REQUEST_URL", "http://127.0.0.1:8866/?" + query)
    monkeypatch.setenv("VOILA_BASE_URL", "/")
    after = _page_state(Explorer.from_environment())
    order = []
    monkeypatch.setenv("VOILA_PREHEAT", "True")
    monkeypatch.setattr(widgets.explorer, "wait_for_request", lambda: order.append("request"))
    monkeypatch.setattr(Explorer, "__init__", _recorded(Explorer.__init__, order, "built"))
    monkeypatch.setattr(ipw.Widget, "close_all", classmethod(lambda cls: order.append("closed")))
    ahead = _page_state(Explorer.from_environment())
    rebuilt = "view=" in query
    assert order == ["built", "request"] + (["closed", "built"] if rebuilt else [])
    assert ahead == after


def _recorded(function, log, word):
    def recorded(*args, **kwargs):
        log.append(word)
        return function(*args, **kwargs)

    return recorded


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, ""),  # JupyterLab
        ({"VOILA_REQUEST_URL": "http://a:1/x?q=1"}, "http://a:1/x?q=1"),  # no request details
        (  # the first visitor after a start: no previous URL, so http
            {"SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8866", "SCRIPT_NAME": "/", "QUERY_STRING": "N=3"},
            "http://127.0.0.1:8866/?N=3",
        ),
        (
            {"SERVER_NAME": "::1", "SERVER_PORT": "8866", "SCRIPT_NAME": "", "QUERY_STRING": ""},
            "http://[::1]:8866/",
        ),
        (
            {"VOILA_REQUEST_URL": "javascript:alert(1)", "SERVER_NAME": "h", "SCRIPT_NAME": "/p"},
            "http://h/p",
        ),
    ],
)
def test_the_page_url_is_this_visitors(environ, expected):
    from widgets.settings import page_url

    assert page_url(environ) == expected


def test_a_visitor_cannot_break_a_control_over_the_widget_protocol(explorer):
    lr, loss = explorer.inputs["lr"], explorer.inputs["loss"]
    # One message that moved the exponent bounds and the value used to overflow 10 ** max inside
    # traitlets' final check; now the whole message is refused and the slider stays live.
    for state in ({"max": 5000, "value": 5000}, {"base": 0, "value": 1.0}):
        with pytest.raises(TraitError):
            lr.set_state(state)
        assert (lr.min, lr.max, lr.base) == (-4.0, 1.0, 10.0), state
    lr.set_state({"min": -1e308, "value": 0.5})  # no overflow: taken, then the bound is put back
    assert (lr.min, lr.max, lr.base) == (-4.0, 1.0, 10.0)
    lr.value = 0.05
    assert explorer.settings.lr == 0.05
    for state in ({"_options_labels": ["a", "b", "c", "d", "e"], "index": 4}, {"index": True}, {"index": -1}):
        with pytest.raises(TraitError):
            loss.set_state(state)
        assert loss._options_labels == ("sum", "mean", "both") and type(loss.index) is int, state
    loss.set_state({"_options_labels": ["a", "b", "c", "d"]})  # alone: put back at once
    assert loss._options_labels == ("sum", "mean", "both")
    loss.set_state({"index": 2})
    assert explorer.settings.loss == "both"


def _decoded(value):
    """A Surface's state as the page gets it (widgets.surface: arrays in Plotly's typed-array form,
    their bytes a buffer), with the arrays as numpy arrays again."""
    if isinstance(value, dict):
        if isinstance(value.get("bdata"), memoryview):
            array = np.frombuffer(value["bdata"], dtype={"f8": np.float64, "i4": np.int32}[value["dtype"]])
            return array.reshape([int(n) for n in value["shape"].split(",")]) if "shape" in value else array
        return {key: _decoded(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_decoded(inner) for inner in value]
    return value


def test_a_chart_opened_late_gets_the_run_the_kernel_last_computed():
    # A chart's widget state is its whole figure: a page that opens it late, or missed messages
    # while busy, starts from the state and so draws the current run (no edits to replay).
    explorer = Explorer(background=False)
    explorer.inputs["lr"].value = 0.02
    explorer.inputs["N"].value = 40
    explorer.play.value = 7
    for name in explorer.drawn:  # the w, b model's contour chart is hidden under the lesson's w
        figure = explorer.figures[name]
        state = _decoded(figure.get_state())
        rebuilt = CHARTS[name].build(explorer.result, explorer.settings.loss, explorer.step)
        assert len(state["data"]) == len(rebuilt.data), name
        for sent, built in zip(state["data"], rebuilt.data, strict=True):
            for key in ("x", "y"):
                want = np.asarray(built[key] if built[key] is not None else [], dtype=np.float64)
                got = np.asarray([np.nan if v is None else v for v in sent[key]], dtype=np.float64)
                np.testing.assert_array_equal(got, want, err_msg=f"{name}.{key}")
        assert state["revision"] == figure.revision > 0, name
        for axis in ("xaxis", "yaxis"):
            assert state["plot_layout"][axis]["range"] == figure.get(f"{axis}.range"), name


def _assert_figures_are_built_anew(explorer):
    """Every chart holds what building it now from the current result gives: no trace left hidden,
    or drawn, by the other model's last picture."""
    for name, figure in explorer.figures.items():
        rebuilt = CHARTS[name].build(explorer.result, explorer.settings.loss, explorer.step)
        for i, (sent, built) in enumerate(zip(figure.figure().data, rebuilt.data, strict=True)):
            assert sent.visible == built.visible, (name, i)
            for key in ("x", "y"):
                want = np.asarray(built[key] if built[key] is not None else [], dtype=np.float64)
                got = np.asarray(sent[key] if sent[key] is not None else [], dtype=np.float64)
                np.testing.assert_array_equal(got, want, err_msg=f"{name}[{i}].{key}")


def test_switching_the_model_there_and_back_draws_each_chart_as_if_built_now():
    explorer = Explorer(background=False)
    explorer.show("trajectory", "landscape", "divergence")  # the landscape's place holds the plane
    assert "plane" not in explorer.drawn and explorer._parts["plane"].layout.display == "none"
    explorer.inputs["model"].value = "w,b"
    assert explorer.drawn == ["trajectory", "loss", "plane", "sum_vs_mean", "divergence"]
    assert (
        explorer._parts["landscape"].layout.display == "none"
        and explorer._parts["plane"].layout.display is None
    )
    assert explorer.figures["landscape"].alt == "" and explorer.figures["plane"].alt.startswith(
        "Loss landscape: the steps on L(w, b)"
    )
    _assert_figures_are_built_anew(explorer)
    _assert_matches_core(explorer)
    explorer.inputs["model"].value = "w"
    assert (
        explorer._parts["landscape"].layout.display is None
        and explorer._parts["plane"].layout.display == "none"
    )
    _assert_figures_are_built_anew(explorer)
    _assert_matches_core(explorer)


# The carry grown up: the chosen optimizer and schedule, overlaid on plain SGD.
OVERLAY = 4  # the trajectory's trace of the overlaid run (the step marker stays last)


def _overlay(explorer):
    return explorer.figures["trajectory"].figure().data[OVERLAY]


@pytest.mark.parametrize("optimizer", core.OPTIMIZERS)
@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_the_chosen_optimizer_is_overlaid_as_core_computes_it(explorer, optimizer, schedule):
    settings = DEFAULTS._replace(optimizer=optimizer, schedule=schedule, momentum=0.7, N=37, B=5, loss="mean")
    explorer.apply(settings)
    trace = _overlay(explorer)
    if optimizer == "sgd" and schedule == "constant":
        assert trace.visible is False  # plain SGD alone
        assert "dotted" not in explorer.status.value
        return
    x, y = batches_for(settings)
    want = core.optimizer_history(
        settings.w0,
        settings.lr,
        x,
        y,
        optimizer=optimizer,
        momentum=0.7,
        loss="mean",
        lr_schedule=None if schedule == "constant" else core.lr_schedule(schedule, settings.lr, 37),
    )
    assert trace.visible is True and trace.name.startswith(f"w, {optimizer}") and "(mean loss)" in trace.name
    np.testing.assert_array_equal(_drawn(trace), _as_drawn(want))
    _assert_matches_core(explorer)  # plain SGD's lines are as they were
    assert f"final w = {float(want.weights[-1]):.6g}" in explorer.status.value
    # Playback shows the carry as (w, state), the state's leaves by their Optax names.
    explorer._move_step(3)
    text = html.unescape(explorer.step_info.value)
    assert f"after 3 steps: carry (w, state) = (w = {float(want.weights[3]):.6g}" in text
    leaves = {"sgd": [], "momentum": ["trace"], "nesterov": ["trace"], "adam": ["count", "mu", "nu"]}[
        optimizer
    ]
    for name in leaves:
        assert f"{name} = " in text
    if optimizer == "momentum":
        (trace,) = jax.tree.leaves(want.states)
        assert f"trace = {float(trace[2]):.6g}" in text
    if schedule == "cosine":
        assert "step 3's lr from the schedule" in text


def test_the_schedule_rescue_preset_grows_constant_and_converges_scheduled(explorer):
    explorer.presets["schedule-rescue"].click()
    result = explorer.result
    assert result.regimes["sum"] == "diverging"  # the constant lr: past the critical one
    assert abs(result.histories["sum"].params["w"][-1] - result.w_star) > 10
    rescued = result.optimized["sum"]
    assert rescued.diverged_at is None and abs(rescued.params["w"][-1] - result.w_star) < 1e-3
    assert "sgd, exponential schedule" in _overlay(explorer).name


def test_the_optimizer_controls_never_recompile(explorer, count_compiles):
    # One compilation per optimizer kind, and Optax's few operations of each schedule, on first use.
    for optimizer, schedule in zip(core.OPTIMIZERS * 2, core.SCHEDULES, strict=False):
        explorer.apply(DEFAULTS._replace(optimizer=optimizer, schedule=schedule))
    rng = np.random.default_rng(5)
    finals = set()
    with count_compiles() as compiles:
        for _ in range(16):
            explorer.apply(
                DEFAULTS._replace(
                    lr=float(10 ** rng.uniform(-4, -1)),
                    N=int(rng.integers(1, 1001)),
                    B=int(rng.integers(1, 513)),
                    optimizer=str(rng.choice(core.OPTIMIZERS)),
                    momentum=float(rng.uniform(0, 0.99)),
                    schedule=str(rng.choice(core.SCHEDULES)),
                )
            )
            if explorer.result.optimized is not None:
                finals.add(float(explorer.result.optimized["sum"].params["w"][-1]))
            explorer.stability.wait()
    assert compiles == []
    assert len(finals) >= 10
