"""Write Plotly.js's cartesian bundle (widgets.surface.plotly_js) to widgets.surface.PLOTLY_PATH (under
the current folder). The dashboard serves it once per browser, and each chart loads it from there
(widgets/surface.js) instead of carrying it in its widget state.

`make run` runs this before serving; repo2docker runs it from `postBuild` (Binder, JupyterHub).
voila.json's file_allowlist admits exactly such files.
"""

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from widgets.surface import PLOTLY_PATH, plotly_js  # noqa: E402


def place(target: pathlib.Path, content: bytes) -> None:
    """Write `content` to `target`. A running server may be serving the file: leave an identical
    copy alone, and replace a different one in a single rename, so no page loads half a file."""
    if target.is_file() and target.read_bytes() == content:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_bytes(content)
    os.replace(partial, target)


target = pathlib.Path(PLOTLY_PATH)
place(target, plotly_js().encode("utf-8"))
# What earlier versions served: no page served from now on loads it.
for old in target.parent.glob("*.js"):
    if old.name != target.name:
        old.unlink(missing_ok=True)
