"""The benchmarks' own plumbing, which `make test` does not otherwise run: `make bench` starts the
dashboard through make run's voila command, whatever form that command takes, and times a slider
move the same way on both of its pages."""

import subprocess

import numpy as np
import pytest

import core
from benchmarks import naive
from benchmarks.browser import write_wrapper
from benchmarks.browser_report import (
    analyse_move,
    analyse_visit,
    first_picture_rows,
    navigation_ratios,
    profile_summary,
    ratios,
    summarise_moves,
    summarise_visits,
)


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


def _charts(key, dom, frames, ap):
    """An explorer move: its charts' changes (time, chart), frames ([callbacks, rendering's end]),
    drawing events (time, chart)."""
    return {"key": key, "origin": 0.0, "ws": [], "hookMs": 0.0, "n": 2, "titles": ["Trajectory", "Loss"],
            "dom": dom, "frames": frames, "ap": ap}  # fmt: skip


def _echo(key, changed, frames):
    return {"key": key, "origin": 0.0, "ws": [], "hookMs": 0.0, "changed": changed, "frames": frames}


def test_a_button_move_is_timed_from_its_click_not_from_a_value_the_page_sends_back():
    # A preset click: the click (no state), the kernel's replies, then the page sending back a
    # slider value it rounded, with replies of its own.
    ws = [
        {"t": 102.0, "dir": "out", "type": "comm_msg", "id": "click", "method": "custom"},
        {"t": 108.0, "dir": "in", "parent": "click", "state": "busy", "date": "1970-01-01T00:00:00.106Z"},
        {"t": 140.0, "dir": "in", "parent": "click", "type": "comm_msg", "keys": ["value"], "batch": True},
        {"t": 150.0, "dir": "out", "type": "comm_msg", "id": "echo", "keys": ["value"]},
        {"t": 151.0, "dir": "in", "parent": "click", "state": "idle", "date": "1970-01-01T00:00:00.130Z"},
        {"t": 160.0, "dir": "in", "parent": "echo", "state": "busy", "date": "1970-01-01T00:00:00.155Z"},
    ]
    charts = _charts(100.0, dom=[[170.0, 0]], frames=[[176.0, 180.0]], ap=[[176.0, 0]])
    move = analyse_move({**charts, "ws": ws})
    assert move["sent"] == pytest.approx(2.0) and move["first_reply_in"] == pytest.approx(8.0)
    assert (move["kernel_busy"], move["kernel_idle"]) == pytest.approx((6.0, 30.0))
    assert (move["reply_batches"], move["js_to_kernel_msgs"]) == (1, 1)


def test_a_move_has_settled_when_the_frame_after_its_last_change_has_rendered_on_both_pages():
    # Page clock, ms. Two charts: the first changes at 104 and 105, the second at 109; frames every
    # 16 ms, each rendered 6 ms after its callbacks. The charts' drawing events come in the frame at
    # 116, whose rendering ends at 122.
    charts = _charts(
        100.0,
        dom=[[104.0, 0], [105.0, 0], [109.0, 1]],
        frames=[[106.0, 107.0], [116.0, 122.0], [132.0, 134.0]],  # 106: after the first change only
        ap=[[116.0, 0], [116.2, 1]],
    )
    move = analyse_move(charts)
    assert move["dom_done"] == pytest.approx(9.0)  # the last change, not the first
    assert move["frame_at"] == pytest.approx(16.0)  # the frame after it, not the one at 106
    assert move["framed"] == pytest.approx(22.0)  # that frame rendered
    assert move["done"] == pytest.approx(16.2)  # the last drawing event
    echo = analyse_move(_echo(200.0, changed=204.0, frames=[[212.0, 213.0], [228.0, 229.0]]))
    assert (echo["done"], echo["frame_at"], echo["framed"]) == pytest.approx((4.0, 12.0, 13.0))

    # A second move on each page: the target's median and p95 are each page's own, then divided.
    later = _charts(300.0, dom=[[311.0, 0], [312.0, 1]], frames=[[316.0, 330.0]], ap=[[316.0, 0], [316.0, 1]])
    echo_later = _echo(400.0, changed=406.0, frames=[[416.0, 418.0]])
    moves = _moves({"echo": [_echo(200.0, 204.0, [[212.0, 213.0]]), echo_later], "explorer": [charts, later]})
    r = ratios(moves)
    assert moves["explorer"]["framed"]["median"] == pytest.approx((22.0 + 30.0) / 2)
    assert r["ratio"]["median"] == pytest.approx(((22.0 + 30.0) / 2) / ((13.0 + 18.0) / 2))
    assert r["ratio"]["p95"] == pytest.approx((22.0 + 0.95 * 8.0) / (13.0 + 0.95 * 5.0))
    assert r["mutation"]["median"] == pytest.approx(((9.0 + 12.0) / 2) / ((4.0 + 6.0) / 2))
    assert r["events"]["median"] == pytest.approx(((16.2 + 16.0) / 2) / ((4.0 + 6.0) / 2))
    assert r["floor"]["median"] == pytest.approx(((12.0 + 16.0) / 2) / ((4.0 + 6.0) / 2))


