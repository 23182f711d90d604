"""The served dashboard in headless Chromium: a slider move until every chart has redrawn, against a
bare ipywidgets echo on the same server, and the time from navigation to the first and to every chart.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.browser [--json PATH] [--profile]

One Voila server serves the repository directory, so the explorer (/voila/render/app.ipynb) and the echo
page (/voila/render/benchmarks/echo.ipynb, a slider and a label that a kernel-side observer sets) share
it. The server is `make run` itself, with its voila command pointed at the directory instead of
app.ipynb (a wrapper put first as make's BIN): make's exported environment, its voila options and
voila.json (read from the working directory) stay in force whatever they become. `--voila-args` adds
options after make's. Chromium is Debian's, launched with harness.chromium's CHROMIUM_ARGS.

Moves are keyboard presses on a slider's `.noUi-handle` (ArrowRight and ArrowLeft in turn), one page's
move then the other's, a gap between moves, plus up to one frame (1/60 s) at random: a move's wait
ends on an animation frame, so with a fixed gap every key came at the same point of the page's frame
cycle, and what waits for a frame (the charts' drawing events) moved with that point from run to
run (the echo's frame 10.2 ms after its key in one run, 17.3 to 19.4 ms in seven others, medians).
Times are taken in the page from the keydown event. A page has settled when the animation frame
that paints its last change has rendered, taken the same way on both (the target's measure,
`ratios`): a MutationObserver sees the change (the echo's label text; any element of any
`.js-plotly-plot`) and requests the frame, whose callback posts a message that runs as the task
after the frame's style, layout and paint. A move waits until every chart has finished drawing
since the key, at its last `plotly_afterplot`, `plotly_animated` or `plotly_relayout` event within
the gap; the report also gives each page's last change itself and those drawing events (`ratios`).
The page's websocket is wrapped, so each move also splits into: value sent, kernel busy and idle
(the kernel's own timestamps), figure messages received, and charts redrawn.

Navigation: each visit is a new browser context; the first chart and all charts count as drawn on the
first animation frame where they have a `.scatterlayer .trace` (or a heatmap), in ms from the navigation
start. The first picture is the first frame where a still's chart (`.scanlab-still svg`, widgets/still.py)
is seen in the window (a box, not hidden), and the stills gone the first frame where none remains (the
visit waits up to STILL_TIMEOUT s more for it). As many visits of the echo page, in turn with the
explorer's, time its slider (`.widget-slider`) seen the same way: issue 35's first picture and live
charts are ratios to it. Before each visit the script waits until the server and its kernels are idle
(a preheated pool refilled). `--profile` adds Chromium's CPU profile of 15 more moves and of one more visit.

Prints a table (stdout; progress on stderr) and asserts nothing about the figures; it exits non-zero
with a message when a wait times out, the server does not come up, or a chart on the explorer never
redraws after a move (retried on fresh pages first: see --page-tries).

Here: the runs and the command line. The page probe is browser_page.py (with browser_page.js), the
figures and the report browser_report.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from benchmarks.browser_page import (
    CLOSE_ERRORS,
    BenchError,
    DeadCharts,
    Mover,
    Page,
    page_state,
    wait_for_charts,
)
from benchmarks.browser_report import (
    analyse_visit,
    headline,
    navigation_ratios,
    profile_summary,
    ratios,
    report,
    summarise_moves,
    summarise_visits,
)
from harness.chromium import CHROMIUM, CHROMIUM_ARGS
from harness.js import call
from harness.server import Server, ServerError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APP = "voila/render/app.ipynb"
ECHO = "voila/render/benchmarks/echo.ipynb"
SHARED_QUERY = "lr=0.05&N=50&B=8&loss=both&w0=1.5"
STILL_TIMEOUT = 10.0  # s a visit waits for its stills to go once every chart is drawn
PREHEATED = "Using pre-heated kernel"  # Voila's log line when a visit gets the pool's kernel
# The explorer's sliders, by label (--control).
SLIDERS = ("lr", "N", "B", "w0", "true w", "noise", "momentum")
# The page a control is moved on, where the default's would not show its moves: momentum moves the
# overlaid run of the momentum optimizer only.
QUERIES = {"momentum": "optimizer=momentum"}
# The other controls: two buttons pressed in turn (Enter on each), by their text. The loss view
# starts at "sum", so its first press is "mean"; the stability map at "lr × B".
BUTTONS = {
    "loss": ("mean", "sum"),
    "preset": ("Oscillating", "Smooth convergence"),
    "map": ("lr × momentum", "lr × B"),
}
TOGGLES = ("loss", "map")  # BUTTONS that are one control's choices, found beside its label
CONTROLS = SLIDERS + tuple(BUTTONS)

# The server --------------------------------------------------------------------------------------

WRAPPER = """#!/bin/bash
# Written by benchmarks/browser.py as make's $(BIN)/python: make run's `python -m voila` command,
# serving the repository directory; every other use of python passes through.
if [ "$1" != -m ] || [ "$2" != voila ]; then exec PYTHON "$@"; fi
shift 2
args=()
served=
for arg in "$@"; do
  if [ "$arg" = app.ipynb ] && [ -z "$served" ]; then args+=(.); served=1; else args+=("$arg"); fi
