"""ScanLab as a package: `python -m build` makes an sdist and a wheel; the wheel, installed into a
fresh virtual environment and used from another folder, imports, reads its shipped files (Plotly.js,
the example data), writes the lesson and the exercise (`python -m widgets.notebooks`), and both run
top to bottom through nbclient. Another distribution's `core` is named, not obeyed.

The environment gets the wheel alone (`pip install --no-deps`); its dependencies come from the test
environment's site-packages through a .pth file, since a fresh download and install of JAX and
Voila takes minutes, and `pip check` then shows that the wheel's declared dependencies are met."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest

from harness.support.kernels import KERNEL_PROBE, STOCK_KERNEL

ROOT = Path(__file__).resolve().parent.parent


def run(*args, cwd, check=True, **kwargs):
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)
    if check:
        assert result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel `python -m build` makes of this checkout (the wheel from the sdist),
    built from a copy: setuptools writes scanlab.egg-info into the folder it builds, and one left in
    the checkout is a distribution on every test's sys.path after (the class report's guard once
    refused JAX's read of its entry points)."""
    out, source = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("source") / "scanlab"
    left_out = (".git", ".venv*", ".cache", "*.egg-info", "build", "dist", "__pycache__", ".*_cache")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*left_out))
    run(sys.executable, "-m", "build", "--outdir", str(out), str(source), cwd=out)
    [sdist] = out.glob("scanlab-*.tar.gz")
    [wheel] = out.glob("scanlab-*-py3-none-any.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory):
    """A fresh virtual environment with the wheel installed; returns its python."""
    place = tmp_path_factory.mktemp("venv")
    run(sys.executable, "-m", "venv", str(place / "env"), cwd=place)
    python = place / "env" / "bin" / "python"
    purelib = run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=place)
    # Appended after the environment's own folder: its wheel comes first, the test tools' deps after.
    (Path(purelib.stdout.strip()) / "scanlab-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    run(str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(dist[1]), cwd=place)
    return python


def test_the_wheel_holds_the_packages_their_files_and_the_notebooks(dist):
    _, wheel = dist
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "widgets/vendor/plotly.js/plotly-cartesian.min.js.gz",
        "widgets/vendor/plotly.js/LICENSE",
        "widgets/surface.js",
        "core/datasets/engel.csv",
        "core/datasets/README.md",
        "core/exercises/__init__.py",
        "widgets/hood/__init__.py",
    ):
        assert needed in names, needed
    for notebook in ("app.ipynb", "exercise.ipynb"):  # copies, not links
        assert zipfile.ZipFile(wheel).read(f"widgets/notebooks/{notebook}") == (ROOT / notebook).read_bytes()
    # The repository's tools, tests and server are not the package's.
    assert not {name.split("/")[0] for name in names} & {"tests", "harness", "serving", "tools", "benchmarks"}


# Run by the environment's python in a folder of its own: what a course's user does first.
USE = """
import json, sys
import core, widgets
from widgets import Explorer, exercise
from widgets.controls import KIND_LABELS

explorer = Explorer(background=False)
kinds = {}
for label, kind in KIND_LABELS:
    explorer.inputs["kind"].value = kind
    if kind == "own":  # what the page's file control sends for a chosen file (widgets/upload.js)
        content = b"x,y\\n" + b"".join(f"{i / 10},{i / 5 + 1}\\n".encode() for i in range(30))
        message = {"kind": "file", "name": "mine.csv", "size": len(content)}
        explorer.own_data._received(explorer.own_data.upload, message, [memoryview(content)])
    weights = explorer.result.histories["sum"].params["w"]
    kinds[label] = [explorer.settings.kind, bool((weights == weights).all()), explorer.own_data.line.value]
print(json.dumps({"files": [core.__file__, widgets.__file__], "prefix": sys.prefix, "kinds": kinds}))
"""


def test_the_installed_wheel_imports_from_any_folder_and_every_data_entry_runs(venv, tmp_path):
    result = json.loads(run(str(venv), "-c", USE, cwd=tmp_path).stdout.strip().splitlines()[-1])
    for file in result["files"]:  # the installed copies, not this checkout
        assert file.startswith(result["prefix"]) and not file.startswith(str(ROOT)), file
    assert set(result["kinds"]) == {"gaussian", "ones", "Engel 1857", "your CSV"}
    for label, (kind, finite, _) in result["kinds"].items():
        assert kind == {"Engel 1857": "engel", "your CSV": "own"}.get(label, label) and finite, label
    assert "Household income and food spending" in result["kinds"]["Engel 1857"][2]
    assert "mine.csv, 30 rows" in result["kinds"]["your CSV"][2]
    assert run(str(venv), "-m", "pip", "check", cwd=tmp_path).returncode == 0


