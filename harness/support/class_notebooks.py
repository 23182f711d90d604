"""A class's notebooks for the class report's tests and benchmark: exercise.ipynb copies whose four
functions are learners' functions from the learner corpus (right ones, one of every named mistake),
and notebooks broken in each way a real class breaks them.

`build(folder)` writes folder/student-NN/exercise.ipynb and returns what each cell of the report
must say: {student: {task: expected}}, where expected is ("codes", the corpus's codes: the checker's
verdict, which tests/test_learner_corpus.py holds to) or (a state, words its notes must contain).
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import re
import textwrap
import types
from pathlib import Path

from harness.support import learner_corpus
from harness.support.learner_corpus import CORPUS

ROOT = Path(__file__).resolve().parents[2]
TASKS = tuple(CORPUS)
IMPORTS = {
    "jax": "import jax",
    "jnp": "import jax.numpy as jnp",
    "np": "import numpy as np",
    "optax": "import optax",
    "lax": "from jax import lax",
    "partial": "from functools import partial",
}


def _names(fn) -> set[str]:
    """The names `fn`'s source reads, its decorators' included."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def source(fn, task: str) -> str:
    """`fn`'s source as a learner's cell: its imports, the corpus's helpers it calls, then fn itself
    under the exercise's name."""
    imports, helpers, seen = set(), [], set()

    def visit(f):
        for name in sorted(_names(inspect.unwrap(f))):
            value = vars(learner_corpus).get(name)
            inner = inspect.unwrap(value) if callable(value) else None
            if name in IMPORTS:
                imports.add(IMPORTS[name])
            elif isinstance(inner, types.FunctionType) and inner.__module__ == learner_corpus.__name__:
                if name not in seen and value is not fn:
                    seen.add(name)
                    visit(inner)
                    helpers.append(inspect.getsource(inner))
            elif isinstance(value, (int, float, str)):
                if name not in seen:
                    seen.add(name)
                    helpers.append(f"{name} = {value!r}\n")

    visit(fn)
    own = re.sub(
        rf"^def {fn.__name__}\(", f"def {task}(", inspect.getsource(inspect.unwrap(fn)), count=1, flags=re.M
    )
    if re.search(rf"\b{fn.__name__}\b", own + "".join(helpers)):
        own += f"\n{fn.__name__} = {task}\n"
    return "\n".join(["\n".join(sorted(imports)), *helpers, own])


def template() -> dict:
    return json.loads((ROOT / "exercise.ipynb").read_text())


