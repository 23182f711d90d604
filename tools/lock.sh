#!/usr/bin/env bash
# Regenerate requirements.lock (runtime) and requirements-test.lock (tests) from pyproject.toml:
# resolve the newest versions the ranges allow in throwaway venvs and freeze them.
# environment.yml (conda, Binder) gets the runtime pins too; tests/test_project.py checks they agree.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-$(command -v python3.11 || command -v python3)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
deps() { "$python" -c "import tomllib, sys; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + (p['optional-dependencies']['test'] if sys.argv[1] == 'test' else [])))" "$1"; }

"$python" -m venv "$tmp/run"
deps run > "$tmp/run.in"
"$tmp/run/bin/pip" install -q -r "$tmp/run.in"
{ echo "# Runtime dependencies, exact. Made by tools/lock.sh from pyproject.toml; do not edit by hand."
  "$tmp/run/bin/pip" freeze --exclude-editable; } > requirements.lock

"$python" -m venv "$tmp/test"
deps test > "$tmp/test.in"
"$tmp/test/bin/pip" install -q -c requirements.lock -r "$tmp/test.in"
{ echo "# Test dependencies, exact, on top of requirements.lock. Made by tools/lock.sh; do not edit by hand."
  echo "-r requirements.lock"
  "$tmp/test/bin/pip" freeze --exclude-editable | grep -vxF -f <(grep -v '^#' requirements.lock); } > requirements-test.lock
{ echo "# For conda and Binder. Made by tools/lock.sh from requirements.lock; do not edit by hand."
  echo "name: scanlab"
  echo "channels:"
  echo "  - conda-forge"
  echo "dependencies:"
  echo "  - python=3.11"
  echo "  - pip"
  echo "  - pip:"
  grep -v '^#' requirements.lock | sed 's/^/      - /'; } > environment.yml
echo "wrote requirements.lock ($(grep -vc '^#' requirements.lock) pins) and requirements-test.lock"
