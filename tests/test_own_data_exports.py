"""Data of rows in the exports: "Copy as script" holds the rows (or reads them from the data CSV
beside it) and, run on its own, ends where the explorer's run ends; "Export CSV" offers the rows
too, and a re-upload of that file gives the same table and so the same run."""

import ast
import base64
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import core
from widgets.export import ExportBar, data_csv, run_csv
from widgets.model import Model, overlaid
from widgets.script import DATA_FILENAME, EMBEDDED_ROWS, training_script
from widgets.settings import DEFAULTS, leaves, of_rows

# Values that repr writes with 17 digits, and names a script must keep in ASCII on a comment line.
SMALL = core.parse_csv(
    "hours;score €\n"
    + "".join(f"{0.1 * k + 1 / 3!r};{(-1) ** k * 2.0 / 3 + k}\n".replace(".", ",") for k in range(12))
)
_RNG = np.random.default_rng(5)
_BIG_X, _NOISE = _RNG.normal(2.0, 0.5, 6_000).tolist(), _RNG.normal(size=6_000).tolist()
BIG = core.parse_csv(
    'größe,"gewicht """""" kg"\n'
    + "".join(f"{x!r},{0.5 * x + 0.1 * e!r}\n" for x, e in zip(_BIG_X, _NOISE, strict=True))
)

ENGEL = DEFAULTS._replace(kind="engel")
CASES = {
    "engel, w": (ENGEL._replace(loss="both"), None),
    "engel, w, standardized": (ENGEL._replace(standardize=True, loss="mean", lr=0.05, N=10, B=20), None),
    "engel, w, replace": (ENGEL._replace(replace=True, N=40, B=16, seed=7), None),
    "engel, w,b": (ENGEL._replace(model="w,b", loss="both", b0=0.5), None),
    "engel, w,b, standardized, replace": (
        ENGEL._replace(model="w,b", standardize=True, replace=True, N=50, B=10, loss="both"),
        None,
    ),
    "engel, w,b, momentum": (ENGEL._replace(model="w,b", optimizer="momentum", momentum=0.5), None),
    "engel, w, adam, standardized": (ENGEL._replace(optimizer="adam", lr=0.05, standardize=True), None),
    "own, w,b": (DEFAULTS._replace(kind="own", model="w,b", N=3, B=4, seed=3, loss="both"), SMALL),
    "own, w, replace": (DEFAULTS._replace(kind="own", N=10, B=5, replace=True, standardize=True), SMALL),
    "own, 6,000 rows, w,b": (
        DEFAULTS._replace(kind="own", model="w,b", N=40, B=32, seed=11, loss="both", lr=0.002),
        BIG,
    ),
}
# "final w = 1.5", or under the w, b model "final w = 1.5, b = 0.25".
_FINAL = r"final w = ([^\s,]+)(?:, b = (\S+))?$"


@pytest.fixture(scope="module")
def model():
    return Model()


def _run(model, settings, table):
    """(fitted settings, the explorer's result) of `settings` on the example data or on `table`."""
    if table is not None:
        model.rows.use(table)
    fitted, _ = model.rows.fit(settings)
    assert fitted.kind == settings.kind
    return fitted, model.compute(fitted)


