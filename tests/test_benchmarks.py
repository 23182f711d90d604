"""The benchmarks' own plumbing, which `make test` does not otherwise run: `make bench` starts the
dashboard through make run's voila command, whatever form that command takes, and times a slider
move the same way on both of its pages."""

import subprocess

import pytest

from benchmarks.browser import analyse_move, ratios, summarise_moves, write_wrapper


def test_the_bench_serves_the_repository_through_make_runs_voila_command(tmp_path):
    fake = tmp_path / "fake-python"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')  # prints the arguments it was given
    fake.chmod(0o755)
    wrapper = write_wrapper(tmp_path, fake, ["--pool_size=0"])
    run = subprocess.run(
        [wrapper, "-m", "voila", "app.ipynb", "--port=1", "--template=scanlab"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "HOME": str(tmp_path)},
    )
    served = ["-m", "voila", ".", "--port=1", "--template=scanlab", "--pool_size=0"]
    assert run.stdout.split("\n")[:-1] == served  # the directory instead of app.ipynb, extras last
    assert (tmp_path / "argv").read_text().split("\n")[:-1] == served[2:]
    assert (tmp_path / "env").read_text() == "JAX_PLATFORMS=cpu\n"
    # Every other use of python (make's set-up, tools/plotly_bundle.py) passes straight through.
    other = subprocess.run([wrapper, "tools/plotly_bundle.py"], capture_output=True, text=True, check=True)
    assert other.stdout == "tools/plotly_bundle.py\n"
    refused = subprocess.run([wrapper, "-m", "voila", "other.ipynb"], capture_output=True, text=True)
    assert refused.returncode == 2 and "no app.ipynb" in refused.stderr


def _moves(records):
    return {"echo": summarise_moves(records["echo"]), "explorer": summarise_moves(records["explorer"])}


def test_a_move_has_settled_at_the_frame_that_paints_its_last_change_on_both_pages():
    # Page clock, ms. Two charts: the first changes at 104 and 105, the second at 109 (one task of
    # drawing each); frames come every 16 ms. The charts' drawing events come in the frame at 116.
    charts = {
        "key": 100.0,
        "origin": 0.0,
        "ws": [],
        "hookMs": 0.0,
        "n": 2,
        "titles": ["Trajectory", "Loss"],
        "ap": [[116.0, 0], [116.2, 1]],
        "dom": [[99.0, 1], [104.0, 0], [105.0, 0], [109.0, 1]],  # 99: before the key, not this move's
        "frames": [106.0, 116.0, 132.0],  # 106: the frame after the first chart's change only
    }
    move = analyse_move(charts)
    assert move["dom_done"] == pytest.approx(9.0)  # the last change, not the first
    assert move["framed"] == pytest.approx(16.0)  # the frame after it, not the one at 106
    assert move["done"] == pytest.approx(16.2)  # the last drawing event
    echo = {"key": 200.0, "origin": 0.0, "ws": [], "hookMs": 0.0, "changed": 204.0, "framed": 212.0}
    assert analyse_move(echo) == {"instrumentation_ms": 0.0, "done": 4.0, "framed": 12.0}

    r = ratios(_moves({"echo": [echo], "explorer": [charts]}))
    assert r["ratio"]["median"] == pytest.approx(16.0 / 12.0)  # the target's: frame over frame
    assert r["mutation"]["median"] == pytest.approx(9.0 / 4.0)
    assert r["events"]["median"] == pytest.approx(16.2 / 4.0)
    assert r["floor"]["median"] == pytest.approx(12.0 / 4.0)


def test_a_move_without_a_frame_after_its_last_change_has_no_settled_time():
    # A chart that changed again after the last frame taken (the move's wait ended first): its
    # frame is unknown, and an earlier one must not stand in for it.
    charts = {
        "key": 0.0,
        "origin": 0.0,
        "ws": [],
        "hookMs": 0.0,
        "n": 1,
        "titles": ["Trajectory"],
        "ap": [[16.0, 0]],
        "dom": [[5.0, 0], [20.0, 0]],
        "frames": [16.0],
    }
    move = analyse_move(charts)
    assert move["dom_done"] == pytest.approx(20.0) and "framed" not in move
