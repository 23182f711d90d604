# `make run` serves the dashboard; `make test` runs the whole suite. Both set up .venv first.
# The newest supported Python that runs (a pyenv shim may name one that does not); PYTHON=... to pick.
SUPPORTED = (3, 11) <= sys.version_info[:2] <= (3, 13)
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
  $$p -c 'import sys; sys.exit(not ($(SUPPORTED)))' 2>/dev/null && command -v $$p && break; done)
# One environment per checkout; `make test VENV=.venv-3.13 PYTHON=python3.13` keeps another beside it.
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8866
LAB_PORT ?= 8888
HOST ?= 127.0.0.1
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
# No accelerator is needed; skipping the probe saves a second at every start.
export JAX_PLATFORMS ?= cpu

.PHONY: run test check quick screenshots lab lab-env class class-report hub-pin lint lock clean chromium bench load faults \
  plotly-js axe-core

# Compiled XLA programs are kept on disk, so a new kernel loads the engine instead of compiling it
# (not for `make test`, whose tests count compiles).
JAX_CACHE := $(CURDIR)/.cache/jax
run lab class: export JAX_COMPILATION_CACHE_DIR ?= $(JAX_CACHE)
run lab class: export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS ?= 0
# glibc gives every thread that allocates its own heap arena, and XLA's compile threads leave them
# half full: two arenas cut a process running the explorer at N=1000, B=512 from 435 to 317 MB RSS.
run lab class: export MALLOC_ARENA_MAX ?= 2

# Kernels (serving/): at most MAX_KERNELS at once, the preheated one included, and a visitor over the
# cap gets a "busy, try again in a minute" page; kernels without a connection for CULL_IDLE_TIMEOUT
# seconds are shut down, checked every CULL_INTERVAL seconds. Left empty, voila.json's values hold
# (40 kernels, 600 s, 60 s). E.g. `make run MAX_KERNELS=20`.
MAX_KERNELS ?=
# Kernels started ahead of visitors (voila.json: 1). Each holds about 115 MB of its own while it waits.
# After a visitor takes one, or any kernel stops, the pool starts a replacement FILL_DELAY seconds later
# (Voila: 1). For a class, fill the pool before it starts and keep the refills out of the rush, whose
# CPU they would share: e.g. `make run POOL_SIZE=30 FILL_DELAY=3600` (docs/classroom.md).
POOL_SIZE ?=
FILL_DELAY ?=
CULL_IDLE_TIMEOUT ?=
CULL_INTERVAL ?=
# The page template with its stopped-kernel notice and busy page, the kernel cap, the `_xsrf`
# cookie that lets a closing tab shut its kernel down, and the dashboard's own kernel (no debugger,
# no docstrings: serving/dashboard_kernel.py). On the command line, not in voila.json: Voila's
# server extension (Binder, JupyterHub) reads voila.json too, and has neither `serving` on its path
# nor the template. `python -m voila` puts the repository on the server's path; Voila finds
# templates on JUPYTER_PATH.
SERVING = --template=scanlab \
  --NotebookNotary.data_dir=$(NOTARY) --KernelManager.transport=ipc \
  --KernelManager.transport_encryption=auto \
  --VoilaConfiguration.multi_kernel_manager_class=serving.kernels.CappedKernelManager \
  --VoilaConfiguration.kernel_spec_manager_class=serving.kernels.DashboardKernelSpecManager \
  --Voila.identity_provider_class=serving.identity.XsrfCookieIdentityProvider \
  $(if $(MAX_KERNELS),--CappedKernelManager.max_kernels=$(MAX_KERNELS)) \
  $(if $(POOL_SIZE),--VoilaConfiguration.default_pool_size=$(POOL_SIZE)) \
  $(if $(FILL_DELAY),--VoilaKernelManager.fill_delay=$(FILL_DELAY)) \
  $(if $(CULL_IDLE_TIMEOUT),--MappingKernelManager.cull_idle_timeout=$(CULL_IDLE_TIMEOUT)) \
  $(if $(CULL_INTERVAL),--MappingKernelManager.cull_interval=$(CULL_INTERVAL))
