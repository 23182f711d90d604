"""Carry dtypes, trace counts and XLA compile counts: exact numbers, so they live in tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import core


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16])
def test_carry_dtype_is_preserved(dtype):
    x, y = core.make_batches(4, 3, seed=1, dtype=dtype)
    w = jnp.asarray(0.5, dtype=dtype)
    assert core.scan_training_step(w, 0.01, x, y).dtype == dtype
    assert core.training_history(w, 0.01, x, y).weights.dtype == dtype
    assert core.accumulated_gradient_step(w, 0.01, x, y).dtype == dtype


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16])
def test_python_float_w_takes_the_data_dtype(dtype):
    x, y = core.make_batches(4, 3, seed=1, dtype=dtype)
    assert core.scan_training_step(0.5, 0.01, x, y).dtype == dtype
    assert core.scan_training_step(1, 0.01, x, y).dtype == dtype  # a Python int too


def test_float64_under_x64():
    with jax.enable_x64(True):
        x, y = core.make_batches(4, 3, seed=1, dtype=np.float64)
        assert core.scan_training_step(0.5, 0.01, x, y).dtype == jnp.float64
        assert core.scan_training_step(np.float64(0.5), 0.01, x, y).dtype == jnp.float64
        history = core.training_history(0.5, 0.01, x, y, loss="mean")
        assert history.weights.dtype == np.float64
        engine = core.HistoryEngine(max_steps=8, max_batch=8)
        assert engine.history(0.5, 0.01, x, y).weights.dtype == np.float64


def test_one_trace_for_ten_learning_rates():
    x, y = core.make_batches(6, 4, seed=2)
    traces = []

    @jax.jit
    def final_weight(lr):
        traces.append(lr)
        return core.scan_training_step(0.0, lr, x, y)

    results = [float(final_weight(lr)) for lr in np.linspace(0.001, 0.05, 10)]
    assert len(traces) == 1
    assert len(set(results)) == 10  # the traced lr really varies the result


def test_jit_with_everything_traced():
    x, y = core.make_batches(6, 4, seed=2)
    jitted = jax.jit(core.scan_training_step)
    assert np.asarray(jitted(0.0, 0.01, x, y)) == np.asarray(core.scan_training_step(0.0, 0.01, x, y))


@pytest.mark.parametrize("b", [3, 9, 17, 33, 257, 513])
def test_every_path_agrees_even_when_diverging(b):
    # B = 2**k + 1 and diverging runs are where a multiply-add fused in one program and not in
    # another shows up in the last bit (an independent review found 7 of 200 such cases).
    engine = core.HistoryEngine(max_steps=64, max_batch=1024)
    rng = np.random.default_rng(b)
    for case in range(4):
        n = int(rng.integers(1, 65))
        x, y = core.make_batches(n, b, seed=case, noise=0.5)
        lr = float(rng.uniform(0.3, 3.0)) * core.critical_lr(x)
        w = float(rng.normal())
        history = core.training_history(w, lr, x, y)
        # One kernel at two shapes, and the one-step program: bit for bit.
        np.testing.assert_array_equal(engine.history(w, lr, x, y).weights, history.weights)
        np.testing.assert_array_equal(
            np.asarray(core.python_loop_training_step(w, lr, x, y)), history.weights[-1]
        )
        # Another program: bit for bit when stable, a few float32 roundings per step when diverging.
        for final in (core.scan_training_step(w, lr, x, y), jax.jit(core.scan_training_step)(w, lr, x, y)):
            if lr < core.critical_lr(x):
                np.testing.assert_array_equal(np.asarray(final), history.weights[-1])
            else:
                np.testing.assert_allclose(np.asarray(final), history.weights[-1], rtol=4 * n * 1.2e-7)


def test_stable_runs_agree_bit_for_bit_on_every_path():
    engine = core.HistoryEngine(max_steps=64, max_batch=1024)
    rng = np.random.default_rng(7)
    for case in range(16):
        n, b = int(rng.integers(1, 65)), int(rng.choice([1, 2, 3, 17, 64, 257, 1000]))
        x, y = core.make_batches(n, b, seed=case, noise=0.5)
        lr = float(rng.uniform(0.05, 0.95)) * core.critical_lr(x)
        w = float(rng.normal())
        expected = core.training_history(w, lr, x, y).weights[-1]
        finals = [
            core.scan_training_step(w, lr, x, y),
            jax.jit(core.scan_training_step)(w, lr, x, y),
            core.python_loop_training_step(w, lr, x, y),
            engine.history(w, lr, x, y).weights[-1],
        ]
        for final in finals:
            np.testing.assert_array_equal(np.asarray(final), expected)


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_low_precision_values_follow_the_reference(dtype):
    from harness.support.reference import reference_history

    x, y = core.make_batches(20, 8, seed=3, noise=0.1, dtype=dtype)
    lr = 0.3 * core.critical_lr(x)
    weights, _, _ = reference_history(0.5, float(jnp.asarray(lr, dtype)), x, y)
    history = core.training_history(jnp.asarray(0.5, dtype), lr, x, y)
    np.testing.assert_allclose(
        history.weights.astype(np.float64), weights, atol=16 * float(jnp.finfo(dtype).eps)
    )
    engine = core.HistoryEngine(max_steps=32, max_batch=16)
    padded = engine.history(jnp.asarray(0.5, dtype), lr, x, y)
    np.testing.assert_array_equal(padded.weights, history.weights)


def test_mean_divides_by_b_exactly_in_bfloat16():
    x, y = core.make_batches(1, 257, seed=4, dtype=jnp.bfloat16)
    mean = core.training_history(jnp.asarray(0.0, jnp.bfloat16), 0.1, x, y, loss="mean")
    total = core.training_history(jnp.asarray(0.0, jnp.bfloat16), 0.1, x, y, loss="sum")
    # bfloat16 holds 257 as 256; the division must use 257.
    expected = np.float32(np.float32(total.grads[0]) / np.float32(257)).astype(jnp.bfloat16)
    assert mean.grads[0] == expected


def test_engine_compiles_once_for_every_setting(count_compiles):
    engine = core.HistoryEngine()
    assert engine.max_steps >= 2000 and engine.max_batch >= 1024
    engine.warm_up(jnp.float32)
    rng = np.random.default_rng(0)
    settings = [(1, 1), (2000, 1024), (2, 2), (1000, 512), (7, 1023), (1999, 3)]
    settings += [(int(rng.integers(1, 2001)), int(rng.integers(1, 1025))) for _ in range(18)]
    data = {s: core.make_batches(*s, seed=i, noise=0.1) for i, s in enumerate(settings)}
    with count_compiles() as compiles:
        for i, (n, b) in enumerate(settings):
            loss = ("sum", "mean")[i % 2]
            lr = float(10 ** rng.uniform(-4, 1))
            w = float(rng.normal())
            history = engine.history(w, lr, *data[n, b], loss=loss)
            assert history.weights.shape == (n + 1,)
    assert len(settings) >= 20
    assert compiles == []


def test_engine_padding_changes_no_number():
    engine = core.HistoryEngine(max_steps=300, max_batch=256)
    rng = np.random.default_rng(3)
    for case in range(12):
        n, b = int(rng.integers(1, 301)), int(rng.integers(1, 257))
        loss = ("sum", "mean")[case % 2]
        x, y = core.make_batches(n, b, seed=case, noise=0.3)
        # Up to twice the critical rate: some runs diverge, and their non-finite tails are compared too.
        lr = float(rng.uniform(0.1, 2.0)) * core.critical_lr(x, loss=loss)
        w = float(rng.normal())
        exact = core.training_history(w, lr, x, y, loss=loss)
        padded = engine.history(w, lr, x, y, loss=loss)
        for name in ("weights", "losses", "grads"):
            np.testing.assert_array_equal(getattr(padded, name), getattr(exact, name), err_msg=name)
        assert padded.diverged_at == exact.diverged_at


def test_engine_ignores_what_lies_past_n_and_b():
    engine = core.HistoryEngine(max_steps=16, max_batch=16)
    x, y = core.make_batches(5, 3, seed=4, noise=0.2)
    batches = engine.pad(x, y)
    garbage = core.PaddedBatches(
        batches.x.at[5:, :].set(jnp.nan).at[:, 3:].set(-9.0),
        batches.y.at[5:, :].set(3.0).at[:, 3:].set(jnp.inf),
        5,
        3,
    )
    clean, dirty = engine.run(0.1, 0.02, batches), engine.run(0.1, 0.02, garbage)
    for name in ("weights", "losses", "grads"):
        np.testing.assert_array_equal(getattr(dirty, name), getattr(clean, name))
    assert dirty.diverged_at == clean.diverged_at


def test_engine_corner_is_the_padded_slice_bit_for_bit():
    engine = core.HistoryEngine(max_steps=300, max_batch=256)
    x, y = core.make_batches(300, 256, seed=11, noise=0.4)
    full = engine.pad(x, y)
    rng = np.random.default_rng(3)
    for _ in range(12):
        n, b = int(rng.integers(1, 301)), int(rng.integers(1, 257))
        corner, padded = engine.corner(full, n, b), engine.pad(x[:n, :b], y[:n, :b])
        assert (corner.n, corner.b) == (n, b) and corner.x is full.x
        lr = float(rng.uniform(0.2, 1.8)) * core.critical_lr(x[:n, :b])  # some runs diverge
        w = float(rng.normal())
        both = engine.histories(w, lr, corner)
        for loss in ("sum", "mean"):
            expected = core.training_history(w, lr, x[:n, :b], y[:n, :b], loss=loss)
            for got in (both[loss], engine.run(w, lr, padded, loss=loss)):
                for name in ("weights", "losses", "grads"):
                    np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), err_msg=name)
                assert got.diverged_at == expected.diverged_at


@pytest.mark.parametrize(
    ("n", "b", "error", "message"),
    [
        (0, 2, ValueError, "n must lie in 1..5"),
        (2, 4, ValueError, "b must lie in 1..3"),
        (True, 2, TypeError, "n must be an integer"),
        (2, 1.0, TypeError, "b must be an integer"),
    ],
)
def test_engine_corner_checks_its_arguments(n, b, error, message):
    engine = core.HistoryEngine(max_steps=8, max_batch=8)
    batches = engine.pad(*core.make_batches(5, 3, seed=0))
    with pytest.raises(error, match=message):
        engine.corner(batches, n, b)
    with pytest.raises(TypeError, match="batches must be the PaddedBatches"):
        engine.corner((batches.x, batches.y), 2, 2)


def test_diverged_at_is_the_first_step_past_the_limit():
    x, y = core.make_batches(60, 4, seed=5, kind="ones")
    lr = 1.5 * core.critical_lr(x)  # factor 1 - 2*lr*S = -2: |w - w*| doubles every step
    history = core.training_history(0.0, lr, x, y)
    error = np.abs(history.weights.astype(np.float64) - 1.0)
    limit = core.DIVERGENCE_RATIO * max(1.0, abs(0.0 - 1.0))
    first = int(np.argmax(~np.isfinite(error[1:]) | (error[1:] > limit)))
    assert history.diverged_at == first
    assert 2**first <= limit < 2 ** (first + 1)  # about step 19 for a million-fold growth
    engine = core.HistoryEngine(max_steps=64, max_batch=8)
    assert engine.history(0.0, lr, x, y).diverged_at == first


def test_overflow_is_data_not_an_error():
    x, y = core.make_batches(400, 8, seed=6)
    history = core.training_history(0.0, 10.0, x, y)  # far past critical: overflows float32 to inf, then NaN
    assert history.diverged_at is not None
    assert not np.all(np.isfinite(history.weights))
    assert np.all(np.isfinite(history.weights[: history.diverged_at + 1]))


def test_engine_refuses_data_larger_than_its_capacity():
    engine = core.HistoryEngine(max_steps=4, max_batch=4)
    x, y = core.make_batches(5, 2, seed=0)
    with pytest.raises(ValueError, match="max_steps"):
        engine.pad(x, y)


def test_engine_run_checks_its_batches():
    engine = core.HistoryEngine(max_steps=4, max_batch=4)
    batches = engine.pad(*core.make_batches(2, 2, seed=0))
    with pytest.raises(TypeError, match="batches must be the PaddedBatches"):
        engine.run(0.0, 0.1, (batches.x, batches.y))
    with pytest.raises(ValueError, match="n=5"):
        engine.run(0.0, 0.1, batches._replace(n=5))


def test_engine_refuses_unusable_dtypes_and_counts():
    engine = core.HistoryEngine(max_steps=4, max_batch=4)
    x, y = core.make_batches(2, 2, seed=0)
    for dtype in (np.int32, np.complex64):
        with pytest.raises(TypeError, match="dtype must be float16, bfloat16, float32 or float64"):
            engine.pad(x, y, dtype=dtype)
    with pytest.raises(ValueError, match="n=2.5"):
        engine.run(0.0, 0.1, engine.pad(x, y)._replace(n=2.5))