done
if [ -z "$served" ]; then
  echo "benchmarks/browser.py: make run's voila command has no app.ipynb argument: $*" >&2
  exit 2
fi
args+=(EXTRA)
printf '%s\\n' "${args[@]}" > "$(dirname "$0")/argv"
env | grep -E '^(JAX|XLA|VOILA|JUPYTER)' | sort > "$(dirname "$0")/env"
exec PYTHON -m voila "${args[@]}"
"""


def write_wrapper(bin_dir: Path, python: Path, extra_args: list[str]) -> Path:
    """bin_dir/python: `python` itself, except that make run's `python -m voila app.ipynb ...`
    serves the repository directory with `extra_args` added, and leaves its arguments and the
    JAX/XLA/VOILA/JUPYTER environment in bin_dir/argv and bin_dir/env."""
    script = WRAPPER.replace("PYTHON", shlex.quote(str(python))).replace(
        "EXTRA", " ".join(shlex.quote(a) for a in extra_args)
    )
    path = bin_dir / "python"
    path.write_text(script)
    path.chmod(0o755)
    return path


@contextlib.contextmanager
def serving(extra_args: list[str], timeout: float):
    """harness.server.Server with make's BIN a folder whose python is `write_wrapper`'s, ready within
    `timeout` s: yields (the server, {"argv": voila's arguments, "env": its JAX/XLA/VOILA/JUPYTER
    variables}); stopped, and the folder removed, on exit."""
    folder = Path(tempfile.mkdtemp(prefix="scanlab-bench-"))
    try:
        bin_dir = folder / "bin"
        bin_dir.mkdir()
        python = Path(sys.executable)  # the environment's (make's VENV: .venv unless set)
        if not python.exists():
            raise BenchError(f"{python} is missing: run `make run` once to set up .venv")
        write_wrapper(bin_dir, python, extra_args)
        server = Server(args=["HOST=127.0.0.1", f"BIN={bin_dir}"], log=folder / "server.log")
        try:
            server.wait_ready(timeout)
            served = {key: (bin_dir / key).read_text().split("\n")[:-1] for key in ("argv", "env")}
            yield server, served
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# The runs ----------------------------------------------------------------------------------------


def open_echo(browser, server: Server, errors: list, timeout: float) -> Mover:
    page = Page(browser, server.url + ECHO, "echo", errors, expected=0)
    page.wait("() => document.querySelector('.echo') !== null", timeout, "the echo label")
    handle = page.page.locator(".widget-slider .noUi-handle")
    if handle.count() != 1:
        raise BenchError(f"echo: expected one slider, found {handle.count()}")
    return Mover(page, handle, "echo", ".echo")


def open_explorer(
    browser,
    server: Server,
    errors: list,
    expected: int,
    timeout: float,
    control: str = "lr",
    model: str = "w",
) -> Mover:
    # Under the w, b model, the same page but for the model: the same move of the same settings.
    parts = ([QUERIES[control]] if control in QUERIES else []) + ([f"model={model}"] if model != "w" else [])
    query = "?" + "&".join(parts) if parts else ""
    page = Page(browser, server.url + APP + query, "explorer", errors, expected)
    wait_for_charts(page, timeout, expected)
    if control in BUTTONS:
        scope = page.page.locator(".widget-toggle-buttons").filter(
            has=page.page.locator("label", has_text=re.compile(f"^{re.escape(control)}$"))
        )
        scope = scope if control in TOGGLES else page.page
        buttons = tuple(scope.get_by_role("button", name=name, exact=True) for name in BUTTONS[control])
        if any(button.count() != 1 for button in buttons):
            raise BenchError(f"explorer: expected one button each of {BUTTONS[control]}")
        return Mover(page, buttons, "charts")
    slider = page.page.locator(".widget-slider").filter(
        has=page.page.locator("label", has_text=re.compile(f"^{re.escape(control)}$"))
    )
    if slider.count() != 1:
        raise BenchError(f"explorer: expected one slider labelled {control!r}, found {slider.count()}")
    return Mover(page, slider.locator(".noUi-handle"), "charts")


def run_moves(browser, server: Server, args, expected: int, errors: list, log) -> dict:
    echo = open_echo(browser, server, errors, args.load_timeout)
    explorer = None
    dead: list[list[str]] = []
    try:
        for attempt in range(args.page_tries):
            explorer = open_explorer(
                browser, server, errors, expected, args.load_timeout, args.control, args.model
            )
            try:
                for _ in range(args.warmup):
                    explorer.move(args.gap, args.timeout, keep=False)
                break
            except DeadCharts as error:
                dead.append(error.missing)
                log(f"!! explorer page {attempt + 1}: {error}")
                explorer.page.close()
                explorer = None
        if explorer is None:
            raise BenchError(
                f"explorer: on {args.page_tries} fresh pages some charts never redrew after a move: {dead}"
            )
        for _ in range(args.warmup):
            echo.move(args.gap, args.timeout, keep=False)
        log(f"moves: {args.moves} per page, interleaved, {args.gap * 1000:.0f} ms apart")
        for _ in range(args.moves):
            echo.move(args.gap, args.timeout)
            explorer.move(args.gap, args.timeout)
        profile = profile_moves(explorer, args) if args.profile else None
        return {
            "echo": summarise_moves(echo.records),
            "explorer": summarise_moves(explorer.records),
            "charts": expected,
            "dead_chart_pages": dead,
            "profile": profile,
            "raw": {"echo": echo.records, "explorer": explorer.records} if args.raw else None,
        }
    finally:
        echo.page.close()
        if explorer is not None:
            explorer.page.close()


def profile_moves(explorer: Mover, args, moves: int = 15) -> dict:
    """Where the page's main thread spends an explorer move: Chromium's sampling profiler over `moves`
    more moves (not among the timed ones)."""
    cdp = explorer.page.context.new_cdp_session(explorer.page.page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 250})
    cdp.send("Profiler.start")
    for _ in range(moves):
        explorer.move(args.gap, args.timeout, keep=False)
    profile = cdp.send("Profiler.stop")["profile"]
    cdp.detach()
    return {"moves": moves, **profile_summary(profile, moves)}


def profile_visit(browser, server: Server, url: str, expected: int, errors: list, timeout: float) -> dict:
    """Where a visit's main thread goes until every chart is drawn (one more visit, not timed)."""
    page = Page(browser, url, "profiled visit", errors, expected, profile=True)
    try:
        page.wait("() => window.__bench.nav.all !== null", timeout, f"{expected} charts", polling=100)
        profile = page.cdp.send("Profiler.stop")["profile"]
        all_ms = page.evaluate("() => window.__bench.nav.all")
    finally:
        page.close()
    # The profile starts just before the navigation, the page's clock at it: close enough to cut there.
    return {"all_charts_ms": all_ms, **profile_summary(profile, until_ms=all_ms)}


