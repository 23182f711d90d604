"""The trajectory chart without a browser: the figure holds exactly what core computed."""

import numpy as np
import plotly.graph_objects as go

import core
import widgets
from widgets.trajectory import RunSettings, trajectory_figure


def test_default_app_charts_the_default_run():
    app = widgets.build_app()
    figure = app.children[0]
    assert isinstance(figure, go.FigureWidget)
    settings = RunSettings()
    x, y = core.make_batches(
        settings.N, settings.B, seed=settings.seed, true_w=settings.true_w, noise=settings.noise
    )
    expected = core.training_history(settings.w0, settings.lr, x, y)
    trajectory, optimum = figure.data
    np.testing.assert_array_equal(np.asarray(trajectory.x), np.arange(settings.N + 1))
    np.testing.assert_allclose(np.asarray(trajectory.y, dtype=np.float64), expected.weights, rtol=0, atol=0)
    assert optimum.y == (core.optimum(x, y), core.optimum(x, y))
    assert "regime: monotone" in app.children[1].value


def test_seed_example_shows_0_4_and_0_64():
    run = widgets.compute_run(RunSettings(lr=0.1, N=2, B=2, w0=0.0, kind="ones", noise=0.0))
    figure = trajectory_figure(run)
    np.testing.assert_allclose(figure.data[0].y, [0.0, 0.4, 0.64], rtol=1e-6)
    assert "to 0.64" in widgets.run_summary(run)


def test_diverging_run_draws_its_finite_part():
    run = widgets.compute_run(RunSettings(lr=10.0, N=200, B=16))
    trajectory = trajectory_figure(run).data[0]
    k = run.history.diverged_at
    assert k is not None
    finite = [v for v in trajectory.y if v is not None]
    assert len(finite) >= k + 2  # w0 and every weight up to the first one past the limit
    assert all(np.isfinite(finite))
    assert f"diverged at step {k}" in widgets.run_summary(run)