def test_the_shipped_notebooks_are_written_and_run_top_to_bottom(venv, tmp_path):
    written = run(str(venv), "-m", "widgets.notebooks", "course", cwd=tmp_path).stdout
    assert "Wrote course/app.ipynb" in written and "Wrote course/exercise.ipynb" in written
    folder = tmp_path / "course"
    (folder / "exercise.ipynb").write_text("{}")  # a learner's copy is never overwritten
    kept = run(str(venv), "-m", "widgets.notebooks", "course", cwd=tmp_path).stdout
    assert "Kept course/app.ipynb" in kept and (folder / "exercise.ipynb").read_text() == "{}"
    run(str(venv), "-m", "widgets.notebooks", "course", "--overwrite", cwd=tmp_path)
    for name in ("app.ipynb", "exercise.ipynb"):
        assert (folder / name).read_bytes() == (ROOT / name).read_bytes()
    # nbclient in the environment: its kernel is the environment's python (ipykernel's own spec).
    execute = (
        "import sys, nbformat\nfrom nbclient import NotebookClient\nprobe = sys.stdin.read()\n"
        "for name in sys.argv[1:]:\n"
        "    notebook = nbformat.read(name, as_version=4)\n"
        "    notebook.cells.append(nbformat.v4.new_code_cell('import widgets; print(widgets.__file__)'))\n"
        "    notebook.cells.append(nbformat.v4.new_code_cell(probe if name == 'app.ipynb' else ''))\n"
        "    NotebookClient(notebook, timeout=180, kernel_name='python3').execute()\n"
        "    nbformat.write(notebook, name + '.out')\n"
    )
    run(str(venv), "-c", execute, "app.ipynb", "exercise.ipynb", cwd=folder, timeout=600, input=KERNEL_PROBE)
    for name in ("app.ipynb", "exercise.ipynb"):
        notebook = nbformat.read(folder / f"{name}.out", as_version=4)
        outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
        assert not [o for o in outputs if o.output_type == "error"], name
        shown = [o["data"] for o in outputs if "data" in o]
        if name == "app.ipynb":
            assert sum("application/vnd.jupyter.widget-view+json" in data for data in shown) >= 10
        else:  # the checker's four reports on the placeholders
            reports = [data["text/html"] for data in shown if "text/html" in data]
            assert len(reports) == 4 and all(
                "Not yet: error" in r and "NotImplementedError" in r for r in reports
            )
        [printed] = [o.text for o in notebook.cells[-2].outputs if o.output_type == "stream"]
        assert printed.startswith(str(venv.parent.parent)), printed  # the environment's kernel
    # A stock kernel (JupyterLab's): docstrings kept, the debugger there, serving/ not on the path.
    probed = nbformat.read(folder / "app.ipynb.out", as_version=4).cells[-1].outputs
    [printed] = [o.text for o in probed if o.output_type == "stream"]
    assert printed.startswith(STOCK_KERNEL[0]) and printed.endswith(STOCK_KERNEL[1]), printed


def _fake_wheel(folder: Path, name: str) -> Path:
    """A wheel of distribution `name` that ships a package `core`, as another project might."""
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("core/__init__.py", "ANSWER = 42\n")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(
            f"{info}/RECORD", f"core/__init__.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n"
        )
    return path


def test_another_distributions_core_is_named_at_import(dist, venv, tmp_path):
    wheel = dist[1]
    # A folder named core where the user works comes first on sys.path.
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("")
    shadowed = run(str(venv), "-c", "import widgets", cwd=tmp_path, check=False)
    assert shadowed.returncode != 0
    assert f"`import core` finds {tmp_path / 'core' / '__init__.py'}, not ScanLab's" in shadowed.stderr
    assert "virtual environment of its own" in shadowed.stderr
    # Another distribution installed over it: pip says nothing; the import says which.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run(
        str(venv),
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        str(_fake_wheel(tmp_path, "othercore")),
        cwd=elsewhere,
    )
    overwritten = run(str(venv), "-c", "import widgets", cwd=elsewhere, check=False)
    assert overwritten.returncode != 0
    assert "core/__init__.py is not the file ScanLab installed" in overwritten.stderr
    assert "(othercore 1.0)" in overwritten.stderr
    # ScanLab installed again over it: it works, and says that the other one shares the name.
    run(str(venv), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel), cwd=elsewhere)
    shared = run(str(venv), "-c", "import widgets", cwd=elsewhere)
    assert "Another distribution (othercore 1.0) also installed a package named core" in shared.stderr
    run(str(venv), "-m", "pip", "uninstall", "-q", "-y", "othercore", cwd=elsewhere)
    run(str(venv), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel), cwd=elsewhere)
    assert run(str(venv), "-c", "import widgets", cwd=elsewhere).stderr == ""