def visit(
    browser,
    server: Server,
    url: str,
    name: str,
    expected: int,
    errors: list,
    timeout: float,
    still_timeout: float = STILL_TIMEOUT,
) -> dict:
    """One visit in a fresh context, until every chart is drawn and then every still gone (at most
    `still_timeout` s more: a still left longer is an error, its still_gone_ms None); `expected` 0:
    the echo page, until its slider is seen."""
    before = server.log_text().count(PREHEATED)
    page = Page(browser, url, name, errors, expected)
    ready = "window.__bench.nav.slider !== null" if expected == 0 else "window.__bench.nav.all !== null"
    try:
        try:
            page.wait(
                f"() => {ready} || window.__bench.failed() !== null",
                timeout,
                "its slider" if expected == 0 else f"{expected} charts",
                polling=100,
            )
            page.check_notebook()
        except BenchError as error:
            state, log = page_state(page), server.log_tail(1500)
            raise BenchError(f"{error}\n  {state}\n  server log (end):\n{log}") from None
        wall = (time.perf_counter() - page.started) * 1000
        try:
            page.wait("() => window.__bench.nav.end !== null", still_timeout, "every still gone", polling=100)
        except BenchError as error:
            errors.append(f"{error} after {'its slider' if expected == 0 else 'every chart'} (kept as None)")
        nav = page.evaluate(call(HERE / "browser_visit.js"))
    finally:
        page.close()
    out = analyse_visit(nav)
    out["wall_ms"] = wall
    out["preheated"] = server.log_text().count(PREHEATED) > before
    return out