@pytest.fixture(scope="module")
def exported(model, tmp_path_factory):
    """{case: (settings, result, script, what the script printed)}: each in its own process and folder."""
    runs = {}
    for name, (settings, table) in CASES.items():
        fitted, result = _run(model, settings, table)
        folder = tmp_path_factory.mktemp(re.sub(r"\W+", "_", name))
        script = training_script(fitted, "http://x/?kind=engel", table=model.rows.table(fitted.kind))
        (folder / "scanlab_run.py").write_text(script)
        if fitted.kind == "own" and table.x.size > EMBEDDED_ROWS:
            (folder / DATA_FILENAME).write_text(data_csv(table), encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, "scanlab_run.py"],
            cwd=folder,
            text=True,
            env={**os.environ, "JAX_PLATFORMS": "cpu"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        runs[name] = (fitted, result, script, process)
    results = {}
    for name, (fitted, result, script, process) in runs.items():
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        printed = re.findall(r"^(sum|mean) loss: " + _FINAL, out, re.MULTILINE)
        grown = re.findall(r"^(.+) \((sum|mean) loss\): " + _FINAL, out, re.MULTILINE)
        results[name] = (
            fitted,
            result,
            script,
            {loss: (float(w), b and float(b)) for loss, w, b in printed},
            {loss: (float(w), b and float(b)) for _, loss, w, b in grown},
        )
    return results


def _assert_same_final(final, history, loss):
    w, b = final
    # float32 both; the engine adds a batch by a pairwise tree, the script with jnp.sum
    assert w == pytest.approx(float(history.params["w"][-1]), rel=1e-5, abs=1e-6), loss
    if "b" in history.params:
        assert b == pytest.approx(float(history.params["b"][-1]), rel=1e-5, abs=1e-6), loss
    else:
        assert b == "", loss


@pytest.mark.parametrize("case", list(CASES))
def test_the_script_of_data_of_rows_ends_where_the_explorer_does(exported, case):
    settings, result, _, printed, grown = exported[case]
    losses = ["sum", "mean"] if settings.loss == "both" else [settings.loss]
    assert list(printed) == losses
    for loss, final in printed.items():
        assert np.all(np.isfinite(final[0])), "a case that diverges would compare nothing"
        _assert_same_final(final, result.histories[loss], loss)
    assert list(grown) == (losses if overlaid(settings) else [])
    for loss, final in grown.items():
        _assert_same_final(final, result.optimized[loss], loss)


def test_the_cases_cover_the_models_the_flags_and_both_ways_of_giving_the_rows(exported):
    settings = [case[0] for case in exported.values()]
    assert {(s.kind, leaves(s), s.standardize) for s in settings} >= {
        ("engel", m, f) for m in (("w",), ("w", "b")) for f in (False, True)
    }
    assert any(s.replace and s.kind == "engel" and s.N * s.B > 235 for s in settings)
    assert any(s.replace and s.kind == "own" and s.N * s.B > SMALL.x.size for s in settings)


SETTINGS = ("X", "Y", "STANDARDIZE", "REPLACE", "B0")


def test_the_script_holds_the_rows_in_the_files_order_and_says_what_they_are(exported):
    _, _, script, _, _ = exported["engel, w,b"]
    tree = ast.parse(script)
    assert script.isascii()
    values = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in SETTINGS
    }
    example = core.load_example()
    np.testing.assert_array_equal(values["X"], example.x)  # repr: exactly the explorer's float64
    np.testing.assert_array_equal(values["Y"], example.y)
    assert values["STANDARDIZE"] is False and values["REPLACE"] is False and values["B0"] == 0.5
    for absent in ("TRUE_W", "NOISE", "TRUE_B", "X_MEAN", "KIND", "_row_normals"):
        assert absent not in script  # generated data's settings mean nothing here
    assert core.EXAMPLE_TITLE in script and "core/datasets/README.md" in script and "public domain" in script
    assert "x is 'income' and y is 'food'" in script
    assert "seed 000" not in script.lower()
    # A visitor's names stay in ASCII on their comment line.
    _, _, own, _, _ = exported["own, w,b"]
    assert own.isascii() and "x is 'hours' and y is 'score \\u20ac'" in own
    assert core.EXAMPLE_TITLE not in own and "DATA_FILE" not in own


def test_a_script_of_more_rows_than_it_holds_reads_the_data_csv_it_names(exported):
    _, _, script, _, _ = exported["own, 6,000 rows, w,b"]
    assert BIG.x.size > EMBEDDED_ROWS
    assert script.isascii()
    assert f'DATA_FILE = "{DATA_FILENAME}"' in script and "X = [" not in script
    assert f"Reads its data from {DATA_FILENAME}" in ast.get_docstring(ast.parse(script))
    assert "Export CSV" in script
    assert len(script) < 10_000


