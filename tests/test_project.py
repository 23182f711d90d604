"""The project's own promises: pinned and agreeing dependency files, a pure core, a clean notebook."""

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "-r")):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_environment_yml_matches_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    from_env = {}
    for line in pip:
        name, version = line.split("==")
        from_env[name.lower().replace("_", "-")] = version
    assert from_env == _pins(ROOT / "requirements.lock")


def test_lock_pins_every_declared_dependency_within_its_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = _pins(ROOT / "requirements.lock")
    locks = [(project["dependencies"], runtime)]
    for extra, spec in project["optional-dependencies"].items():
        extra_lock = ROOT / f"requirements-{extra}.lock"
        assert extra_lock.read_text().splitlines()[1] == "-r requirements.lock"
        locks.append((spec, {**runtime, **_pins(extra_lock)}))
    for spec, pins in locks:
        for line in spec:
            requirement = Requirement(line)
            name = requirement.name.lower().replace("_", "-")
            assert name in pins, f"{name} is not in the lock"
            assert requirement.specifier.contains(pins[name]), (
                f"{name}=={pins[name]} outside {requirement.specifier}"
            )
    for name in ("jax", "jaxlib", "ipywidgets", "voila", "plotly", "anywidget", "numpy"):
        assert name in runtime
    for name in ("pytest", "playwright"):
        assert name in _pins(ROOT / "requirements-test.lock")


def test_the_charts_widget_waits_for_a_slow_model_however_long():
    """anywidget 0.9.17 and later give up on a model whose module takes over 2 s to load, and then
    drop its messages for the life of the page: a chart that no longer follows its controls
    (docs/design.md, "anywidget below 0.9.17"). Read in the front ends the page loads."""
    import anywidget

    folders = [Path(sys.prefix, "share", "jupyter", "labextensions", "anywidget", "static")]
    folders += [Path(anywidget.__file__).parent / part for part in ("nbextension", "labextension/static")]
    scripts = [path for folder in folders for path in sorted(folder.glob("*.js"))]
    assert len(scripts) >= 3, folders
    gives_up = [
        str(path) for path in scripts if "Failed to initialize model" in path.read_text(errors="replace")
    ]
    assert gives_up == []


