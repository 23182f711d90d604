"""Issue 5's "code beside the charts" and "Copy as script": the source shown is the source that
runs, and the exported script, run on its own, reproduces the explorer's final weights."""

import ast
import base64
import inspect
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from core import data, optimizers, stability, training
from widgets import DEFAULTS, PRESETS, Explorer
from widgets.code import code_view, qualified_name, source_html
from widgets.figures import run_name
from widgets.model import overlaid
from widgets.script import training_script

CASES = {
    "default": DEFAULTS,
    "worked example": PRESETS["worked-example"][1],
    "both losses, large B": PRESETS["sum-vs-mean"][1],
    "ones, mean": DEFAULTS._replace(kind="ones", loss="mean", lr=0.05, N=40, B=7, w0=-3.0, noise=0.0),
    "no noise, negative w": DEFAULTS._replace(true_w=-1.5, noise=0.0, N=300, B=33, seed=17, loss="both"),
    "diverging": PRESETS["diverging"][1],
    # The overlaid run too: an Optax optimizer, a schedule, or both.
    "momentum": DEFAULTS._replace(optimizer="momentum", momentum=0.5, loss="both"),
    "adam": DEFAULTS._replace(optimizer="adam", lr=0.05),
    "nesterov, warmup": DEFAULTS._replace(optimizer="nesterov", schedule="warmup", N=60, B=5, loss="mean"),
    "schedule rescue": PRESETS["schedule-rescue"][1],
    # The w, b model: the carry is the params pytree, with and without an optimizer overlaid.
    "narrow valley": PRESETS["narrow-valley"][1],
    "w, b, mean, ones": DEFAULTS._replace(
        model="w,b", kind="ones", loss="both", b0=-1.0, true_b=2.0, x_mean=0.5
    ),
    "w, b, adam": DEFAULTS._replace(model="w,b", optimizer="adam", lr=0.05, b0=3.0, x_mean=-1.0, true_b=-2.0),
}


@pytest.fixture(scope="module")
def explorer():
    return Explorer(background=False)


@pytest.fixture(scope="module")
def exported(explorer, tmp_path_factory):
    """{case: (settings, histories, what the script printed)}: every script runs in its own process."""
    folder = tmp_path_factory.mktemp("scripts")
    runs = {}
    for name, settings in CASES.items():
        explorer.apply(settings)
        path = folder / f"{name.replace(' ', '_').replace(',', '')}.py"
        path.write_text(explorer.script)
        environment = {**os.environ, "JAX_PLATFORMS": "cpu"}
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        process = subprocess.Popen([sys.executable, str(path)], text=True, env=environment, **pipes)
        runs[name] = (explorer.settings, explorer.result, process)
    results = {}
    for name, (settings, result, process) in runs.items():
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        # "final w = 1.5", or under the w, b model "final w = 1.5, b = 0.25".
        final = r"final w = ([^\s,]+)(?:, b = (\S+))?$"
        printed = re.findall(r"^(sum|mean) loss: " + final, out, re.MULTILINE)
        grown = re.findall(r"^(.+) \((sum|mean) loss\): " + final, out, re.MULTILINE)
        results[name] = (
            settings,
            result,
            {loss: (float(w), b and float(b)) for loss, w, b in printed},
            {loss: (run, (float(w), b and float(b))) for run, loss, w, b in grown},
        )
    return results


def _assert_same_final_weight(final, history, loss):
    w, b = final
    _assert_same_final(w, float(history.params["w"][-1]), history, loss)
    if "b" in history.params:  # the w, b model's: b is printed too
        _assert_same_final(b, float(history.params["b"][-1]), history, loss)
    else:
        assert b is None or b == "", loss


def _assert_same_final(w, explorer_w, history, loss):
    if history.diverged_at is not None and not np.isfinite(explorer_w):
        assert not np.isfinite(w), (loss, w)  # the script diverges too
    else:
        # float32 both; the engine adds a batch by a pairwise tree, the script with jnp.sum
        assert w == pytest.approx(explorer_w, rel=1e-5, abs=1e-6), loss


@pytest.mark.parametrize("case", list(CASES))
def test_the_script_reproduces_the_explorers_final_weight(exported, case):
    settings, result, printed, grown = exported[case]
    expected_losses = ["sum", "mean"] if settings.loss == "both" else [settings.loss]
    assert list(printed) == expected_losses
    for loss, w in printed.items():
        _assert_same_final_weight(w, result.histories[loss], loss)
    # The overlaid run, named as on the trajectory's legend, when the explorer draws one.
    assert list(grown) == (expected_losses if overlaid(settings) else [])
    for loss, (run, w) in grown.items():
        assert run == run_name(settings)
        _assert_same_final_weight(w, result.optimized[loss], loss)


def test_the_seed_example_script_prints_the_seeds_number(exported):
    _, _, printed, _ = exported["worked example"]
    assert printed["sum"][0] == pytest.approx(0.64, rel=1e-6)  # seed 000: 0.4 after one step, 0.64 after two


