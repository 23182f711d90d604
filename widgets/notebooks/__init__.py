"""The lesson (app.ipynb) and the exercise (exercise.ipynb), shipped inside the package.

In a checkout they are the repository's own files (this folder holds links to them); in an
installed ScanLab they are copies. `python -m widgets.notebooks [FOLDER]` writes both into FOLDER
(the current one by default) for JupyterLab, Notebook, VS Code or Colab to open.
"""

from __future__ import annotations

import argparse
import os
from importlib import resources
from pathlib import Path

NOTEBOOKS = ("app.ipynb", "exercise.ipynb")


def copy(folder: str | Path = ".", *, overwrite: bool = False) -> dict[str, list[Path]]:
    """Write NOTEBOOKS into `folder` (made if missing). A notebook already there is kept as it is
    (it may hold a learner's answers) unless `overwrite`.

    Returns {"written": [...], "kept": [...]}: the paths of each kind, in NOTEBOOKS' order.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"folder: {folder} is a file, not a folder")
    done: dict[str, list[Path]] = {"written": [], "kept": []}
    for name in NOTEBOOKS:
        source, target = resources.files(__package__).joinpath(name), folder / name
        if overwrite:
            folder.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
        written = overwrite or keep_copy(source, target)
        done["written" if written else "kept"].append(target)
    return done


def keep_copy(source, target: Path) -> bool:
    """Copy `source` (a path, or an importlib.resources file) to `target` unless `target` exists;
    whether it copied. Never overwrites: the copy is a learner's answers as soon as they save."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(source.read_bytes())
    try:
        os.link(partial, target)  # fails if target exists, even if it appeared just now
    except FileExistsError:
        return False
    finally:
        partial.unlink()
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m widgets.notebooks",
        description="Write ScanLab's lesson (app.ipynb) and exercise (exercise.ipynb) into a folder.",
    )
    parser.add_argument("folder", nargs="?", default=".", help="where to write them (default: here)")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace notebooks already there (answers are lost)"
    )
    options = parser.parse_args(argv)
    done = copy(options.folder, overwrite=options.overwrite)
    for path in done["written"]:
        print(f"Wrote {path}")
    for path in done["kept"]:
        print(f"Kept {path}: it is already there (--overwrite replaces it)")
    print(f"Open them with: jupyter lab {Path(options.folder) / NOTEBOOKS[0]}")
