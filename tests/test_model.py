"""widgets.model.Model's caches: the theory of recent (N, B) corners is kept, and only the current
data set's."""

import numpy as np
import pytest

from widgets import DEFAULTS
from widgets.model import DATA_KEPT, Model
from widgets.words import status_html


@pytest.fixture(scope="module")
def model():
    return Model()


@pytest.fixture
def computed(model, monkeypatch):
    """The (N, B, seed) whose theory the model computed (not found kept) during the test."""
    model._data.clear()
    keys = []
    data_for = model._data_for

    def counting(s, x, y, batches):
        keys.append((s.N, s.B, s.seed))
        return data_for(s, x, y, batches)

    monkeypatch.setattr(model, "_data_for", counting)
    return keys


def _same(a, b):
    assert a.w_star == b.w_star and a.critical_lr == b.critical_lr
    for loss in ("sum", "mean"):
        np.testing.assert_array_equal(a.factors[loss], b.factors[loss])
        np.testing.assert_array_equal(a.histories[loss].params["w"], b.histories[loss].params["w"])


def test_a_batch_size_moved_back_reuses_its_theory(model, computed):
    settings = DEFAULTS._replace(N=300, B=64, lr=0.01)
    model.compute(settings)
    model.compute(settings._replace(B=100))
    again = model.compute(settings._replace(B=64, lr=0.02))
    assert computed == [(300, 64, 0), (300, 100, 0)]
    model._data.clear()
    _same(again, model.compute(settings._replace(B=64, lr=0.02)))  # as computed afresh


def test_another_data_set_leaves_nothing_kept_of_the_last(model, computed):
    settings = DEFAULTS._replace(N=200, B=32)
    model.compute(settings)
    model.compute(settings._replace(B=40))
    model.compute(settings._replace(seed=5))
    assert list(model._data) == [(200, 32)] and model._data_of == model.theory_key(settings._replace(seed=5))
    model.compute(settings)  # seed 0 again: computed again, on its own data
    assert computed == [(200, 32, 0), (200, 40, 0), (200, 32, 5), (200, 32, 0)] and len(model._data) == 1


def test_at_most_data_kept_corners(model, computed):
    sizes = range(1, DATA_KEPT + 6)
    for b in sizes:
        model.compute(DEFAULTS._replace(N=20, B=b))
    assert list(model._data) == [(20, b) for b in sizes[5:]]
    model.compute(DEFAULTS._replace(N=20, B=1))  # dropped, the oldest: computed again
    assert len(computed) == len(sizes) + 1


@pytest.mark.parametrize("leaves", [("w",), ("w", "b")])
def test_the_star_of_rows_says_which_rows_it_fits_and_what_all_of_them_give(model, leaves):
    settings, _ = model.rows.fit(DEFAULTS._replace(kind="engel", model=",".join(leaves)))
    result = model.compute(settings)
    table = model.rows.table("engel")
    fit = result.rows_fit
    assert (fit.used, fit.rows) == (settings.N * settings.B, table.x.size) and fit.used < fit.rows
    # All rows, in float64 by NumPy's least squares (the run's x is float32: 1e-5 apart).
    features = np.stack([table.x, np.ones_like(table.x)], axis=1)[:, : len(leaves)]
    whole = np.linalg.lstsq(features.astype(np.float64), table.y.astype(np.float64), rcond=None)[0]
    np.testing.assert_allclose([fit.star[leaf] for leaf in leaves], whole, rtol=1e-5)
    assert abs(result.w_star - fit.star["w"]) > 0.01  # the rows this run uses fit another line
    status = status_html(result)
    assert f"the least-squares fit of the {fit.used} rows this run uses; all {fit.rows} rows give" in status
    assert f"w* = {fit.star['w']:.4g}" in status
    # N x B = every row once: the same fit, nothing to add.
    every = model.compute(settings._replace(N=5, B=47))
    assert every.rows_fit.used == every.rows_fit.rows == 235
    assert "least-squares fit of the" not in status_html(every)
    np.testing.assert_allclose(every.w_star, fit.star["w"], rtol=1e-5)