def test_a_move_without_a_frame_after_its_last_change_has_no_settled_time():
    # A chart that changed again after the last frame taken (the move's wait ended first): its
    # frame is unknown, and an earlier one must not stand in for it.
    charts = _charts(0.0, dom=[[5.0, 0], [20.0, 1]], frames=[[16.0, 18.0]], ap=[[16.0, 0], [16.0, 1]])
    move = analyse_move(charts)
    assert move["dom_done"] == pytest.approx(20.0) and "framed" not in move


def test_the_line_charts_are_timed_without_the_stability_map():
    # The map changes last (its worker's redraw at 150 ms); the line charts are painted by the frame
    # after their own last change (109), rendered at 122: that is their time, the map's is 172.
    record = _charts(
        100.0,
        dom=[[104.0, 0], [109.0, 1], [150.0, 2]],
        frames=[[116.0, 122.0], [166.0, 172.0]],
        ap=[[116.0, 0], [116.2, 1], [166.0, 2]],
    )
    record["titles"] = ["Trajectory", "Loss", "Stability map for N = 40"]
    record["n"] = 3
    move = analyse_move(record)
    assert move["lines_framed"] == pytest.approx(22.0) and move["framed"] == pytest.approx(72.0)
    echo = _echo(100.0, changed=103.0, frames=[[106.0, 111.0]])
    r = ratios(_moves({"echo": [echo], "explorer": [record]}))
    assert r["lines"]["median"] == pytest.approx(22.0 / 11.0) and r["ratio"]["median"] == pytest.approx(
        72.0 / 11.0
    )


def _nav(all_ms=None, first=None, picture=None, still_gone=None, slider=None):
    """A visit's record (browser_visit.js), ms from the navigation start."""
    return {"first": first, "all": all_ms, "picture": picture, "still_gone": still_gone, "slider": slider,
            "ws": [{"t": 900.0, "dir": "in", "size": 2**20, "type": "comm_open"}],
            "longtasks": [[100.0, 60.0], [1500.0, 80.0]], "response_end": 300.0, "dcl": 400.0,
            "html_bytes": 2**20, "resources": 3, "resource_bytes": 2**21,
            "largest_resource": ["voila.js", 2**20], "last_resource_end": 800.0}  # fmt: skip


def test_the_first_picture_and_the_charts_are_timed_against_the_echo_pages_slider():
    # Two echo visits (no charts: counted until the slider is seen) and two explorer visits, one
    # with a still and one without: the first picture's statistics are over the visits that had one.
    echo = [analyse_visit(_nav(slider=1000.0)), analyse_visit(_nav(slider=1400.0))]
    assert echo[0]["first_chart_ms"] is None and echo[0]["longtask_ms"] == 60.0
    explorer = [
        analyse_visit(_nav(first=1600.0, all_ms=1800.0, picture=500.0, still_gone=1900.0, slider=1900.0)),
        analyse_visit(_nav(first=1700.0, all_ms=2000.0)),
    ]
    assert explorer[1]["first_picture_ms"] is None and explorer[0]["longtask_ms"] == 60.0 + 80.0
    nav = {"echo": summarise_visits(echo), "plain": summarise_visits(explorer)}
    assert "first_chart_ms" not in nav["echo"] and nav["echo"]["slider_ms"]["median"] == 1200.0
    assert nav["plain"]["first_picture_ms"]["n"] == 1 and nav["plain"]["all_charts_ms"]["n"] == 2
    r = navigation_ratios(nav)
    assert set(r) == {"plain"}
    assert r["plain"]["first_picture"]["median"] == pytest.approx(500.0 / 1200.0)
    assert r["plain"]["all_charts"]["median"] == pytest.approx(1900.0 / 1200.0)
    # p95: each page's own (interpolated between the two visits), then divided.
    assert r["plain"]["all_charts"]["p95"] == pytest.approx((1800.0 + 0.95 * 200.0) / (1000.0 + 0.95 * 400.0))
    assert r["plain"]["still_gone"]["median"] == pytest.approx(1900.0 / 1200.0)
    nav["echo"]["preheated"] = 0
    nav["ratios"] = r
    printed = "\n".join(first_picture_rows(nav, "lr=0.05"))
    assert "ratio first picture / echo slider (target <= 0.7)" in printed and "shared" not in printed
    # Without stills (nor an echo page) the ratios are NaN, not an error.
    bare = navigation_ratios({"shared": summarise_visits(explorer[1:])})
    assert np.isnan(bare["shared"]["first_picture"]["median"]) and np.isnan(
        bare["shared"]["first_chart"]["p95"]
    )


