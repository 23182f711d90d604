"""What a dashboard kernel keeps (issue 35: its RSS at most 250 MB; `benchmarks.memory` measures it):
the model keeps its data set's float64 draws (8 MB) only once a visitor draws a second data set of
them, and the kernel hands back the heap that serialising the widgets' states for a page freed."""

import asyncio
import types

import numpy as np
import pytest

import core
from serving import dashboard_kernel
from widgets import DEFAULTS
from widgets.model import Model
from widgets.settings import RANGES


@pytest.fixture(scope="module")
def model():
    return Model()


def test_the_draws_are_kept_from_the_second_data_set_of_them_on(model, monkeypatch):
    drawn = []
    draw = core.draw_batches

    def counting(n, b, *, seed, kind="gaussian", with_eps=True):
        drawn.append((seed, kind) if with_eps else (seed, kind, "no eps"))
        return draw(n, b, seed=seed, kind=kind, with_eps=with_eps)

    monkeypatch.setattr(core, "draw_batches", counting)
    settings = DEFAULTS._replace(N=100, B=16, seed=3)
    model.compute(settings)
    assert drawn == [(3, "gaussian")] and model._draws is None  # what every waiting kernel holds
    moved = [settings._replace(true_w=3.0), settings._replace(noise=0.7), settings._replace(true_w=1.5)]
    moved += [settings._replace(model="w,b", x_mean=2.0), settings._replace(model="w,b", true_b=-1.0)]
    for s in moved:
        model.compute(s)
        x, y = core.make_batches(
            s.N, s.B, seed=s.seed, kind=s.kind, true_w=s.true_w, noise=s.noise,
            x_mean=s.x_mean if s.model == "w,b" else 0.0, true_b=s.true_b if s.model == "w,b" else 0.0,
        )  # fmt: skip
        np.testing.assert_array_equal(model._full.x[: s.N, : s.B], x)
        np.testing.assert_array_equal(model._full.y[: s.N, : s.B], y)
    assert drawn == [(3, "gaussian")] * 2  # drawn again once, then kept for every later move
    assert model._draws[0] == (3, "gaussian") and model._draws[1].x.shape == (RANGES["N"][1], RANGES["B"][1])
    model.compute(settings._replace(seed=4))
    assert drawn[2:] == [(4, "gaussian")] and model._draws is None  # another seed's: not kept


def test_data_of_noise_0_draws_no_eps_and_a_noise_move_then_draws_it(model, monkeypatch):
    drawn = []
    draw = core.draw_batches

    def counting(n, b, *, seed, kind="gaussian", with_eps=True):
        drawn.append((seed, kind, with_eps))
        return draw(n, b, seed=seed, kind=kind, with_eps=with_eps)

    monkeypatch.setattr(core, "draw_batches", counting)
    quiet = DEFAULTS._replace(N=60, B=16, seed=1, noise=0.0)
    moved = [quiet, quiet._replace(true_w=3.0), quiet._replace(noise=0.4), quiet._replace(true_w=1.0)]
    for s in [*moved, quiet._replace(kind="ones")]:
        model.compute(s)
        x, y = core.make_batches(s.N, s.B, seed=s.seed, kind=s.kind, true_w=s.true_w, noise=s.noise)
        np.testing.assert_array_equal(model._full.x[: s.N, : s.B], x)
        np.testing.assert_array_equal(model._full.y[: s.N, : s.B], y)
    # x alone, x alone again (kept: the second data set of seed 1), x and eps for the noise (kept),
    # then nothing; "ones" of noise 0 draws no eps either.
    gaussian = [(1, "gaussian", False), (1, "gaussian", False), (1, "gaussian", True)]
    assert drawn == [*gaussian, (1, "ones", False)]


def _kernel(handled):
    return types.SimpleNamespace(shell_handlers={"comm_msg": lambda stream, ident, msg: handled.append(msg)})


def _message(method):
    return {"content": {"comm_id": "c", "data": {"method": method}}}


def test_a_page_asking_for_the_widgets_states_is_followed_by_one_trim(monkeypatch):
    trims, handled = [], []
    monkeypatch.setattr(dashboard_kernel, "return_freed_memory", lambda: trims.append(1))
    monkeypatch.setattr(dashboard_kernel, "TRIM_DELAY", 0.01)
    kernel = _kernel(handled)
    dashboard_kernel.trim_after_states(kernel)
    messages = [_message("update"), _message("request_states"), _message("custom"), {"content": {}}]

    async def page():
        for message in messages:
            kernel.shell_handlers["comm_msg"](None, [], message)
        assert trims == []  # after the reply has gone out, not in the handler
        await asyncio.sleep(0.1)

    asyncio.run(page())
    assert handled == messages and trims == [1]  # every message handled; a callback's not trimmed
    kernel.shell_handlers["comm_msg"](None, [], _message("request_states"))  # no event loop: at once
    assert trims == [1, 1]


def test_a_comm_handler_that_is_a_coroutine_is_still_awaited(monkeypatch):
    # ipykernel awaits what a shell handler returns when it is awaitable: the wrapper hands it on.
    monkeypatch.setattr(dashboard_kernel, "return_freed_memory", lambda: None)
    handled = []

    async def handle(stream, ident, msg):
        handled.append(msg)

    kernel = types.SimpleNamespace(shell_handlers={"comm_msg": handle})
    dashboard_kernel.trim_after_states(kernel)

    async def dispatch():
        await kernel.shell_handlers["comm_msg"](None, [], _message("update"))

    asyncio.run(dispatch())
    assert handled == [_message("update")]
