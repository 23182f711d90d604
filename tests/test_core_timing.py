"""core.timing: the three ways give seed 000's numbers, every measurement really compiles, host syncs
are counted, and the command line prints JSON lines with the persistent compilation cache off.

Timings are noise on a shared machine, so no test asserts on a duration beyond it being a positive
float; compile counts and sync counts are exact and are asserted.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from core import timing
from harness.support.reference import reference_history

ROOT = Path(__file__).resolve().parents[1]


def reference_final_w(n, batch_size):
    x, y = timing.timing_batches(n, batch_size)
    weights, _, _ = reference_history(0.0, timing.stable_lr(batch_size), x, y)
    return weights[-1]


@pytest.mark.parametrize(("n", "batch_size"), [(1, 1), (5, 32), (20, 3)])
def test_every_way_gives_the_float64_reference(n, batch_size):
    results = [timing.time_way(way, n, batch_size=batch_size, repeats=1) for way in timing.WAYS]
    expected = reference_final_w(n, batch_size)
    for result, way in zip(results, timing.WAYS, strict=True):
        assert (result.way, result.n) == (way, n)
        np.testing.assert_allclose(result.final_w, expected, rtol=2e-6, atol=1e-6, err_msg=way)
    # Moving away from w0 = 0: an agreement of three zeros would prove nothing.
    assert abs(expected) > 1e-3


def test_the_learning_rate_keeps_long_runs_finite():
    # Seed 000's step multiplies the error by 1 - 2*lr*S_k each batch; the product decides.
    for batch_size in (1, 2, 32, 512):
        final_w = reference_final_w(2000, batch_size)
        assert np.isfinite(final_w) and abs(final_w - 2.0) < 1.0, batch_size


def test_timings_are_positive_floats():
    for way in timing.WAYS:
        result = timing.time_way(way, 4, batch_size=8, repeats=2)
        for field in ("compile_s", "run_s", "trace_s", "lower_s", "final_w"):
            assert type(getattr(result, field)) is float, (way, field)
        assert result.compile_s > 0 and result.run_s > 0
        assert 0 < result.trace_s + result.lower_s < result.compile_s


@pytest.mark.parametrize("way", timing.WAYS)
def test_every_call_compiles_again(way, count_compiles):
    for _ in range(2):
        with count_compiles() as compiles:
            timing.time_way(way, 3, batch_size=4, repeats=2)
        assert len(compiles) == 1


def test_the_python_way_compiles_one_step_for_every_n(count_compiles):
    # Its compile is the single step's: the same program whatever N is.
    with count_compiles() as compiles:
        timing.time_way("python", 50, batch_size=4, repeats=1)
    assert len(compiles) == 1


def test_unrolled_above_the_cap_raises_before_compiling(count_compiles):
    cap = timing.UNROLL_CAP
    with (
        count_compiles() as compiles,
        pytest.raises(ValueError, match=rf"n = {cap + 1} .*UNROLL_CAP = {cap}"),
    ):
        timing.time_way("unrolled", cap + 1)
    assert compiles == []


@pytest.mark.parametrize(
    ("n", "every", "syncs"),
    [(20, 1, 20), (20, 10, 2), (20, 7, 3), (20, 20, 1), (20, 50, 1), (20, None, 1), (1, 1, 1)],
)
def test_host_syncs_are_counted(n, every, syncs):
    result = timing.time_host_sync(n, every, batch_size=4, repeats=2)
    assert (result.every, result.n, result.syncs) == (every, n, syncs)
    assert type(result.run_s) is float and result.run_s > 0
    np.testing.assert_allclose(result.final_w, reference_final_w(n, 4), rtol=2e-6, atol=1e-6)


def test_logging_loop_logs_the_losses_it_reads():
    x, y = timing.timing_batches(6, 3)
    lr = np.float32(timing.stable_lr(3))
    step = jax.jit(timing.train_step)
    w, logged = timing.logging_loop(step, np.float32(0.0), lr, x, y, 4)
    assert [k for k, _ in logged] == [4, 6]
    weights, losses, _ = reference_history(0.0, lr, x, y)
    np.testing.assert_allclose([loss for _, loss in logged], losses[[3, 5]], rtol=1e-5)
    np.testing.assert_allclose(float(w), weights[-1], rtol=2e-6)


@pytest.mark.parametrize("way", timing.WAYS)
def test_each_way_has_readable_source(way):
    source = timing.loop_source(way)
    assert source.startswith(f"def {way}_loop(") and "train_step" in source


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: timing.time_way("loop", 3), ValueError, "way"),
        (lambda: timing.time_way(None, 3), ValueError, "way"),
        (lambda: timing.time_way("scan", 0), ValueError, "n"),
        (lambda: timing.time_way("scan", True), TypeError, "n"),
        (lambda: timing.time_way("scan", 3.0), TypeError, "n"),
        (lambda: timing.time_way("scan", 3, batch_size=0), ValueError, "batch_size"),
        (lambda: timing.time_way("scan", 3, batch_size="32"), TypeError, "batch_size"),
        (lambda: timing.time_way("scan", 3, repeats=0), ValueError, "repeats"),
        (lambda: timing.time_way("scan", 3, repeats=False), TypeError, "repeats"),
        (lambda: timing.time_host_sync(0, 1), ValueError, "n"),
        (lambda: timing.time_host_sync(10, 0), ValueError, "every"),
        (lambda: timing.time_host_sync(10, True), TypeError, "every"),
        (lambda: timing.time_host_sync(10, 2.5), TypeError, "every"),
        (lambda: timing.time_host_sync(10, "none"), TypeError, "every"),
        (lambda: timing.time_host_sync(10, 1, batch_size=-1), ValueError, "batch_size"),
        (lambda: timing.time_host_sync(10, 1, repeats=None), TypeError, "repeats"),
        (lambda: timing.loop_source("while"), ValueError, "way"),
    ],
)
def test_bad_arguments_name_the_argument(call, error, name):
    with pytest.raises(error, match=rf"^{name} "):
        call()


def test_numpy_integers_are_accepted():
    result = timing.time_way("scan", np.int64(2), batch_size=np.int32(2), repeats=np.int16(1))
    assert (result.n, type(result.n)) == (2, int)


def test_time_way_refuses_a_persistent_cache(count_compiles, tmp_path):
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    try:
        assert timing.persistent_cache_on()
        with count_compiles() as compiles, pytest.raises(RuntimeError, match="persistent compilation cache"):
            timing.time_way("scan", 2)
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
    assert compiles == [] and list(tmp_path.iterdir()) == []


def run_cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "core.timing", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def cache_env(directory):
    # A zero threshold: otherwise only compiles longer than a second would be written.
    return {"JAX_COMPILATION_CACHE_DIR": str(directory), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def test_the_cache_settings_write_when_nothing_turns_them_off(tmp_path):
    # The control for the next test: without core.timing's switch, this environment fills the folder.
    subprocess.run(
        [sys.executable, "-c", "import jax; jax.jit(lambda x: x + 1)(1.0)"],
        env={**os.environ, **cache_env(tmp_path)},
        check=True,
        timeout=120,
    )
    assert list(tmp_path.iterdir())


def test_command_line_prints_json_lines_with_the_cache_off(tmp_path):
    above = timing.UNROLL_CAP + 1
    completed = run_cli(
        "--ns",
        f"{above},3",
        "--ways",
        "scan,python,unrolled",
        "--batch-size",
        "4",
        "--repeats",
        "1",
        "--sync-every",
        "1,2,none",
        "--sync-n",
        "5",
        env=cache_env(tmp_path),
    )
    assert completed.returncode == 0, completed.stderr
    records = [json.loads(line) for line in completed.stdout.splitlines()]
    kinds = [r["kind"] for r in records]
    assert kinds[0] == "config" and kinds[-1] == "done"
    assert records[0]["persistent_cache"] is False and records[0]["unroll_cap"] == timing.UNROLL_CAP
    assert list(tmp_path.iterdir()) == []

    loops = [r for r in records if r["kind"] == "loop"]
    assert [(r["way"], r["n"]) for r in loops] == [
        ("scan", 3),
        ("python", 3),
        ("scan", above),
        ("python", above),
        ("unrolled", 3),
    ]
    for r in loops:
        assert set(r) == {"kind", "way", "n", "compile_s", "run_s", "final_w", "trace_s", "lower_s"}
        assert r["compile_s"] > 0 and r["run_s"] > 0
        np.testing.assert_allclose(r["final_w"], reference_final_w(r["n"], 4), rtol=2e-6, atol=1e-6)
    skipped = [r for r in records if r["kind"] == "skipped"]
    assert [(r["way"], r["n"]) for r in skipped] == [("unrolled", above)]
    assert "UNROLL_CAP" in skipped[0]["reason"]
    syncs = [(r["every"], r["n"], r["syncs"]) for r in records if r["kind"] == "sync"]
    assert syncs == [(1, 5, 5), (2, 5, 3), (None, 5, 1)]
    # The slow compiles come last, after every cheap figure is out.
    assert kinds.index("sync") < kinds.index("loop", kinds.index("sync"))


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--ns", "0"], "--ns"),
        (["--ns", "3,x"], "--ns"),
        (["--ns", ""], "--ns"),
        (["--ways", "scan,loop"], "--ways"),
        (["--sync-every", "1,never"], "--sync-every"),
        (["--batch-size", "-2"], "--batch-size"),
        (["--repeats", "1.5"], "--repeats"),
        (["--sync-n", "0"], "--sync-n"),
        (["--unknown"], "--unknown"),
    ],
)
def test_command_line_rejects_bad_arguments(args, option, capsys):
    with pytest.raises(SystemExit) as exit_info:
        timing.main(args)
    assert exit_info.value.code == 2
    assert option in capsys.readouterr().err


def test_command_line_exits_with_status_2_on_a_bad_argument():
    completed = run_cli("--ns", "-5")
    assert completed.returncode == 2
    assert "--ns" in completed.stderr and completed.stdout == ""
