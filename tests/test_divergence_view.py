"""What a diverging run looks like: the step it diverged at visible on every weight chart, a loss of
exactly 0 drawn, the landscape framed on its bowl, and every step axis fitted to the run."""

import math

import numpy as np
import pytest

from widgets import DEFAULTS, Explorer
from widgets.axes import SignedLog, figure_scale
from widgets.figures import CHARTS, left_frame, zero_losses
from widgets.settings import PRESETS


@pytest.fixture(scope="module")
def explorer():
    return Explorer(background=False)


def _in(value, bounds) -> bool:
    low, high = bounds
    return low <= value <= high


@pytest.mark.parametrize("c", [1.0, 10.0, 100.0])
def test_the_signed_log_scale_is_even_to_c_and_a_decade_a_unit_beyond(c):
    scale = SignedLog(c)
    weights = np.array([-c * 1e6, -c * 10, -c, -c / 2, 0.0, c / 4, c, c * 10, c * 1e15, np.nan])
    drawn = scale(weights)
    np.testing.assert_allclose(drawn[:-1], [-7, -2, -1, -0.5, 0, 0.25, 1, 2, 16])
    assert math.isnan(drawn[-1])
    for position in (-7.5, -1, -0.3, 0, 0.7, 1, 3.25, 16):
        assert scale(scale.weight(position)) == pytest.approx(position)
    positions, labels = scale.ticks(-7.4, 16.2)
    assert len(positions) <= 9 and 0.0 in positions and all(p == int(p) for p in positions)
    for position, label in zip(positions, labels, strict=True):  # each label is the weight there
        assert _number(label) == pytest.approx(scale.weight(position))


def _number(label: str) -> float:
    """A tick label as a number: "−100", "10⁸", "−10¹²"."""
    sign = -1.0 if label.startswith("−") else 1.0
    digits = label.lstrip("−")
    if digits.startswith("10") and len(digits) > 2 and not digits[2:].isascii():
        return sign * 10.0 ** int(digits[2:].translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")))
    return sign * float(digits)


def test_the_scale_holds_w0_and_w_star_in_its_even_part():
    assert SignedLog.around(0.0, 1.99) == SignedLog(10.0)
    assert SignedLog.around(-9.5, 2.0) == SignedLog(100.0)
    assert SignedLog.around(0.0, 0.3) == SignedLog(10.0)


def test_a_diverging_run_shows_its_divergence_step_inside_the_weight_charts(explorer):
    explorer.apply(PRESETS["diverging"][1])
    history = explorer.result.histories["sum"]
    k = history.diverged_at
    assert k is not None
    trajectory = explorer.figures["trajectory"]
    scale = figure_scale(trajectory)
    assert scale is not None and trajectory.get("yaxis.title.text") == "weight w (signed log)"
    assert "signed log scale" in trajectory.get("annotations")[0]["text"]
    run, _, optimum, diverged, *_ = trajectory.data
    # The drawn points are the weights on the scale, and hover names the weights themselves.
    np.testing.assert_array_equal(run["customdata"], history.params["w"].astype(np.float64))
    np.testing.assert_allclose(run["y"], scale(history.params["w"]), equal_nan=True)
    assert "%{customdata" in run["hovertemplate"]
    # The ✖ stands at step k + 1 (the weight step k produced), on the line, inside the y range and
    # far from w*'s line: on a linear axis it sat on the flat part, 1e-9 of the range from w*.
    (x,), (y,) = diverged["x"], diverged["y"]
    assert x == k + 1 and y == pytest.approx(run["y"][k + 1])
    low, high = trajectory.get("yaxis.range")
    assert _in(y, (low, high)) and abs(y - optimum["y"][0]) > 0.1 * (high - low)
    sum_vs_mean = explorer.figures["sum_vs_mean"]
    assert figure_scale(sum_vs_mean) == scale
    drawn = np.asarray(sum_vs_mean.data[0]["y"])
    assert np.nanmax(np.abs(drawn)) < 20  # 5e15 is 16 units up, not the whole axis


def test_a_converging_run_keeps_the_plain_axis(explorer):
    explorer.apply(PRESETS["diverging"][1])
    explorer.apply(PRESETS["smooth"][1])
    for name in ("trajectory", "sum_vs_mean"):
        figure = explorer.figures[name]
        assert figure_scale(figure) is None and figure.get("yaxis.tickvals") is None
        assert figure.get("yaxis.title.text") == "weight w" and figure.get("annotations") == []
        run = figure.data[0]
        assert run["customdata"] is None and "%{y" in run["hovertemplate"]
        np.testing.assert_array_equal(
            run["y"], explorer.result.histories["sum"].params["w"].astype(np.float64)
        )


def test_a_loss_of_exactly_zero_is_drawn_on_the_floor_and_said(explorer):
    explorer.apply(PRESETS["smooth"][1])
    losses = explorer.result.histories["sum"].losses
    zeros = np.flatnonzero(losses == 0)
    assert zeros.size  # the smooth preset fits exactly (noise 0): its later losses are 0
    figure = explorer.figures["loss"]
    marks = figure.data[3]
    np.testing.assert_array_equal(marks["x"], zeros)
    low, high = figure.get("yaxis.range")  # log10 units
    assert all(_in(math.log10(v), (low, high)) for v in marks["y"])
    assert math.log10(marks["y"][0]) < np.log10(losses[losses > 0]).min()  # under every other point
    assert "loss exactly 0" in figure.get("annotations")[0]["text"]
    explorer.apply(DEFAULTS)  # noisy data: no loss is 0
    assert zero_losses(explorer.result, "sum").size == 0 and explorer.figures["loss"].get("annotations") == []


def test_the_landscape_frames_the_bowl_and_says_where_a_run_leaves_it(explorer):
    explorer.apply(PRESETS["diverging"][1])
    figure = explorer.figures["landscape"]
    low, high = figure.get("xaxis.range")
    top = figure.get("yaxis.range")[1]
    assert high - low < 100 and top < 1e4  # it read 2e13 ("30T") over a frame of 6.7e6
    k, w = left_frame(explorer.result, "sum")
    assert not _in(w, (low, high)) and k <= explorer.result.histories["sum"].diverged_at
    (arrow,) = figure.get("annotations")
    assert arrow["text"] == f"sum: off the chart from step {k}" and arrow["x"] in (low, high)
    explorer.apply(DEFAULTS)
    assert explorer.figures["landscape"].get("annotations") == []


def test_every_step_axis_fits_a_new_run(explorer):
    explorer.apply(DEFAULTS._replace(N=100))
    explorer.apply(PRESETS["diverging"][1])  # N = 60
    for name, chart in CHARTS.items():
        if chart.steps_across:
            low, high = explorer.figures[name].get("xaxis.range")
            assert low < 0.5 and 59 <= high < 62, (name, low, high)


def test_the_stability_maps_symbols_are_said_in_words_under_it(explorer):
    # The map's title says "colour: log10 |w_N − w*|" and "the critical lr": a title does not wrap,
    # so their words stand under the map, in the panel the map is shown in.
    children = explorer.stability.widget.children
    key = explorer.stability.key
    assert children[-1] is key and children[-2] is explorer.stability.figure
    assert "log10 |w_N − w*|, how far the weight ends from w*" in key.value
    assert "critical lr of theory is the lr at which the error stops shrinking" in key.value