def test_the_script_of_data_of_rows_needs_their_table_and_generated_data_ignore_it():
    with pytest.raises(ValueError, match="needs their table"):
        training_script(ENGEL)
    assert training_script(DEFAULTS, table=SMALL) == training_script(DEFAULTS)


def test_hostile_names_stay_inside_their_comment():
    table = core.parse_csv(b'"a""""""\\",\'\'\'b\n1,2\n3,5\n')
    assert table.x_name == 'a"""\\'
    script = training_script(DEFAULTS._replace(kind="own", N=1, B=2), table=table)
    assert script.isascii()
    tree = ast.parse(script)
    assert isinstance(tree.body[1], ast.Import) and tree.body[1].names[0].name == "jax"


# Export CSV: the rows as a file that reads back to the same table.


def _assert_same_histories(first, second):
    for loss in ("sum", "mean"):
        a, b = first.histories[loss], second.histories[loss]
        assert list(a.params) == list(b.params)
        for name in a.params:
            np.testing.assert_array_equal(a.params[name], b.params[name], err_msg=name)
            np.testing.assert_array_equal(a.grads[name], b.grads[name], err_msg=name)
        np.testing.assert_array_equal(a.losses, b.losses)


@pytest.mark.parametrize(
    "content",
    [
        "x,y\n1,2\n2,3.5\n4,4.25\n-1e-3,7\n0.1,0.2\n",
        SMALL,  # from ";" and decimal commas, names with a non-ASCII character
        "1.5\t2\n2.5\t4.75\n3.5\t1e3\n",  # no header: "column 1" and "column 2"
        "label,a,b,c\nfirst,1,2,3\nsecond,4,5.5,6\nthird,7.25,8,0.5\n",  # x and y chosen
    ],
    ids=["commas", "semicolons", "no header", "chosen columns"],
)
def test_the_data_csv_reads_back_to_the_same_table_and_the_same_run(model, content):
    table = content if isinstance(content, core.Table) else core.parse_csv(content.encode())
    if table.names[:2] == ("a", "b"):
        table = core.parse_csv(content.encode(), x_column="c", y_column="a")
    settings = DEFAULTS._replace(kind="own", model="w,b", N=3, B=2, loss="both", replace=True)
    settings, first = _run(model, settings, table)
    again = core.parse_csv(data_csv(table).encode("utf-8"))
    np.testing.assert_array_equal(again.x, table.x)
    np.testing.assert_array_equal(again.y, table.y)
    assert (again.x_name, again.y_name) == (table.x_name, table.y_name)
    assert data_csv(again) == data_csv(table)
    _, second = _run(model, settings, again)
    _assert_same_histories(first, second)


def test_the_example_data_csv_gives_the_example_run(model):
    example = core.load_example()
    text = data_csv(example)
    assert text.startswith("income,food\n") and text.count("\n") == 236
    again = core.parse_csv(text.encode())
    np.testing.assert_array_equal(again.x, example.x)
    np.testing.assert_array_equal(again.y, example.y)
    settings = ENGEL._replace(model="w,b", standardize=True, loss="both")
    fitted, first = _run(model, settings, None)
    _, second = _run(model, fitted._replace(kind="own"), again)
    _assert_same_histories(first, second)


def _decoded(anchor: str) -> str:
    return base64.b64decode(re.search(r"base64,([A-Za-z0-9+/=]+)\"", anchor).group(1)).decode("utf-8")


def test_export_csv_offers_the_rows_beside_the_runs_numbers(model):
    bar = ExportBar()
    fitted, result = _run(model, DEFAULTS._replace(kind="own", N=2, B=5), SMALL)
    assert of_rows(fitted)
    bar.offer_csv(result)
    (only,) = re.findall(r"<a [^>]+>", bar.links.value)
    assert _decoded(only) == run_csv(result)
    bar.offer_csv(result, table=SMALL)
    run, rows = re.findall(r"<a [^>]+>", bar.links.value)
    assert _decoded(run) == run_csv(result)  # the run's CSV as it was
    assert f'download="{DATA_FILENAME}"' in rows
    assert _decoded(rows) == data_csv(SMALL)
    assert data_csv(SMALL).splitlines()[0] == "hours,score €"
