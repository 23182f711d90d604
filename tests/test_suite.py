"""The suite's own rules (tests/conftest.py): no test module imports another (what they share is in
harness/support/ or harness/), marks come from the fixtures a test uses rather than by hand, and a
`make run` server is started only through the make_run fixture, so that it is marked `served`."""

import ast
import re
from pathlib import Path

from harness.support.marks import GROUPS, SECONDS, SLOW

TESTS = Path(__file__).resolve().parent
MODULES = sorted(TESTS.glob("test_*.py"))
SUPPORT = sorted((TESTS.parent / "harness" / "support").glob("*.py"))


def _imported(path: Path) -> set[str]:
    """Every module a file imports, as written (`tests.test_x`, `test_x`, `harness.support.y`)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _test_modules_imported(path: Path) -> set[str]:
    found = set()
    for name in _imported(path):
        parts = name.split(".")
        if parts[0] == "tests" and len(parts) > 1 and parts[1].startswith("test_"):
            found.add(parts[1])
        elif parts[0].startswith("test_") or parts[0] in ("conftest", "learner_corpus", "reference"):
            found.add(parts[0])
    return found


def test_no_test_module_imports_another():
    found = {(path.name, name) for path in MODULES + SUPPORT for name in _test_modules_imported(path)}
    assert found == set(), "move what they share to harness/support/"
    # An empty `found` would also come of reading no import at all: the same reading sees what the
    # learner catalogues' modules import from harness/support/ (the test module imports they replaced),
    # and test_the_check_sees_both_import_styles that it would name a test module in their place.
    shared = {(path.name, name) for path in MODULES + SUPPORT for name in _imported(path)}
    assert shared >= {
        ("catalogues.py", "harness.support.scan_step_learners"),
        ("catalogues.py", "harness.support.carry_learners"),
        ("catalogues.py", "harness.support.pytree_learners"),
        ("test_core_pytree_exercise.py", "harness.support.carry_learners"),
    }, "the check reads imports at all"


def test_the_check_sees_both_import_styles(tmp_path):
    module = tmp_path / "test_x.py"
    module.write_text(
        "from tests.test_lab import run_all\nimport test_ready\nfrom harness.support import lab"
    )
    assert _test_modules_imported(module) == {"test_lab", "test_ready"}


def test_no_mark_of_conftest_is_written_by_hand():
    by_hand = re.compile(r"pytest\.mark\.(browser|served|lab|slow)\b|^pytestmark\b", re.M)
    assert [path.name for path in MODULES if by_hand.search(path.read_text())] == []


def test_make_run_is_started_through_its_fixture():
    # harness.server.Server imported by a test module would start a server conftest cannot see.
    starts = [path.name for path in MODULES if "harness.server.Server" in _imported(path)]
    assert starts == []


def test_every_slow_entry_names_a_test_that_exists():
    for entry in SLOW:
        module, _, function = entry.partition("::")
        path = TESTS / f"{module}.py"
        assert path.exists(), entry
        assert not function or re.search(rf"^def {function}\(", path.read_text(), re.M), entry


def test_every_group_names_a_test_module():
    assert GROUPS and all((TESTS / f"{module}.py").exists() for module in GROUPS), GROUPS


def test_every_timed_scope_is_a_module_or_a_group():
    for scope in SECONDS:
        assert scope in GROUPS.values() or (TESTS / f"{scope}.py").exists(), scope


def test_no_module_binds_a_top_level_name_twice():
    # A second `READOUTS = ...` in a test module once replaced the first, which another test's
    # page script was: ruff does not flag a constant bound again (F811 is for defs and imports).
    root = TESTS.parent
    twice = {}
    for folder in ("core", "widgets", "serving", "harness", "tests", "tools", "benchmarks"):
        for path in sorted((root / folder).rglob("*.py")):
            names = [
                target.id
                for node in ast.parse(path.read_text()).body
                for target in (
                    node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                )
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(target, ast.Name)
            ]
            again = sorted({name for name in names if names.count(name) > 1})
            if again:
                twice[str(path.relative_to(root))] = again
    assert twice == {}