# What Voila and its kernels would log at every visit, and why they no longer do (docs/classroom.md):
# - "Notebook app.ipynb is not trusted": Voila checks the notebook's signature at each page and
#   preheated kernel. make run signs it (serving/trust.py, again when it changes) in a notary of its
#   own, NOTARY, which Voila is given with --NotebookNotary.data_dir.
# - "Kernel is running over TCP without encryption": jupyter_client provisions CurveZMQ keys for a
#   kernel whose spec says it supports them (serving/kernelspecs/python3/kernel.json) when
#   transport_encryption is auto; the kernel then encrypts its sockets and says nothing.
# Kernels talk to the server over Unix sockets beside their connection files (transport=ipc), not
# TCP: a TCP port is picked free and bound by the kernel a moment later, and in a class arriving at
# once another connection took one in between ("Address already in use"): that kernel died, its
# page stayed blank.
NOTARY := $(CURDIR)/.cache/jupyter
run: export JUPYTER_PATH := $(CURDIR)/serving/jupyter$(if $(JUPYTER_PATH),:$(JUPYTER_PATH))
# A preheated kernel asks the server for its visitor's request at VOILA_APP_IP (widgets/preheat.py),
# 127.0.0.1 unless set: a server bound to one other address would never answer, and every visitor
# would get the default settings instead of their link's.
run: export VOILA_APP_IP := $(if $(filter 0.0.0.0 :: localhost,$(HOST)),127.0.0.1,$(HOST))

# make run's kernels run under python -OO (serving/dashboard_kernel.py), which reads only
# *.opt-2.pyc files: pip writes none, and a kernel without them compiled every module it imports
# from source, about 2 s of CPU more each (PYTHONDONTWRITEBYTECODE, or a read-only .venv, keeps it
# from writing them). Each is compiled where it changes: .venv's packages after each pip install
# (in parallel), the project's own modules at each make run (0.02 s when nothing changed; checking
# .venv there too took 0.3 to 0.6 s). Where they cannot be written, kernels start slower, nothing
# more.
compile_oo = $(BIN)/python -OO -m compileall -q $(1) > /dev/null || \
  echo "Not all modules compiled for python -OO: dashboard kernels will compile them as they start." >&2

# sqlite updates the database at every check, so it is newer than app.ipynb until app.ipynb changes.
$(NOTARY)/nbsignatures.db: app.ipynb | $(VENV)/.installed-run
	@$(BIN)/python -m serving.trust $(NOTARY) $(CURDIR)/app.ipynb || \
	  echo "Could not mark app.ipynb trusted: Voila will log \"not trusted\" at every visit." >&2

run: $(VENV)/.installed-run $(NOTARY)/nbsignatures.db
	@# Plotly.js, served once per browser instead of inside every chart's widget state
	@# (widgets/surface.py: PLOTLY_PATH); voila.json allows exactly such files.
	@$(BIN)/python tools/plotly_bundle.py
	@$(call compile_oo,core widgets serving)
	@echo "Starting the dashboard. Let visitors in once it logs \"The dashboard is ready for N visitors\":"
	@echo "then a preheated kernel waits for each of the first N (POOL_SIZE; docs/classroom.md)."
	$(BIN)/python -m voila app.ipynb --no-browser --port=$(PORT) --Voila.ip=$(HOST) $(SERVING)

# tests/conftest.py marks each test from the fixtures it uses: `browser` (Chromium), `served` (a
# `make run`), `lab` (a Jupyter server); `slow` marks in-process tests that take minutes together.
OUTSIDE := not browser and not served and not lab
# Test modules run in TEST_WORKERS processes (pytest-xdist), each module whole in one of them
# (loadscope; tests/conftest.py keeps a few modules that share a cache together): its module fixtures
# (a server, a browser) start once, and its tests keep their order. The longest modules are handed out
# first (tests/conftest.py orders them by SECONDS, in harness/support/marks.py; xdist's own order, by
# number of tests, is turned off), so the run does not end on one of them.
# Compile counts are per process, so they stay exact. One process per core: on two cores the suite
# is CPU-bound, and 3 or 4 processes finished no sooner (docs/testing.md has the figures).
TEST_WORKERS ?= 2

# Everything, with the 30 slowest tests named at the end. tests/test_lab.py opens exercise.ipynb in
# JupyterLab, from make lab's environment (lab-env). The notary is made before the servers start
# together, so that none of them writes its secret while another reads it.
test: $(VENV)/.installed-test chromium lab-env $(NOTARY)/nbsignatures.db
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder --durations=30

# The edit loop, on every edit: no browser, no served page, no Jupyter server, no slow test. Its
# tests use the CPU throughout, so one process per core (QUICK_WORKERS). lab-env for nbstripout,
# the notebook filter test_project runs (seconds from pip's cache).
QUICK_WORKERS ?= 2
quick: $(VENV)/.installed-test lab-env
	$(BIN)/python -m pytest -m "$(OUTSIDE) and not slow" -n $(QUICK_WORKERS) --dist loadscope --no-loadscope-reorder

# Before a commit: quick and the slow in-process tests (the learner corpus, notebooks through nbclient).
check: $(VENV)/.installed-test lab-env
	$(BIN)/python -m pytest -m "$(OUTSIDE)" -n $(QUICK_WORKERS) --dist loadscope --no-loadscope-reorder