def test_the_naive_map_loop_computes_the_maps_own_cells():
    # benchmarks.naive times core.stability's private per-cell scan one call at a time: a change of
    # that scan's arguments must fail here, not in the next `make bench`.
    engine = core.HistoryEngine(24, 8)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(24, 8)).astype(np.float32)
    batches = engine.pad(x, (2 * x + 0.1 * rng.normal(size=x.shape)).astype(np.float32))
    lrs, sizes = np.geomspace(1e-3, 0.5, 5), np.array([1, 3, 8])
    finals, diverged = naive.map_loop(batches, lrs, sizes, 0.5, 20, [0, 2])
    want_finals, want_diverged = naive.map_kernel(batches, lrs, sizes, 0.5, 20)
    np.testing.assert_allclose(finals, want_finals[:, [0, 2]], rtol=1e-6)
    np.testing.assert_array_equal(diverged, want_diverged[:, [0, 2]])


def test_a_profiles_first_sample_is_not_counted():
    # The first sample's time runs from Profiler.start, which holds the page while V8 logs its code.
    def node(i, name, url="", children=()):
        return {"id": i, "callFrame": {"functionName": name, "url": url}, "children": list(children)}

    profile = {
        "nodes": [node(1, "(root)", children=[2, 3]), node(2, "(program)"), node(3, "draw", "x/surface.js")],
        "samples": [2, 3, 2, 3],
        "timeDeltas": [600_000, 2_000, 1_000, 3_000],  # µs
    }
    summary = profile_summary(profile, per=1)
    assert summary["self_by_script_ms"] == {"surface.js": 5.0, "(program)": 1.0}
    # `until_ms` still counts the first sample's time: the samples up to 602 ms are its and one more.
    assert profile_summary(profile, until_ms=602.5)["self_by_script_ms"] == {"surface.js": 2.0}


def test_the_suites_cpu_report_sums_modules_and_functions_and_counts_reaped_children(tmp_path):
    import json
    import sys

    from benchmarks.suite_cpu import report, tree_cpu

    rows = {
        "gw0": [("tests/test_a.py::test_x[1]", 2.0, 3.0), ("tests/test_a.py::test_x[2]", 1.5, 1.0)],
        "gw1": [("tests/test_b.py::test_y", 4.0, 9.0)],
    }
    for worker, tests in rows.items():
        lines = [json.dumps({"id": i, "cpu": c, "wall": w}) for i, c, w in tests]
        (tmp_path / f"{worker}.jsonl").write_text("\n".join(lines) + "\n")
    told = report(tmp_path).splitlines()
    assert told[0] == "3 tests: 8 CPU s, 13 s of wall"
    modules = told[told.index("  CPU s  wall s tests  module") + 1 :][:2]
    assert [line.split() for line in modules] == [
        ["4.0", "9.0", "1", "tests/test_b.py"],
        ["3.5", "4.0", "2", "tests/test_a.py"],
    ]
    assert told[-1].split() == ["3.5", "4.0", "2", "tests/test_a.py::test_x"]
    # A child's CPU counts once it is reaped.
    before = tree_cpu()
    loop = "import time; end = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", loop], check=True)
    assert tree_cpu() - before >= 0.3


def test_the_lost_answers_probe_reads_both_of_jupyters_websocket_forms():
    import json

    from jupyter_server.services.kernels.connection.base import serialize_msg_to_ws_v1

    from benchmarks.lost_answers import ids

    header = json.dumps({"msg_id": "answer-1", "msg_type": "comm_msg"}).encode()
    parent = json.dumps({"msg_id": "request-7", "msg_type": "comm_msg"}).encode()
    content = json.dumps({"data": {"method": "update"}}).encode()
    frame = serialize_msg_to_ws_v1([header, parent, b"{}", content, b"buffer"], "iopub")
    assert ids(frame) == ("answer-1", "request-7")
    assert ids(serialize_msg_to_ws_v1([header, b"{}", b"{}", content], "shell")) == ("answer-1", "")
    legacy = {"header": {"msg_id": "a"}, "parent_header": {"msg_id": "b"}, "channel": "iopub"}
    assert ids(json.dumps(legacy).encode()) == ("a", "b")