def _imports(path: Path) -> list[str]:
    """The top-level packages a module imports (absolute imports; this project has no other)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.append(node.module)
    return [name.split(".")[0] for name in names]


def test_make_lab_installs_jupyterlab_into_the_dashboards_environment_without_moving_a_pin():
    # One environment for run, lab and test (issue 40): the lab's lock adds packages on top of
    # requirements.lock and pins none of its packages again, so `make run` serves the same
    # versions with JupyterLab installed beside them. LAB_VENV keeps a lab apart when asked.
    def dry_run(target, *extra):
        result = subprocess.run(
            ["make", "-n", "--no-print-directory", target, "VENV=.venv-dry", *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    lab = dry_run("lab")
    assert ".venv-dry/bin/python -m pip" in lab and "install -r requirements-lab.lock" in lab
    assert ".venv-dry/bin/jupyter lab " in lab and "default_url=/lab/tree/app.ipynb" in lab
    assert "default_url=/lab/tree/exercise.ipynb" in dry_run("lab", "NOTEBOOK=exercise.ipynb")
    assert "requirements-lab.lock" not in dry_run("run")
    apart = dry_run("lab", "LAB_VENV=.venv-dry-lab")
    assert ".venv-dry-lab/bin/jupyter lab " in apart and ".venv-dry/" not in apart
    # The link printed opens the notebook itself; every served lab reads the repository's settings.
    assert "lab-settings" in lab
    klass = dry_run("class", "STUDENTS=3", "HOST=0.0.0.0")
    assert "install -r requirements-lab.lock" in klass
    assert ".venv-dry/bin/python -m serving.classroom --students 3 " in klass and "--host 0.0.0.0" in klass
    lab_pins, run_pins = _pins(ROOT / "requirements-lab.lock"), _pins(ROOT / "requirements.lock")
    assert lab_pins and not set(lab_pins) & set(run_pins), set(lab_pins) & set(run_pins)
    assert (ROOT / "requirements-lab.lock").read_text().splitlines()[1] == "-r requirements.lock"


def _modules(root: Path, folder: str, pattern: str = "*.py") -> list[Path]:
    """Every file of `folder` matching `pattern`, subpackages included; not the vendored files
    (widgets/vendor/: others' code as they publish it)."""
    return sorted(
        path for path in (root / folder).rglob(pattern) if path.is_file() and "vendor" not in path.parts
    )


def _impure_core(root: Path) -> list[str]:
    # Optax is JAX too: pure (init, update) functions over pytrees.
    allowed = {"jax", "numpy", "optax", "core"} | set(sys.stdlib_module_names)
    return [
        f"{path.relative_to(root)} imports {name}"
        for path in _modules(root, "core")
        for name in _imports(path)
        if name not in allowed
    ]


def _layers_the_wrong_way(root: Path) -> list[str]:
    # app.ipynb -> widgets -> core, and serving -> widgets: the interface never depends on how it
    # is served, and core on neither. What tests and benchmarks share (harness/) is theirs alone.
    forbidden = {
        "widgets": {"serving", "benchmarks", "tests", "harness"},
        "serving": {"benchmarks", "tests", "harness"},
    }
    return [
        f"{path.relative_to(root)} imports {name}"
        for folder, names in forbidden.items()
        for path in _modules(root, folder)
        for name in _imports(path)
        if name in names
    ]


def _plant(tmp_path: Path, relative: str, text: str) -> Path:
    """A tree with one file, inside a subpackage: the checks must look there too."""
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return tmp_path


def test_make_quick_check_and_test_run_what_their_marks_say():
    # The marks come from the fixtures (tests/conftest.py): quick leaves out every outside process
    # and the slow modules, check only the outside processes, test nothing, in parallel.
    def dry_run(target):
        result = subprocess.run(
            ["make", "-n", "--no-print-directory", target, "VENV=.venv-dry"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout

    outside = "not browser and not served and not lab"
    assert f'.venv-dry/bin/python -m pytest -m "{outside} and not slow" -n ' in dry_run("quick")
    assert f'.venv-dry/bin/python -m pytest -m "{outside}" -n ' in dry_run("check")
    ran = [line for line in dry_run("test").splitlines() if "-m pytest" in line]
    assert len(ran) == 1 and " -m " not in ran[0].split("pytest", 1)[1], ran
    assert "-n " in ran[0] and "--dist loadscope" in ran[0] and "--durations=30" in ran[0], ran


def test_core_imports_only_jax_numpy_optax_and_the_standard_library():
    assert _impure_core(ROOT) == []


def test_core_purity_is_checked_inside_subpackages(tmp_path):
    root = _plant(tmp_path, "core/deep/er/module.py", "import ipywidgets\nfrom plotly import graph_objects\n")
    assert _impure_core(root) == [
        "core/deep/er/module.py imports ipywidgets",
        "core/deep/er/module.py imports plotly",
    ]


def test_layers_point_one_way():
    assert _layers_the_wrong_way(ROOT) == []
    notebook = json.loads((ROOT / "app.ipynb").read_text())
    code = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")
    imported = {
        name
        for node in ast.walk(ast.parse(code))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in ([node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names])
    }
    assert {name.split(".")[0] for name in imported} == {"widgets"}, imported


def test_the_layers_are_checked_inside_subpackages(tmp_path):
    root = _plant(tmp_path, "widgets/hood/panel.py", "from serving import kernels\n")
    _plant(tmp_path, "serving/sub/part.py", "import harness.server\n")
    assert _layers_the_wrong_way(root) == [
        "widgets/hood/panel.py imports serving",
        "serving/sub/part.py imports harness",
    ]


def _core_drawing(root: Path) -> list[str]:
    """What breaks the house's drawing of core/: each import circle among its modules (imports under
    TYPE_CHECKING count too), and each private name one module imports from another (but from
    core._checks, whose checks every entry point shares)."""
    files = {
        ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted((root / "core").rglob("*.py"))
    }
    edges, problems = {}, []
    for module, path in files.items():
        edges[module] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges[module] |= {alias.name for alias in node.names if alias.name in files}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    if submodule in files:  # from core import engine
                        edges[module].add(submodule)
                    elif node.module in files:
                        edges[module].add(node.module)
                        if alias.name.startswith("_") and node.module not in ("core._checks", module):
                            problems.append(f"{module} takes {node.module}.{alias.name}")
    seen, path = set(), []

    def visit(module):
        if module in path:
            problems.append("import circle: " + " -> ".join(path[path.index(module) :] + [module]))
            return
        if module in seen:
            return
        seen.add(module)
        path.append(module)
        for target in sorted(edges[module] - {module}):
            visit(target)
        path.pop()

    for module in sorted(edges):
        visit(module)
    return problems


def test_core_has_no_import_circle_and_takes_no_private_name_across_modules():
    assert _core_drawing(ROOT) == []


def test_the_drawing_check_finds_a_circle_and_a_private_name(tmp_path):
    root = _plant(tmp_path, "core/a.py", "from core.b import _helper\n")
    typed = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core import a\n"
    _plant(tmp_path, "core/b.py", typed)
    _plant(tmp_path, "core/c.py", "from core._checks import _as_array\n")
    _plant(tmp_path, "core/_checks.py", "")
    assert _core_drawing(root) == ["core.a takes core.b._helper", "import circle: core.a -> core.b -> core.a"]


def test_no_notebook_is_committed_with_outputs_or_widget_state():
    # What JupyterLab or Notebook saves after a run; make lab-env's git filter (nbstripout) strips it.
    tracked = subprocess.run(
        ["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {"app.ipynb", "exercise.ipynb"} <= set(tracked)
    for name in tracked:
        if (ROOT / name).is_symlink():  # widgets/notebooks/: links to the two above
            continue
        # As git stores it (the index): a file opened in JupyterLab may hold outputs the filter strips.
        staged = subprocess.run(
            ["git", "show", f":{name}"], cwd=ROOT, capture_output=True, text=True, check=True
        )
        notebook = json.loads(staged.stdout)
        assert "widgets" not in notebook["metadata"], name
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, name


def test_the_notebook_filter_strips_outputs_and_keeps_cell_ids(tmp_path):
    attributes = (ROOT / ".gitattributes").read_text()
    assert "*.ipynb filter=nbstripout" in attributes
    command = re.search(r"^NBSTRIPOUT = .* -m nbstripout (.*)$", (ROOT / "Makefile").read_text(), re.M)[1]
    notebook = json.loads((ROOT / "app.ipynb").read_text())
    notebook["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "saved"}]
    notebook["cells"][1]["execution_count"] = 7
    notebook["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    cleaned = subprocess.run(
        [sys.executable, "-m", "nbstripout", *command.split()],
        input=json.dumps(notebook, indent=1),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(cleaned) == json.loads((ROOT / "app.ipynb").read_text())


def test_app_notebook_keeps_code_short():
    notebook = json.loads((ROOT / "app.ipynb").read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert code, "the notebook must show something"
    for cell in code:
        lines = [line for line in "".join(cell["source"]).splitlines() if line.strip()]
        assert len(lines) <= 2, f"logic belongs in widgets/ or core/, not in a cell: {lines}"
    assert sum(c["cell_type"] == "markdown" for c in notebook["cells"]) >= len(code)


def test_readme_opens_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    run, test = readme.find("make run"), readme.find("make test")
    assert 0 <= run < test < 1500, "README must open with `make run`, then `make test`"


def test_readme_is_for_a_user_and_docs_hold_the_rest():
    # A user's page: what it is, the two commands, using it; the design, the figures and the class
    # are in docs/, each linked from it. Words a learner has never seen (our source documents'
    # names) stay out.
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert "seed 00" not in readme.lower()
    for doc in ("design", "performance", "classroom"):
        assert f"(docs/{doc}.md)" in readme and (ROOT / "docs" / f"{doc}.md").is_file(), doc
    for image in ("screenshot.png", "screenshot-projector.png", "screenshot-phone.png"):
        assert f"(docs/{image})" in readme and (ROOT / "docs" / image).is_file(), image


def _source_document_names(root: Path) -> list[str]:
    # The lesson draws on source documents a student has never seen ("seed 000" and its kin): the
    # notebooks, the UI's strings, the checker's hints, the exported script and the source shown in
    # the Code panels say what each is instead (the worked example, the exercise).
    paths = [root / name for name in ("app.ipynb", "exercise.ipynb", "README.md") if (root / name).exists()]
    paths += [*_modules(root, "core"), *_modules(root, "widgets"), *_modules(root, "widgets", "*.js")]
    paths += _modules(root, "widgets", "*.css")
    return [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bseeds? ?0\d\d\b", line, re.IGNORECASE)
    ]


def test_what_a_learner_reads_never_names_our_source_documents():
    assert _source_document_names(ROOT) == []


def test_source_document_names_are_found_inside_subpackages(tmp_path):
    root = _plant(tmp_path, "core/exercises/hints.py", 'HINT = "As seed 000 says"\n')
    _plant(tmp_path, "widgets/hood/panel.css", "/* from seed 004 */\n")
    assert _source_document_names(root) == [
        'core/exercises/hints.py:1: HINT = "As seed 000 says"',
        "widgets/hood/panel.css:1: /* from seed 004 */",
    ]


def test_ruff_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", str(ROOT)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
