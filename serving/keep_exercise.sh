#!/bin/bash
# A learner's exercise.ipynb kept on a volume: serving/keep_exercise.sh REPO SAVED
#
# On the hub (deploy/jupyterhub) repo2docker puts the repository in the home folder, REPO, which is
# the image's: it comes back as built at every server start, so answers written there were lost at
# each cull, restart or image upgrade. SAVED is the student's volume, mounted inside REPO.
# `start` runs this before the server: the first time, the exercise is copied to SAVED; after that
# the copy there is never overwritten, not even by a newer image's exercise. REPO/exercise.ipynb then
# becomes a link to it, so the notebook a student opens by its usual name is the saved one (the
# Jupyter server writes through the link). Nothing here stops the server from starting: a volume
# that cannot be written leaves the image's exercise in place, with a warning in the server's log.
# tests/test_hub_home.py runs it in a folder standing for the image's home.
set -u
repo=${1:?usage: keep_exercise.sh REPO SAVED}
saved=${2:?usage: keep_exercise.sh REPO SAVED}
for name in exercise.ipynb; do
  image="$repo/$name"
  kept="$saved/$name"
  if [ -L "$image" ]; then
    continue  # linked already (a second start in the same container)
  fi
  if [ ! -e "$kept" ]; then
    # Copy beside it, then rename: a server stopped mid-copy leaves no half notebook to keep.
    if ! { mkdir -p "$saved" && cp "$image" "$kept.partial" && mv -n "$kept.partial" "$kept"; }; then
      echo "keep_exercise: could not copy $name to $saved; answers will not survive a restart" >&2
      rm -f "$kept.partial"
      continue
    fi
  fi
  # A link relative to REPO, so that it holds wherever the home is mounted.
  ln -sfn "$(realpath --relative-to="$repo" "$kept")" "$image" ||
    echo "keep_exercise: could not link $image to $kept" >&2
done
