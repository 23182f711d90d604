"""Copy Plotly's widget bundle to widgets.figures.BUNDLE_PATH (under the current folder), where the
dashboard serves it once per browser instead of inside every chart's widget state.

`make run` runs this before serving; repo2docker runs it from `postBuild` (Binder, JupyterHub).
voila.json's file_allowlist admits exactly this file.
"""

import filecmp
import os
import pathlib
import shutil
import sys

import plotly

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from widgets.figures import BUNDLE_PATH  # noqa: E402

source = pathlib.Path(plotly.__file__).parent / "package_data/widgetbundle.js"
target = pathlib.Path(BUNDLE_PATH)
target.parent.mkdir(parents=True, exist_ok=True)
# A running server may be serving the file: leave an identical copy alone, and replace a different
# one in a single rename, so that no page ever loads half a bundle.
if not (target.is_file() and filecmp.cmp(source, target, shallow=False)):
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.copyfile(source, partial)
    os.replace(partial, target)
