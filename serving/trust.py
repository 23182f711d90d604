"""Mark a notebook trusted in a notary of `make run`'s own: `python -m serving.trust DATA_DIR NOTEBOOK`.

Voila reads the notebook through jupyter_server's contents manager for every page and every
preheated kernel, and the contents manager checks its signature (nbformat's `NotebookNotary`),
logging "Notebook app.ipynb is not trusted" each time: a class of 30 filled the terminal with it.
Trust only says whether a notebook's saved outputs may run in a browser; app.ipynb has none, and
Voila executes it anyway. Signing it is what `jupyter trust` does, here with nbformat's public API
and into DATA_DIR (the notary's secret and its signature database), which the Makefile also hands
to Voila as `--NotebookNotary.data_dir`, so that nothing is written to the user's Jupyter folder.
A changed notebook is a new signature: the Makefile signs again when app.ipynb is newer.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary


def trust(notebook: str, data_dir: str) -> bool:
    """Sign `notebook` in the notary at `data_dir`; whether it was not trusted before."""
    content = nbformat.read(notebook, as_version=4)
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    with NotebookNotary(data_dir=data_dir) as notary:
        if notary.check_signature(content):
            return False
        notary.sign(content)
        return True


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit("usage: python -m serving.trust DATA_DIR NOTEBOOK")
    data_dir, notebook = argv
    trust(notebook, data_dir)


if __name__ == "__main__":
    main(sys.argv[1:])