def run_navigation(browser, server: Server, args, expected: int, errors: list, log) -> dict:
    # The echo page (its slider seen) in turn with the explorer's two URLs, as many visits each:
    # issue 35 times the explorer's first picture and its charts against it.
    urls = {
        "echo": server.url + ECHO,
        "plain": server.url + APP,
        "shared": server.url + APP + "?" + args.query,
    }
    visits: dict[str, list[dict]] = {name: [] for name in urls}
    for i in range(args.visits):
        for name, url in urls.items():
            label = f"visit {name} {i + 1}"
            charts = 0 if name == "echo" else expected
            for attempt in (1, 2):  # one retry: a failed visit is kept among the errors
                server.wait_idle(args.idle_timeout)
                try:
                    result = visit(browser, server, url, label, charts, errors, args.visit_timeout)
                    break
                except BenchError as error:
                    errors.append(f"{label}: FAILED (attempt {attempt}): {str(error).splitlines()[0]}")
                    if attempt == 1:
                        log(f"!! {label}, attempt {attempt}: {error}")
                    if attempt == 2:
                        raise
            visits[name].append(result)
            if name == "echo":
                log(
                    f"visit echo {i + 1}: slider {result['slider_ms'] / 1000:.2f} s, html "
                    f"{result['html_ms'] / 1000:.2f} s"
                    + (", preheated kernel" if result["preheated"] else "")
                )
                continue
            log(
                f"visit {name} {i + 1}: first picture {seconds(result['first_picture_ms'])}, first chart "
                f"{result['first_chart_ms'] / 1000:.2f} s, all {result['all_charts_ms'] / 1000:.2f} s, "
                f"stills gone {seconds(result['still_gone_ms'])}, html {result['html_ms'] / 1000:.2f} s, "
                f"{result['ws_in_mb']:.1f} MB over the websocket, {result['resources']} resources "
                f"{result['resources_mb']:.1f} MB (largest {result['largest_resource']})"
                + (", preheated kernel" if result["preheated"] else "")
            )
    out: dict = {}
    if args.profile:
        server.wait_idle(args.idle_timeout)
        out["profiled_visit"] = profile_visit(
            browser, server, urls["plain"], expected, errors, args.visit_timeout
        )
    for name, runs in visits.items():
        out[name] = summarise_visits(runs)
        out[name]["preheated"] = sum(r["preheated"] for r in runs)
        out[name]["visits"] = runs if args.raw else None
    out["ratios"] = navigation_ratios(out)
    return out


def seconds(ms: float | None) -> str:
    return "none" if ms is None else f"{ms / 1000:.2f} s"


