# `make run` serves the dashboard; `make test` runs the whole suite. Both set up .venv first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8866
LAB_PORT ?= 8888
HOST ?= 127.0.0.1
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
# No accelerator is needed; skipping the probe saves a second at every start.
export JAX_PLATFORMS ?= cpu

.PHONY: run test lab lint lock clean chromium bench

# Compiled XLA programs are kept on disk, so a new kernel loads the engine instead of compiling it
# (not for `make test`, whose tests count compiles).
JAX_CACHE := $(CURDIR)/.cache/jax
run lab: export JAX_COMPILATION_CACHE_DIR ?= $(JAX_CACHE)
run lab: export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
# glibc gives every thread that allocates its own heap arena, and XLA's compile threads leave them
# half full: two arenas cut a process running the explorer at N=1000, B=512 from 435 to 317 MB RSS.
run lab: export MALLOC_ARENA_MAX ?= 2

run: $(VENV)/.installed-run
	@# Plotly's widget bundle, served once per browser instead of inside every chart's widget state
	@# (widgets/figures.py: figure_widget); voila.json allows exactly this file.
	@$(BIN)/python tools/plotly_bundle.py
	$(BIN)/voila app.ipynb --no-browser --port=$(PORT) --Voila.ip=$(HOST)

test: $(VENV)/.installed-test chromium
	$(BIN)/python -m pytest

# The same notebook in JupyterLab. (Notebook 7.6 runs it too, checked by hand; install it in another
# environment: its lab extension in this one makes Voila's page log a module-federation error.)
lab: $(VENV)/.installed-lab
	$(BIN)/jupyter lab app.ipynb --no-browser --port=$(LAB_PORT) --ServerApp.ip=$(HOST) \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

# Every benchmark (a few minutes), one table against issue 4's targets; also kept in .cache/bench.md.
bench: $(VENV)/.installed-test chromium
	$(BIN)/python -m benchmarks.report --browser --out .cache/bench.md

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .

lock:
	tools/lock.sh

clean:
	rm -rf $(VENV)

# The browser tests drive Debian's Chromium; Playwright's own browser download is not reachable here.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Debian's chromium for the browser tests"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
	  else \
	    echo "The browser tests need Chromium: sudo apt-get install chromium"; exit 1; \
	  fi; }

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "ScanLab needs Python 3.11; set PYTHON=/path/to/python3.11 (found " + sys.version.split()[0] + ")")'
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-run: requirements.lock | $(BIN)/python
	$(PIP) install -r requirements.lock
	touch $@

$(VENV)/.installed-test: requirements-test.lock $(VENV)/.installed-run
	$(PIP) install -r requirements-test.lock
	touch $@

$(VENV)/.installed-lab: requirements-lab.lock $(VENV)/.installed-run
	$(PIP) install -r requirements-lab.lock
	touch $@