def test_the_script_needs_only_jax_and_numpy_and_pastes_the_data_generator():
    script = training_script(DEFAULTS)
    imported = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported == {"jax", "numpy"}
    assert inspect.getsource(data._row_normals) in script  # the explorer's own generator, not a copy
    # With another optimizer or a schedule overlaid: Optax as well, and the explorer's own schedules.
    script = training_script(DEFAULTS._replace(schedule="cosine"))
    assert "import optax\n" in script and "Needs only jax, numpy and optax" in script
    assert inspect.getsource(optimizers.schedule_function) in script
    assert inspect.getsource(optimizers.make_optimizer) in script  # the explorer's optimizers, not a copy


@pytest.mark.parametrize(
    "link",
    [
        'http://x/?a="""; import os; os.system("rm -rf /") #',
        "http://x/?a=\\\\\"\\'''\n\r\x00",
        "http://x/?lr=ünïcödé&<script>alert(1)</script>",
        "h" * 5000,
    ],
)
def test_a_hostile_link_stays_inside_the_docstring(link):
    script = training_script(DEFAULTS, link)
    tree = ast.parse(script)  # still valid Python
    assert script.isascii()
    docstring = ast.get_docstring(tree)
    assert docstring.startswith("A ScanLab run") and "Needs only jax and numpy" in docstring
    # only the docstring and the settings come before the imports: nothing ran from the link
    assert isinstance(tree.body[1], ast.Import) and tree.body[1].names[0].name == "jax"
    assert len(docstring) < 1000


def test_the_script_panel_follows_the_controls(explorer):
    explorer.apply(DEFAULTS)
    explorer.script_button.value = False
    assert explorer.script_box.layout.display == "none"
    explorer.script_button.value = True
    assert explorer.script_box.layout.display == "flex"
    assert explorer.script_text.value == explorer.script
    explorer.inputs["lr"].value = 0.0321
    assert "LR = 0.0321" in explorer.script_text.value
    assert explorer.share.value.split("?")[1] in explorer.script_text.value
    encoded = re.search(r"base64,([A-Za-z0-9+/=]+)\"", explorer.script_links.value).group(1)
    assert base64.b64decode(encoded).decode("ascii") == explorer.script_text.value
    explorer.script_button.value = False
    assert explorer.script_box.layout.display == "none"


def test_source_html_is_the_functions_own_source_highlighted():
    html = source_html(training._scan_final)  # jitted: unwrapped to the Python function
    assert qualified_name(training._scan_final) == "core.training._scan_final"
    text = re.sub(r"<[^>]+>", "", html).replace("&quot;", '"').replace("&#39;", "'").replace("&gt;", ">")
    assert inspect.getsource(inspect.unwrap(training._scan_final)).strip() in text.replace("&amp;", "&")
    assert "<span style=" in html  # highlighted, with inline styles


def test_code_view_sends_the_source_only_when_opened():
    view = code_view([stability.stability_map, stability._map_kernel])
    assert view.selected_index is None and view.children[0].value == ""
    assert view.get_title(0) == "Code: core.stability.stability_map, core.stability._map_kernel"
    view.selected_index = 0
    text = re.sub(r"<[^>]+>", "", view.children[0].value)
    assert "def stability_map(" in text and "def _map_kernel(" in text


LESSON = ["lesson_history", "train_step", "batch_loss"]
ENGINE = ["_histories_kernel", "batch_loss_and_grads", "example_loss"]


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (
            ("trajectory", "loss"),
            [("the loop the lesson teaches", LESSON), ("how the explorer makes it fast", ENGINE)],
        ),
        (("divergence",), [("the theory", ["step_factors", "critical_lrs", "_critical"])]),
        (
            ("stability",),
            [
                ("the loop the lesson teaches", ["final_weights", *LESSON]),
                (
                    "how the explorer makes it fast",
                    [
                        "stability_map",
                        "_map_kernel",
                        "momentum_map",
                        "_momentum_kernel",
                        "_feature_sums",
                        "_batch_loss",
                        "_run",
                    ],
                ),
            ],
        ),
    ],
)
def test_every_chart_group_shows_the_lesson_first_then_the_engine(explorer, names, expected):
    # A learner opening the code finds the loop the lesson teaches; the engine's tricks come second.
    view = explorer.show(*names)
    # The run's words stand above the trajectory's row (widgets.layout.words), and the page's hidden
    # Access view last (widgets/access.py): not a chart or code.
    parts = [child for child in view.children if child is not explorer.access]
    charts, *codes = [child for child in parts if "scanlab-words" not in child._dom_classes]
    assert len(charts.children) == len(names) and len(codes) == len(expected)
    for code, (title, functions) in zip(codes, expected, strict=True):
        assert code.get_title(0) == f"Code: {title} ({', '.join(functions)})"
        assert code.selected_index is None  # closed until opened
        code.selected_index = 0
        text = re.sub(r"<[^>]+>", "", code.children[0].value)
        shown = re.findall(r"(?<! )def (\w+)\(", text)  # top-level functions: a nested def is indented
        assert shown == functions
