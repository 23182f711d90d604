"""Copy Plotly's widget bundle to widgets.figures.BUNDLE_PATH and write the charts' front end,
widgets.figures.FRONT_END, to FRONT_END_PATH next to it (under the current folder). The dashboard
serves both once per browser instead of the bundle inside every chart's widget state.

`make run` runs this before serving; repo2docker runs it from `postBuild` (Binder, JupyterHub).
voila.json's file_allowlist admits exactly these files.
"""

import os
import pathlib
import sys

import plotly

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from widgets.figures import BUNDLE_PATH, FRONT_END, FRONT_END_PATH  # noqa: E402


def place(target: pathlib.Path, content: bytes) -> None:
    """Write `content` to `target`. A running server may be serving the file: leave an identical
    copy alone, and replace a different one in a single rename, so no page loads half a file."""
    if target.is_file() and target.read_bytes() == content:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_bytes(content)
    os.replace(partial, target)


place(
    pathlib.Path(BUNDLE_PATH),
    (pathlib.Path(plotly.__file__).parent / "package_data/widgetbundle.js").read_bytes(),
)
place(pathlib.Path(FRONT_END_PATH), FRONT_END.encode())
# Front ends of earlier versions: no page served from now on imports them.
for old in pathlib.Path(FRONT_END_PATH).parent.glob("scanlab-figure-*.js"):
    if old.name != pathlib.Path(FRONT_END_PATH).name:
        old.unlink(missing_ok=True)
