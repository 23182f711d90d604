#!/usr/bin/env bash
# Regenerate requirements.lock (runtime), requirements-test.lock and requirements-lab.lock from pyproject.toml:
# resolve in throwaway venvs and freeze. Pins already in requirements.lock are kept (a new dependency adds
# only its own pins); `UPGRADE=1 tools/lock.sh` resolves the newest versions the ranges allow instead.
# environment.yml (conda, Binder) gets the runtime pins too; tests/test_project.py checks they agree.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-$(command -v python3.11 || command -v python3)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
deps() { "$python" -c "import tomllib, sys; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies'].get(sys.argv[1], [])))" "$1"; }

"$python" -m venv "$tmp/run"
deps run > "$tmp/run.in"
keep=()
if [ -z "${UPGRADE:-}" ] && [ -f requirements.lock ]; then
  grep -v '^#' requirements.lock > "$tmp/keep.txt"
  keep=(-c "$tmp/keep.txt")
fi
"$tmp/run/bin/pip" install -q "${keep[@]}" -r "$tmp/run.in"
{ echo "# Runtime dependencies, exact. Made by tools/lock.sh from pyproject.toml; do not edit by hand."
  "$tmp/run/bin/pip" freeze --exclude-editable; } > requirements.lock

# Each extra on top of the runtime pins: only what it adds goes into its own lock.
for extra in test lab; do
  "$python" -m venv "$tmp/$extra"
  deps "$extra" > "$tmp/$extra.in"
  extra_keep=()
  if [ -n "${keep[*]}" ] && [ -f "requirements-$extra.lock" ]; then
    grep -v -e '^#' -e '^-r' "requirements-$extra.lock" > "$tmp/keep-$extra.txt"
    extra_keep=(-c "$tmp/keep-$extra.txt")
  fi
  "$tmp/$extra/bin/pip" install -q -c requirements.lock "${extra_keep[@]}" -r "$tmp/$extra.in"
  { echo "# The $extra extra, exact, on top of requirements.lock. Made by tools/lock.sh; do not edit by hand."
    echo "-r requirements.lock"
    "$tmp/$extra/bin/pip" freeze --exclude-editable | grep -vxF -f <(grep -v '^#' requirements.lock); } \
    > "requirements-$extra.lock"
done

{ echo "# For conda and Binder. Made by tools/lock.sh from requirements.lock; do not edit by hand."
  echo "name: scanlab"
  echo "channels:"
  echo "  - conda-forge"
  echo "dependencies:"
  echo "  - python=3.11"
  echo "  - pip"
  echo "  - pip:"
  grep -v '^#' requirements.lock | sed 's/^/      - /'; } > environment.yml
echo "wrote requirements.lock ($(grep -vc '^#' requirements.lock) pins), requirements-test.lock, requirements-lab.lock"