# The README's pictures (docs/screenshot*.png: 1440x900, 1024x768 ?view=projector, a 390 px phone,
# the Diverging preset),
# taken from `make run` in Chromium; e.g. `make screenshots VIEWS=screenshot-phone` for one.
VIEWS ?=
screenshots: $(VENV)/.installed-test chromium
	$(BIN)/python -m tools.screenshots $(VIEWS)

# A notebook in JupyterLab: the lesson (app.ipynb), or `make lab NOTEBOOK=exercise.ipynb`.
# JupyterLab goes into the same environment as the dashboard: requirements-lab.lock adds 8 packages
# (51 MB, 2.6 s from pip's cache) and pins none of requirements.lock's, so `make run` serves the same
# packages with it or without it (Voila's standalone server loads no Jupyter server extension, and
# JupyterLab adds no labextension to Voila's page). A second environment for it took 1.1 GB.
# LAB_VENV=.venv-lab keeps one apart anyway. (Notebook 7.6 runs the notebooks too, checked by hand.)
LAB_VENV ?= $(VENV)
NOTEBOOK ?= app.ipynb
# The link it prints opens the notebook itself (LabApp's default_url; ServerApp's is not the one
# printed). serving/jupyter/lab-settings/overrides.json turns off the "Jupyter news?" pop-up.
LAB_OPTIONS = --LabApp.app_settings_dir=$(CURDIR)/serving/jupyter/lab-settings
# The servers run from this make, not a make within it: a nested make dies of the Ctrl-C (or
# SIGTERM) after its child has stopped cleanly, and the outer one then prints "make: *** ... Interrupt".
lab: lab-env
	$(LAB_VENV)/bin/jupyter lab --no-browser --port=$(LAB_PORT) --ServerApp.ip=$(HOST) \
	  --LabApp.default_url=/lab/tree/$(NOTEBOOK) $(LAB_OPTIONS) $(if $(filter 0,$(shell id -u)),--allow-root)
lab-env:
	@$(MAKE) --no-print-directory VENV=$(LAB_VENV) $(LAB_VENV)/.installed-lab

# The exercise for a class on this machine: a JupyterLab server per student (ports CLASS_PORT+1 ...),
# each with its own token, kernel and copy of exercise.ipynb in CLASS_DIR/student-NN, copied once and
# never overwritten (serving/classroom.py). E.g. `make class STUDENTS=30 HOST=0.0.0.0`; it prints each
# student's link (also in CLASS_DIR/links.txt). Students run code as you: docs/classroom.md.
STUDENTS ?= 30
CLASS_DIR ?= $(HOME)/scanlab-class
CLASS_PORT ?= 8900
CLASS_ARGS ?=
class: lab-env
	$(LAB_VENV)/bin/python -m serving.classroom --students $(STUDENTS) --dir $(CLASS_DIR) --host $(HOST) \
	  --port $(CLASS_PORT) $(CLASS_ARGS)

# The class report: every student's exercise.ipynb under CLASS_DIR checked (a process per notebook,
# as many at once as there are cores), one table printed and CLASS_DIR/report/ written (report.html,
# report.csv, report.json, a Gradescope results.json per student). `make class` serves the same page
# to the teacher while the class works. E.g. `make class-report REPORT_ARGS="--collected ~/hub-notebooks"`.
REPORT_ARGS ?=
class-report: $(VENV)/.installed-run
	$(BIN)/python -m serving.class_report --dir $(CLASS_DIR) $(REPORT_ARGS)

# Every benchmark (a few minutes), one table against the targets of docs/performance.md; also kept
# in .cache/bench.md.
bench: $(VENV)/.installed-test chromium
	$(BIN)/python -m benchmarks.report --browser --out .cache/bench.md

# A class on one machine: 30 dashboard sessions (2 of them Chromium pages) arrive over a
# minute and move lr, N, B and w0 until a minute after the last one opened, against `make run` on a
# free port with a preheated kernel for each (POOL_SIZE=30 FILL_DELAY=3600, as docs/classroom.md
# says to serve a class). One table, also kept in .cache/load.md; about 6 minutes.
# E.g. `make load LOAD_ARGS="--sessions 10 --browsers 0"`.
LOAD_ARGS ?=
load: $(VENV)/.installed-test chromium
	$(BIN)/python -m benchmarks.load --out .cache/load.md $(LOAD_ARGS)

