"""The JupyterHub image's pin: the commit deploy/jupyterhub/config.yaml names as the image's tag.

An image is built from that commit (deploy/jupyterhub/README.md), so the pin is stale as soon as a
file the image runs changes after it: a hub deployed from it would serve older code than `make run`.

  python tools/hub_pin.py --check   exit 1, naming what changed, when the pin is stale
  python tools/hub_pin.py           move the pin (config.yaml and README's commands) to the newest
                                    commit that changed a file the image runs (`make hub-pin`)

Moving the pin edits only deploy/, which the image does not run, so the new pin stays current once
committed. Needs the git history (not a shallow clone).
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG = ROOT / "deploy/jupyterhub/config.yaml"
README = ROOT / "deploy/jupyterhub/README.md"

# What repo2docker's image runs: its environment and set-up (environment.yml, postBuild, start),
# the notebooks and the code they import, Voila's settings and the page template
# (Plotly.js is inside widgets/).
IMAGE_PATHS = (
    "environment.yml",
    "postBuild",
    "start",
    "voila.json",
    "app.ipynb",
    "exercise.ipynb",
    "core",
    "widgets",
    "serving",
    "tools/plotly_bundle.py",
)

_TAG = re.compile(r'^(\s+tag: ")([0-9a-f]{7,40})(")', re.M)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def pinned() -> str:
    """The commit config.yaml's singleuser.image.tag names."""
    return _TAG.search(CONFIG.read_text()).group(2)


def changed_since(commit: str) -> list[str]:
    """The files the image runs that differ between `commit` and HEAD (uncommitted work is no
    image)."""
    return _git("diff", "--name-only", commit, "HEAD", "--", *IMAGE_PATHS).splitlines()


def newest() -> str:
    """The newest commit that changed a file the image runs, abbreviated to 12 digits."""
    return _git("log", "-1", "--format=%H", "HEAD", "--", *IMAGE_PATHS)[:12]


def move(to: str) -> None:
    """Put `to` in config.yaml's tag and in README's repo2docker and docker commands."""
    old = pinned()
    CONFIG.write_text(_TAG.sub(rf"\g<1>{to}\g<3>", CONFIG.read_text()))
    README.write_text(README.read_text().replace(old, to))


def main(argv: list[str]) -> int:
    if _git("rev-parse", "--is-shallow-repository") != "false":
        print("hub_pin: this clone is shallow; the pin needs the history (git fetch --unshallow)")
        return 2
    if argv == ["--check"]:
        pin = pinned()
        stale = changed_since(pin)
        if stale:
            print(
                f"The JupyterHub image pin {pin} is stale: {', '.join(stale[:8])}"
                f"{' and more' if len(stale) > 8 else ''} changed after it. Commit, then run "
                "`make hub-pin` and commit deploy/."
            )
            return 1
        return 0
    if argv:
        print(__doc__)
        return 2
    if _git("status", "--porcelain", "--", *IMAGE_PATHS):
        print("hub_pin: commit the files the image runs first; the pin names a commit")
        return 1
    to = newest()
    move(to)
    print(f"deploy/jupyterhub: the image is built from {to}; commit deploy/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