def _code(text: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": text}


def _index(notebook: dict, start: str) -> int:
    """The first cell with a line that starts with `start`."""
    line = re.compile(rf"^{re.escape(start)}", re.M)
    return next(i for i, c in enumerate(notebook["cells"]) if line.search("".join(c["source"])))


def notebook(functions: dict) -> dict:
    """exercise.ipynb with each task's cell (`def task(`) replaced by functions[task] (source text);
    a task not in `functions` keeps its placeholder."""
    book = copy.deepcopy(template())
    for task, text in functions.items():
        book["cells"][_index(book, f"def {task}(")] = _code(text)
    return book


def slots() -> dict:
    """Per task, the corpus's functions in the order students get them: one for each named mistake
    first, then the right ones, then the rest (the factory-made `train` left out: it has no cell of
    its own)."""
    order = {}
    for task, catalogue in CORPUS.items():
        usable = [fn for fn in catalogue if getattr(learner_corpus, fn.__name__, None) is fn]
        first, named = [], set()
        for fn in usable:
            if catalogue[fn] and not catalogue[fn] <= named:
                first.append(fn)
                named |= catalogue[fn]
        rights = [fn for fn in usable if not catalogue[fn]]
        order[task] = first + rights + [fn for fn in usable if fn not in first and fn not in rights]
    return order


def _write(folder: Path, name: str, book: dict | str) -> None:
    (folder / name).mkdir(parents=True, exist_ok=True)
    text = book if isinstance(book, str) else json.dumps(book, indent=1)
    (folder / name / "exercise.ipynb").write_text(text)


def build(folder: Path, students: int = 30) -> dict:
    """Write the class (see the module's docstring); returns the expected report."""
    order, expected = slots(), {}
    for number in range(1, students + 1):
        name = f"student-{number:02d}"
        chosen = {task: order[task][(number - 1) % len(order[task])] for task in TASKS}
        book = notebook({task: source(fn, task) for task, fn in chosen.items()})
        expected[name] = {task: ("codes", CORPUS[task][fn]) for task, fn in chosen.items()}
        broken = BROKEN.get(number)
        if broken is not None:
            book = broken(book, expected[name])
        _write(folder, name, book)
    return expected


# --- the broken notebooks: each changes the book and what its cells must say -------------------


def _edit(book, task: str, old: str = "", new: str = "", first: str = ""):
    """In the cell that defines `task`'s function: the first `old` made `new`, `first` put before it."""
    cell = book["cells"][_index(book, f"def {task}(")]
    cell["source"] = first + (cell["source"].replace(old, new, 1) if old else cell["source"])


def not_json(book, expected):
    expected.update({task: ("no notebook", "not JSON") for task in TASKS})
    return '{"cells": [ this is not JSON'


def no_cell(book, expected):
    del book["cells"][_index(book, "exercise(momentum_training_step)")]
    del book["cells"][_index(book, "def momentum_training_step(")]
    expected["momentum_training_step"] = ("missing", "no cell defines momentum_training_step")
    return book


def renamed(book, expected):
    # The function renamed, its exercise() cell left as it was (a NameError there): found by its name.
    _edit(book, "pytree_training_step", "def pytree_training_step(", "def pytree_train_step(")
    expected["pytree_training_step"] += ("the function is named pytree_train_step",)
    return book


def renamed_and_checked(book, expected):
    # Renamed, and checked under its new name: exercise() chooses the exercise by its arguments.
    _edit(book, "scan_training_step", "def scan_training_step(", "def my_scan(")
    book["cells"][_index(book, "exercise(scan_training_step)")]["source"] = "exercise(my_scan)"
    expected["scan_training_step"] += ("the function is named my_scan",)
    return book


def defined_twice(book, expected):
    # A second, right definition in a cell of its own before the check: the one checked.
    right = next(fn for fn, codes in CORPUS["scan_training_step"].items() if not codes)
    book["cells"].insert(
        _index(book, "exercise(scan_training_step)"), _code(source(right, "scan_training_step"))
    )
    expected["scan_training_step"] = ("codes", frozenset(), "defined 2 times")
    return book


def missing_package(book, expected):
    _edit(book, "scheduled_training_step", first="import scanlab_no_such_package\n\n")
    expected["scheduled_training_step"] = ("raised", "No module named 'scanlab_no_such_package'")
    return book


def reads_outside(book, expected):
    _edit(book, "momentum_training_step", "\n    ", '\n    open("../student-02/exercise.ipynb").read()\n    ')
    expected["momentum_training_step"] = ("raised", "read only its own folder")
    return book


def prints_and_loops(book, expected):
    # A cell that prints a great deal and one that never ends: the rest is checked all the same.
    book["cells"].insert(1, _code("for i in range(100_000):\n    print('step', i)"))
    book["cells"].insert(2, _code("while True:\n    pass"))
    for task in TASKS:
        expected[task] += ("ran past",)
    return book


def crashes(book, expected):
    # The process dies in the third exercise's check: the two before are kept.
    _edit(book, "scheduled_training_step", "\n    ", "\n    os._exit(3)\n    ", first="import os\n\n")
    for task in ("scheduled_training_step", "pytree_training_step"):
        expected[task] = ("raised", "exit code 3")
    return book


def takes_memory(book, expected):
    book["cells"].insert(1, _code("import numpy as np\nbig = np.ones(1_000_000_000)  # 8 GB"))
    for task in TASKS:
        expected[task] += ("MemoryError",)
    return book


def syntax_error(book, expected):
    _edit(book, "pytree_training_step", "):", ")")
    expected["pytree_training_step"] = ("raised", "not valid Python")
    return book


def not_attempted(book, expected):
    book["cells"] = template()["cells"]
    expected.update({task: ("not attempted", "") for task in TASKS})
    return book


BROKEN = {
    7: renamed, 9: renamed_and_checked, 12: no_cell, 14: reads_outside, 16: missing_package,
    17: prints_and_loops, 21: takes_memory, 24: not_json, 25: not_attempted, 26: crashes, 27: syntax_error,
    28: defined_twice,
}  # fmt: skip
"""Student number -> how their notebook is broken. A breakage that takes an exercise's verdict away
falls on a student whose function for it is not the only one of its mistake (slots() gives the first
students one of each), so that the class still holds every named mistake."""