# A classroom's faults: 200 injected into 2 dashboard pages in Chromium (network cuts during drags,
# typed moves, the map's work and Play; tabs asleep; kernels killed; the server started again), each
# page checked true after each, then 40 into a student's exercise saves in JupyterLab
# (benchmarks/faults.py, docs/faults.md). About 40 minutes; also kept in .cache/faults.md.
# E.g. `make faults FAULTS_ARGS="--faults 40 --saves 8"`.
FAULTS_ARGS ?=
faults: $(VENV)/.installed-test chromium
	$(BIN)/python -m benchmarks.faults --out .cache/faults.md $(FAULTS_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .

lock:
	tools/lock.sh

# Plotly.js's cartesian bundle (widgets/vendor/plotly.js/), of the version plotly.py ships: after an
# upgrade of plotly, this fetches the matching one from the npm registry (a test fails until it is run),
# kept gzipped: others' code, not a module of ScanLab's widgets.
plotly-js: $(VENV)/.installed-run
	@version=$$($(BIN)/python -c 'import plotly.offline; print(plotly.offline.get_plotlyjs_version())') && \
	  work=$$(mktemp -d) && cd $$work && npm pack -s plotly.js-cartesian-dist-min@$$version && \
	  tar xzf plotly.js-cartesian-dist-min-$$version.tgz && \
	  gzip -9 -n -c package/plotly-cartesian.min.js > $(CURDIR)/widgets/vendor/plotly.js/plotly-cartesian.min.js.gz && \
	  cp package/LICENSE $(CURDIR)/widgets/vendor/plotly.js/ && rm -rf $$work && \
	  echo "widgets/vendor/plotly.js/plotly-cartesian.min.js.gz: plotly.js $$version"

# Move deploy/jupyterhub's image pin to the newest commit that changed what the image runs
# (tools/hub_pin.py; tests/test_deploy.py fails while the pin is stale). Commit deploy/ after.
hub-pin:
	@$(PYTHON) tools/hub_pin.py

# axe-core, the accessibility rules the browser tests run (tests/test_accessibility.py), vendored
# from the npm registry at this version (a test checks the file against it).
AXE_CORE ?= 4.14.1
axe-core:
	@work=$$(mktemp -d) && cd $$work && npm pack -s axe-core@$(AXE_CORE) && tar xzf axe-core-$(AXE_CORE).tgz && \
	  cp package/axe.min.js package/LICENSE $(CURDIR)/vendor/axe-core/ && rm -rf $$work && \
	  echo "vendor/axe-core/axe.min.js: axe-core $(AXE_CORE)"

clean:
	rm -rf $(VENV) $(LAB_VENV)

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
	@test -n "$(PYTHON)" || { echo "ScanLab needs Python 3.11, 3.12 or 3.13 on PATH, or PYTHON=/path/to/python3.x"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if $(SUPPORTED) else "ScanLab needs Python 3.11 to 3.13; set PYTHON=/path/to/python3.x (found " + sys.version.split()[0] + ")")'
	@echo "Creating $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV)

# pip runs quietly (its own output is hundreds of lines): each step says first what it does and that
# it takes a while, so that a first `make run` is not a silent minute or more.
$(VENV)/.installed-run: requirements.lock | $(BIN)/python
	@echo "Installing the dashboard's packages (JAX, Voila, Plotly, ...) into $(VENV) from"
	@echo "requirements.lock: the first time, this downloads and installs them (1.2 GB) and takes a few minutes."
	@$(PIP) install -r requirements.lock
	@echo "Compiling them for the dashboard's kernels (python -OO)..."
	@$(call compile_oo,-j0 $(VENV)/lib)
	@touch $@
	@echo "$(VENV) is ready."

$(VENV)/.installed-test: requirements-test.lock $(VENV)/.installed-run
	@echo "Installing the test tools (pytest, Playwright, ruff, ...) into $(VENV): the first time, this can take a few minutes."
	@$(PIP) install -r requirements-test.lock
	@$(call compile_oo,-j0 $(VENV)/lib)
	@touch $@

# In a git checkout, notebooks go into commits without outputs or widget state (.gitattributes): git
# runs nbstripout on each one it stores, keeping cell ids (its own --install would renumber them).
NBSTRIPOUT = "$(abspath $(VENV))/bin/python" -m nbstripout --keep-id
$(VENV)/.installed-lab: requirements-lab.lock $(VENV)/.installed-run
	@echo "Adding JupyterLab (make lab, make class, the exercise's tests) to $(VENV): about 50 MB, in"
	@echo "seconds once downloaded; the dashboard's packages stay as they are."
	@$(PIP) install -r requirements-lab.lock
	@$(call compile_oo,-j0 $(VENV)/lib)
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean '$(NBSTRIPOUT)' && git config filter.nbstripout.smudge cat && \
	  git config diff.ipynb.textconv '$(NBSTRIPOUT) -t'; fi
	@touch $@
