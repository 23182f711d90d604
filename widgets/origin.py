"""Whether `import core` and `import widgets` give ScanLab's own packages.

The design names ScanLab's two packages `core` and `widgets`, names other projects use too. pip
installs two distributions' packages of one name into the same folder, one over the other, without
a word, and uninstalling either deletes files of both. A user would then see some other error far
from its cause; `require_own` (run first by `import widgets`) names the file found instead, and the
fix: a virtual environment of ScanLab's own.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import warnings
from pathlib import Path

PACKAGES = ("core", "widgets")
DISTRIBUTION = "scanlab"
FIX = (
    "Give ScanLab a virtual environment of its own: python -m venv scanlab-env, then "
    "scanlab-env/bin/pip install scanlab (or make run in a checkout), and start Jupyter from it."
)


class NotScanLab(ImportError):
    """`core` or `widgets` is another project's package of that name."""


def require_own() -> None:
    """Raise NotScanLab when `core` or `widgets` is imported from anywhere but beside this file's
    package, or (in an installed ScanLab) when its `__init__.py` is not the file ScanLab installed.
    Warn when another installed distribution also owns files of either package."""
    root = Path(__file__).resolve().parent.parent  # the folder that holds ScanLab's packages
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        found = Path(spec.origin).resolve() if spec is not None and spec.origin else None
        if found is None or found.parent.parent != root:
            raise NotScanLab(
                f"`import {name}` finds {found or 'no file'}, not ScanLab's {root / name / '__init__.py'}: "
                f"a folder or package named {name} comes first on Python's path (sys.path). Rename "
                f"that folder if it is yours. {FIX}"
            )
    files = _installed(root)
    if files is None:  # a checkout, or an editable install: nothing was copied to compare
        return
    owners = _owners(root)
    for name in PACKAGES:
        entry = files.get(f"{name}/__init__.py")
        if entry is not None and entry.hash is not None and _digest(root / entry) != entry.hash.value:
            raise NotScanLab(
                f"{root / name / '__init__.py'} is not the file ScanLab installed: another "
                f"distribution ({owners.get(name, 'unknown')}) installed a package named {name} "
                f"over ScanLab's. {FIX}"
            )
    for name, others in owners.items():
        warnings.warn(
            f"Another distribution ({others}) also installed a package named {name} in {root}: "
            f"uninstalling it would delete ScanLab's files. {FIX}",
            stacklevel=3,
        )


def _installed(root: Path) -> dict | None:
    """The files of ScanLab's distribution's RECORD by path (importlib.metadata's PackagePath, with
    its hash), when the packages in `root` are the ones it installed; else None."""
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    files = {str(file): file for file in distribution.files or ()}
    entry = files.get("widgets/__init__.py")
    if entry is None or Path(distribution.locate_file(entry)).resolve().parent.parent != root:
        return None
    return files


def _digest(path: Path) -> str:
    """A file's hash as RECORD writes it: urlsafe base64 of its SHA-256, without padding."""
    digest = hashlib.sha256(path.read_bytes()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _owners(root: Path) -> dict[str, str]:
    """Package name -> the other distributions in `root` whose RECORD lists files of it, as
    "a 1.0, b 2"; one pass over the folder's RECORDs."""
    owners: dict[str, list[str]] = {}
    for record in sorted(root.glob("*.dist-info/RECORD")):
        if record.parent.name.lower().startswith(f"{DISTRIBUTION}-"):
            continue
        text = record.read_text(encoding="utf-8", errors="replace")
        for name in PACKAGES:
            if text.startswith(f"{name}/") or f"\n{name}/" in text:
                owners.setdefault(name, []).append(
                    record.parent.name.removesuffix(".dist-info").replace("-", " ", 1)
                )
    return {name: ", ".join(found) for name, found in owners.items()}
