"""A student's exercise.ipynb read as code, never run: its code cells, what each one defines, and
whether a function was attempted at all. The class report's worker (serving.class_report.worker)
runs the cells; this module only parses them.
"""

from __future__ import annotations

import ast
import difflib
import json
from pathlib import Path
from typing import NamedTuple

from IPython.core.inputtransformer2 import TransformerManager


class NotANotebook(ValueError):
    """The file is not a Jupyter notebook (not JSON, or no list of cells); the message says why."""


class Cell(NamedTuple):
    """A code cell: `number` counts every cell from 1, top to bottom, as a reader of the notebook
    counts them; `source` is its text with IPython's syntax (%magics, !commands) made Python."""

    number: int
    source: str


def code_cells(path: Path) -> list[Cell]:
    """The notebook's code cells, in order. Raises NotANotebook when it cannot be one."""
    try:
        notebook = json.loads(Path(path).read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotANotebook(f"not a notebook: the file is not JSON ({exc})"[:200]) from exc
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise NotANotebook("not a notebook: the file is JSON but has no list of cells")
    found = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        found.append(Cell(number, TransformerManager().transform_cell(source)))
    return found


def parse(cell: Cell) -> ast.Module | None:
    """The cell's syntax tree, or None when it is not valid Python."""
    try:
        return ast.parse(cell.source)
    except (SyntaxError, ValueError):
        return None


def defined(cells: list[Cell]) -> dict[str, list[int]]:
    """Each name a cell binds at its top level (a def, an assignment, an import) -> the numbers of the
    cells that bind it, in order."""
    names: dict[str, list[int]] = {}
    for cell in cells:
        tree = parse(cell)
        for node in tree.body if tree else ():
            for name in _bound(node):
                names.setdefault(name, []).append(cell.number)
    return names


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    return []


def filename(cell: Cell) -> str:
    """The name the worker compiles a cell under, which tracebacks and the checker's messages show."""
    return f"<cell {cell.number}>"


def placeholders(cells: list[Cell]) -> set[tuple[str, int]]:
    """(filename, first line) of every top-level function still the exercise's placeholder
    (`untouched`): a function object's code has the same (co_filename, co_firstlineno)."""
    found = set()
    for cell in cells:
        tree = parse(cell)
        for node in tree.body if tree else ():
            if isinstance(node, ast.FunctionDef) and untouched(node):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found.add((filename(cell), first))
    return found


def untouched(definition: ast.FunctionDef) -> bool:
    """Whether a function's body is still the exercise's placeholder: a docstring at most, then
    nothing but `raise NotImplementedError(...)` (or `pass`, or `...`)."""
    body = list(definition.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:] or body
    if len(body) != 1:
        return False
    node = body[0]
    if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
        return True
    if isinstance(node, ast.Raise) and node.exc is not None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False


def renamed(task: str, names, tasks) -> str | None:
    """The function a student seems to have written for `task` under another name: of `names` not
    in `tasks` (the exercises' own names), the one closest to `task` among those whose closest
    exercise name is `task` (scan_train_step is the first exercise's, not the pytree's), when close."""

    def likeness(a: str, b: str) -> float:
        return difflib.SequenceMatcher(None, a, b).ratio()

    candidates = [
        name
        for name in names
        if name not in tasks
        and likeness(name, task) >= 0.6
        and max(tasks, key=lambda t: likeness(name, t)) == task
    ]
    return max(candidates, key=lambda name: likeness(name, task), default=None)


def without_widget_imports(tree: ast.Module) -> ast.Module:
    """`tree` without its `from widgets import ...` and `import widgets` statements: in the report
    `exercise` and `explore` are the worker's own (a check recorded, nothing drawn)."""

    def keep(node):
        if isinstance(node, ast.ImportFrom):
            return (node.module or "").split(".")[0] != "widgets"
        if isinstance(node, ast.Import):
            return all(alias.name.split(".")[0] != "widgets" for alias in node.names)
        return True

    tree.body = [node for node in tree.body if keep(node)]
    return tree