def _shown_sources(text: str) -> list[str]:
    """app.ipynb's code lines in the page's text (none while voila.json strips sources)."""
    notebook = json.loads((ROOT / "app.ipynb").read_text())
    lines = {
        line.strip()
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
        if len(line.strip()) > 12
    }
    return sorted(line for line in lines if line in text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--moves", type=int, default=30, help="timed moves per page (default 30)")
    parser.add_argument("--warmup", type=int, default=4, help="untimed moves per page first (default 4)")
    parser.add_argument(
        "--gap", type=float, default=0.3, help="seconds between moves (default 0.3), plus up to a frame"
    )
    parser.add_argument(
        "--visits", type=int, default=5, help="fresh visits per URL, the echo page too (default 5)"
    )
    parser.add_argument("--query", default=SHARED_QUERY, help=f"the shared link's query ({SHARED_QUERY})")
    parser.add_argument(
        "--voila-args",
        default="",
        help="options after make run's own, e.g. '--VoilaConfiguration.preheat_kernel=False'",
    )
    parser.add_argument("--timeout", type=float, default=20, help="seconds a move may take (default 20)")
    parser.add_argument("--load-timeout", type=float, default=120, help="seconds a page may take (120)")
    parser.add_argument("--visit-timeout", type=float, default=45, help="seconds a visit may take (45)")
    parser.add_argument("--idle-timeout", type=float, default=90, help="seconds for the server to go idle")
    parser.add_argument("--page-tries", type=int, default=3, help="fresh explorer pages before giving up")
    parser.add_argument(
        "--control", choices=CONTROLS, default="lr", help="the explorer's control to move (default lr)"
    )
    parser.add_argument(
        "--model",
        choices=("w", "w,b"),
        default="w",
        help="the explorer's model (default w): the page's link adds model=w,b",
    )
    parser.add_argument("--skip-navigation", action="store_true")
    parser.add_argument(
        "--profile", action="store_true", help="CPU-profile 15 more explorer moves and one more visit (CDP)"
    )
    parser.add_argument("--raw", action="store_true", help="keep every raw move and visit in --json")
    args = parser.parse_args(argv)
    if args.moves < 1 or args.visits < 1 or args.page_tries < 1:
        parser.error("--moves, --visits and --page-tries must be at least 1")

    def log(message: str):
        print(message, file=sys.stderr, flush=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    errors: list[str] = []
    load_start = list(os.getloadavg())
    try:
        from playwright.sync_api import sync_playwright

        if not os.path.exists(CHROMIUM):
            raise BenchError("Chromium is missing: apt-get install chromium (make chromium)")
        chromium_args = list(CHROMIUM_ARGS)
        log("starting the server (make run, serving the repository directory)")
        with serving(shlex.split(args.voila_args), args.load_timeout) as (server, served):
            log(f"  {' '.join(served['argv'])}\n  {' '.join(served['env'])}")
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=chromium_args)
                try:
                    log("warming up: one visit to the explorer")
                    first = Page(browser, server.url + APP, "warm-up visit", errors)
                    try:
                        expected = wait_for_charts(first, args.load_timeout)
                        shown = _shown_sources(first.page.inner_text("body"))
                        if shown:
                            raise BenchError(f"the page shows code ({shown}): is voila.json in force?")
                    finally:
                        first.close()
                    log(f"  {expected} charts; sources stripped (voila.json in force)")
                    moves = run_moves(browser, server, args, expected, errors, log)
                    navigation = (
                        {}
                        if args.skip_navigation
                        else run_navigation(browser, server, args, expected, errors, log)
                    )
                finally:
                    browser.close()
            time.sleep(2)
            kernels = len(server.kernels())
        results = {
            "when": datetime.now().isoformat(timespec="seconds"),
            "load_average": {"start": load_start, "end": list(os.getloadavg())},
            "server": served,
            "query": args.query,
            "control": args.control,
            "moves": moves,
            "ratios": ratios(moves),
            "navigation": navigation,
            "console_errors": errors,
            "errors_while_closing_pages": CLOSE_ERRORS,
            "kernels_at_end": kernels,
        }
        results["summary"] = headline(results)
    except (BenchError, ServerError) as error:
        print(f"benchmarks.browser FAILED: {error}", file=sys.stderr)
        if errors:
            print("console and page errors:\n  " + "\n  ".join(errors[-20:]), file=sys.stderr)
        return 1
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=float) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
