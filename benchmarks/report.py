"""Every benchmark, each in its own process, summed up as one markdown table against the targets.

    JAX_PLATFORMS=cpu .venv/bin/python -m benchmarks.report [--browser] [--out PATH] [--json-dir DIR]

Runs benchmarks.engine, benchmarks.explorer, benchmarks.explore and benchmarks.naive (and, with
--browser, which needs Chromium, benchmarks.browser and benchmarks.memory) with `--json` into a
temporary folder (or DIR), and prints the table on stdout (the benchmarks' own output goes to
stderr). --out also writes the table to PATH. This module imports neither JAX nor the project and
measures nothing itself. Exits non-zero when a benchmark failed or a naive check disagreed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from benchmarks.browser_report import (
    ALL_CHARTS_S,
    FIRST_PICTURE_RATIO,
    LIVE_CHARTS_RATIO,
    MAP_CONTROLS,
    MAP_RATIO,
    SETTLED_RATIO,
    VIEW_CONTROLS,
    VIEW_RATIO,
)

ROOT = Path(__file__).resolve().parent.parent

# The targets the table is read against (docs/performance.md).
CALLBACK_MS = 5.0  # kernel-side callback, median, at N=1000, B=512
PYTREE_RATIO = 1.25  # the same move under model=w,b, over the w model's, in the same run (issue 33)
# Issue 35's targets are benchmarks.browser_report's (the page's own report prints them too).
FIRST_CHART_S = 2.0
DRAG_RATE = 0.5  # a drag: the trajectory's redraws per second over the echo label's (issue 35)
DRAG_LATE_MS = 100.0  # and settled within this of the echo after the mouse goes up
# The controls benchmarks.browser times after lr (which also times the first visits), each against
# the echo in the same run. N and w0 recompute the stability map, and `map` switches it (no line
# chart changes: it has the map's target alone); momentum is moved with the momentum optimizer
# overlaid (benchmarks.browser.QUERIES).
OTHER_CONTROLS = ("N", "B", "w0", "loss", "preset", "momentum", "map")
PYTREE_CONTROLS = ("lr", "B", "w0")  # moved again under model=w,b (issue 33: <= 1.25x the w model's)
MAP_MS = 150.0  # stability map recompute, 64 x 32 at N=200
# explore(fn): a move with a right jitted function, over the lesson's loop alone (issue 51)
EXPLORE_RATIO = 1.5
KERNEL_RSS_MB = 250.0
COMPILE_TESTS = (
    "tested: tests/test_core_dtypes_and_compiles.py (also test_explorer.py, test_core_stability.py)"
)


def machine() -> dict:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kib = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration):
        mem_kib = 0
    versions = {}
    for package in ("jax", "jaxlib", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "ram_gib": mem_kib / 2**20,
        "python": platform.python_version(),
        **versions,
        "jax_platforms": os.environ.get("JAX_PLATFORMS", "(unset)"),
        "load": os.getloadavg()[0],  # other work on the machine skews every timing
    }


def run_benchmark(name: str, folder: Path, env: dict, *extra: str, tag: str = "") -> tuple[dict | None, int]:
    """`python -m benchmarks.NAME --json folder/NAME[TAG].json EXTRA...`; its JSON (None if none) and
    exit code."""
    path = folder / f"{name}{tag}.json"
    print(f"== benchmarks.{name} {' '.join(extra)}", file=sys.stderr, flush=True)
    code = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--json", str(path), *extra],
        cwd=ROOT,
        env=env,
        stdout=sys.stderr,
        check=False,
    ).returncode
    return (json.loads(path.read_text()) if path.exists() else None), code


def dig(data, *path):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def flatten(data, prefix="") -> list[tuple[str, float]]:
    """Numeric leaves of a JSON object as (dotted path, value); lists are skipped."""
    if isinstance(data, dict):
        return [pair for key, value in data.items() for pair in flatten(value, f"{prefix}{key}.")]
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        return [(prefix[:-1], float(data))]
    return []


def verdict(value, target) -> str:
    if value is None:
        return "-"
    return "yes" if value <= target else "**no**"


def table(info: dict, results: dict, codes: dict) -> str:
    rows = []  # (figure, value, target, met, source)

    def add(figure, value="", target="", met="", source=""):
        rows.append((figure, value, target, met, source))

    def missing(name):
        code = codes.get(name)
        return "not run (--browser)" if code is None else f"**failed** (exit {code}, no JSON)"

    add("date (UTC)", info["date"])
    add(
        "machine",
        f"{info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
        f"{info['ram_gib']:.1f} GiB RAM; load average {info['load']:.1f} at the start",
    )
    add(
        "software",
        f"Python {info['python']}, jax {info['jax']}, jaxlib {info['jaxlib']}, numpy {info['numpy']}; "
        f"JAX_PLATFORMS={info['jax_platforms']}",
    )

    # The targeted figures first.
    explorer = results.get("explorer")
    for control, data in (dig(explorer, "callback_ms") or {}).items():
        add(
            f"callback, a move of {control}, N=1000, B=512: median (p95)",
            f"{data['median']:.1f} ms ({data['p95']:.1f})",
            f"median <= {CALLBACK_MS:g} ms",
            verdict(data["median"], CALLBACK_MS),
            "benchmarks.explorer",
        )
    preset = dig(explorer, "preset_callback_ms")
    if preset:
        add(
            "callback, a preset click (Oscillating, Smooth convergence in turn): median (p95)",
            f"{preset['median']:.1f} ms ({preset['p95']:.1f})",
            "",
            "",
            "benchmarks.explorer",
        )
    for control, data in (dig(explorer, "pytree_callback_ms") or {}).items():
        add(
            f"callback under model=w,b, a move of {control}: median (p95), against the w model's",
            f"{data['median']:.1f} ms ({data['p95']:.1f}), {data['ratio']:.2f}x",
            f"<= {PYTREE_RATIO:g}x",
            verdict(data["ratio"], PYTREE_RATIO),
            "benchmarks.explorer",
        )
    if explorer is None:
        add(
            "callback at N=1000, B=512",
            missing("explorer"),
            f"median <= {CALLBACK_MS:g} ms",
            "",
            "benchmarks.explorer",
        )
    explore = results.get("explore")
    for control, data in (dig(explore, "moves") or {}).items():
        first = data.get("first_visit")
        add(
            f"explore(fn), a move of {control}, N={explore['N']}, B={explore['B']}: median (p95), "
            "against the lesson's loop alone"
            + (f"; at a value not drawn before {first['median']:.0f} ms" if first else ""),
            f"{data['yours']['median']:.1f} ms ({data['yours']['p95']:.1f}), {data['ratio']:.2f}x",
            f"<= {EXPLORE_RATIO:g}x",
            verdict(data["ratio"], EXPLORE_RATIO),
            "benchmarks.explore",
        )
    if explore is None:
        add("explore(fn), a move", missing("explore"), f"<= {EXPLORE_RATIO:g}x", "", "benchmarks.explore")
    add("XLA compiles after warm-up", COMPILE_TESTS, "0, exact", "tested", "pytest")

    web = results.get("browser")
    ratios = dig(web, "ratios") or {}
    ratio = ratios.get("ratio")  # the target's; the others below it
    if web is None:
        add(
            "slider to settled charts / bare echo",
            missing("browser"),
            f"<= {SETTLED_RATIO:g}x",
            "",
            "benchmarks.browser",
        )
        add(
            "first chart after navigation",
            missing("browser"),
            f"<= {FIRST_CHART_S:g} s",
            "",
            "benchmarks.browser",
        )
    elif isinstance(ratio, dict) and "median" in ratio:
        for control in ("lr", *OTHER_CONTROLS):
            moved = web if control == "lr" else results.get(f"browser {control}")
            if moved is None:
                add(
                    f"a move of {control} / bare echo",
                    missing(f"browser {control}"),
                    "",
                    "",
                    "benchmarks.browser",
                )
                continue
            echo = dig(moved, "moves", "echo", "framed") or {}
            measures = (
                []
                if control == "map"
                else [
                    (
                        "lines",
                        "lines_framed",
                        "line charts settled",
                        VIEW_RATIO if control in VIEW_CONTROLS else SETTLED_RATIO,
                    )
                ]
            )
            if control in MAP_CONTROLS:
                measures.append(("ratio", "framed", "the stability map current too", MAP_RATIO))
            for key, field, what, target in measures:
                value = dig(moved, "ratios", key) or {}
                app = dig(moved, "moves", "explorer", field) or {}
                if "median" not in value:
                    continue
                shown = [
                    f"{value[stat]:.2f}x ({app.get(stat, math.nan):.0f} / {echo.get(stat, math.nan):.0f} ms)"
                    if math.isfinite(value[stat])
                    else "no frame within the wait"
                    for stat in ("median", "p95")
                ]
                add(
                    f"a move of {control} until {what} / bare echo, to the painting frame: median; p95",
                    "; ".join(shown),
                    f"<= {target:g}x",
                    verdict(max(value["median"], value["p95"]), target),
                    f"benchmarks.browser --control {control}",
                )
        for key, words in (
            ("mutation", "the same, each to its last change before that frame (a mutation of the page)"),
            ("events", "the charts' last drawing event (in the frame after drawing) / the echo's label"),
            ("floor", "the echo's frame's callbacks / its label: the ratio above, charts drawn at no cost"),
        ):
            if isinstance(ratios.get(key), dict) and "median" in ratios[key]:
                add(
                    f"{words}: median (p95)",
                    f"{ratios[key]['median']:.2f}x ({ratios[key]['p95']:.2f}x)",
                    "(not the target's measure)",
                    "",
                    "benchmarks.browser",
                )
        for name, label in (("plain", "plain URL"), ("shared", "shared link")):
            for key, what in (("first_chart_ms", "first chart"), ("all_charts_ms", "all charts")):
                s = dig(web, "navigation", name, key)
                if not isinstance(s, dict) or "median" not in s:
                    continue
                target = FIRST_CHART_S if key == "first_chart_ms" else ALL_CHARTS_S
                add(
                    f"{what} after navigation, {label}, nothing cached: median (min-max)",
                    f"{s['median'] / 1e3:.2f} s ({s['min'] / 1e3:.2f}-{s['max'] / 1e3:.2f})",
                    f"<= {target:g} s",
                    verdict(s["median"] / 1e3, target),
                    "benchmarks.browser",
                )
        slider = dig(web, "navigation", "echo", "slider_ms") or {}
        for name, label in (("plain", "plain URL"), ("shared", "shared link")):
            for key, field, what, target in (
                ("first_picture", "first_picture_ms", "first picture (a still)", FIRST_PICTURE_RATIO),
                ("all_charts", "all_charts_ms", "every live chart", LIVE_CHARTS_RATIO),
            ):
                value = dig(web, "navigation", "ratios", name, key) or {}
                app = dig(web, "navigation", name, field) or {}
                if "median" not in value or "median" not in slider:
                    continue
                shown = [
                    f"{value[stat]:.2f}x ({app.get(stat, math.nan) / 1e3:.2f} / {slider[stat] / 1e3:.2f} s)"
                    for stat in ("median", "p95")
                ]
                worst = max(value["median"], value["p95"])
                add(
                    f"{what} after navigation, {label} / the echo page's slider: median; p95",
                    "; ".join(shown),
                    f"<= {target:g}x",
                    verdict(worst, target) if math.isfinite(worst) else "-",
                    "benchmarks.browser",
                )
        errors = dig(web, "console_errors")
        if isinstance(errors, list):
            add(
                "browser console and page errors",
                str(len(errors)),
                "0",
                verdict(len(errors), 0),
                "benchmarks.browser",
            )
    else:  # a layout this report does not know: every numeric figure, as the browser wrote it
        for path, value in flatten(web)[:80]:
            add(f"browser: {path}", f"{value:.4g}", "", "", "benchmarks.browser")

    naive = results.get("naive")
    map_row = next((r for r in dig(naive, "rows") or [] if r["row"].startswith("core.stability_map")), None)
    if map_row:
        add(
            "stability map recompute, 64 x 32, N=200: median (min-max)",
            f"{map_row['median_ms']:.1f} ms ({map_row['min_ms']:.1f}-{map_row['max_ms']:.1f})",
            f"<= {MAP_MS:g} ms",
            verdict(map_row["median_ms"], MAP_MS),
            "benchmarks.naive",
        )
    else:
        add(
            "stability map recompute, 64 x 32, N=200",
            missing("naive"),
            f"<= {MAP_MS:g} ms",
            "",
            "benchmarks.naive",
        )
    memory = results.get("memory")
    kernels = (memory or {}).get("kernels") or []
    if kernels:
        rss = max(k["rss"] for k in kernels)
        add(
            f"dashboard kernel RSS, largest of {len(kernels)} (anonymous; PSS)",
            f"{rss:.0f} MB ({max(k['anonymous'] for k in kernels):.0f}; "
            f"{max(k['pss'] for k in kernels):.0f})",
            f"<= {KERNEL_RSS_MB:g} MB",
            verdict(rss, KERNEL_RSS_MB),
            "benchmarks.memory",
        )
    else:
        add("dashboard kernel RSS", missing("memory"), f"<= {KERNEL_RSS_MB:g} MB", "", "benchmarks.memory")

    for control in PYTREE_CONTROLS:
        mine = dig(results.get(f"browser {control} w,b"), "moves", "explorer", "lines_framed", "median")
        base = web if control == "lr" else results.get(f"browser {control}")
        theirs = dig(base, "moves", "explorer", "lines_framed", "median")
        if mine is None or theirs is None:
            continue
        add(
            f"a move of {control} under model=w,b, line charts settled: median, against the w model's",
            f"{mine:.0f} ms / {theirs:.0f} ms ({mine / theirs:.2f}x)",
            f"<= {PYTREE_RATIO:g}x",
            verdict(mine / theirs, PYTREE_RATIO),
            "benchmarks.browser --model w,b",
        )
    drag = results.get("drag")
    for control, data in (dig(drag, "controls") or {}).items():
        add(
            f"a {drag['seconds']:g} s drag of {control}: trajectory redraws/s against the echo's label",
            f"{data['explorer']['rate']:.1f} / {data['echo']['rate']:.1f} ({data['rate_ratio']:.2f}x)",
            f">= {DRAG_RATE:g}x",
            verdict(-data["rate_ratio"], -DRAG_RATE),
            "benchmarks.drag",
        )
        add(
            f"a drag of {control}: settled after the mouse went up, against the echo",
            f"{data['explorer']['settle']:.0f} ms / {data['echo']['settle']:.0f} ms "
            f"({data['settle_late_ms']:+.0f} ms)",
            f"<= +{DRAG_LATE_MS:g} ms",
            verdict(data["settle_late_ms"], DRAG_LATE_MS),
            "benchmarks.drag",
        )

    # The other figures.
    engine = results.get("engine")
    if engine is None:
        add("engine", missing("engine"), "", "", "benchmarks.engine")
    else:
        capacity = "x".join(str(v) for v in engine["capacity"])
        add(
            f"engine ({capacity}) warm-up (XLA compile)",
            f"{engine['warm_up_s']:.2f} s ({engine['warm_up_compile_s']:.2f})",
            source="benchmarks.engine",
        )
        for r in engine["runs"]:
            run, exact = r["engine_run_ms"], r["training_history_ms"]
            add(
                f"engine.run N={r['N']}, B={r['B']}, {r['loss']}: median (p95); exact-shape training_history",
                f"{run['median']:.2f} ms ({run['p95']:.2f}); {exact['median']:.2f} ms ({exact['p95']:.2f})",
                source="benchmarks.engine",
            )
        add(
            "engine.pad, N=1000, B=512: median",
            f"{engine['pad_ms_median_1000x512']:.2f} ms",
            source="benchmarks.engine",
        )
    if explorer is not None:
        add("Explorer() with engine warm-up", f"{explorer['explorer_s']:.2f} s", source="benchmarks.explorer")
    if naive is None:
        add("naive comparisons", missing("naive"), "", "", "benchmarks.naive")
    else:
        for r in naive["rows"]:
            runs = f"{r['n']} runs" if r["n"] > 1 else "1 run"
            add(
                f"{r['row'].strip()}: median (min-max), {runs}",
                f"{r['median_ms']:.2f} ms ({r['min_ms']:.2f}-{r['max_ms']:.2f}); "
                f"{r['ratio']:.2f}x {r['reference']}",
                source="benchmarks.naive",
            )
        for note in naive.get("notes", []):
            add("note", note, source="benchmarks.naive")
        bad = [c["check"] for c in naive["checks"] if not c["ok"]]
        add(
            "naive paths agree with the engine (final w rtol 1e-4, every step, map cells)",
            f"{len(naive['checks']) - len(bad)} of {len(naive['checks'])} checks"
            + (": **failed** " + "; ".join(bad) if bad else ""),
            "all",
            "yes" if not bad else "**no**",
            "benchmarks.naive",
        )
    for name, code in codes.items():
        if code not in (0, None) and results.get(name) is not None:
            add(f"benchmarks.{name} exit code", str(code), "0", "**no**", f"benchmarks.{name}")

    cells = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    lines = ["| figure | value | target | met | source |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in cells]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--browser", action="store_true", help="also run benchmarks.browser (a few minutes)")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument(
        "--json-dir", type=Path, help="keep the benchmarks' JSON here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)

    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    info = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), **machine()}
    names = ["engine", "explorer", "explore", "naive"]
    names += ["browser", "memory", "drag"] if args.browser else []
    results, codes = {}, {}
    with tempfile.TemporaryDirectory(prefix="scanlab-bench-") as temporary:
        folder = args.json_dir or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            results[name], codes[name] = run_benchmark(name, folder, env)
        if args.browser:  # every other control, its moves only: the visits were timed with lr's
            for control in OTHER_CONTROLS:
                key = f"browser {control}"
                extra = ("--control", control, "--skip-navigation")
                results[key], codes[key] = run_benchmark("browser", folder, env, *extra, tag=f"-{control}")
            for control in PYTREE_CONTROLS:  # and under the w, b model, against the same moves of w
                key = f"browser {control} w,b"
                extra = ("--control", control, "--skip-navigation", "--model", "w,b")
                results[key], codes[key] = run_benchmark("browser", folder, env, *extra, tag=f"-{control}-wb")
    text = table(info, results, codes)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    failed = any(code != 0 for code in codes.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
