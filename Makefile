# pm_notebook — every target installs what it needs first, so each works on a fresh machine.
#
# Two distributions in one uv workspace: the client (pm-notebook, this folder) and the local stand-in of the
# service (pm-sandbox, sandbox/), which the client's `sandbox` extra brings.
# Python packages come from the lock file (uv.lock: every extra, every hash), installed by uv, itself pinned
# with hashes in requirements/uv.txt and bootstrapped with the machine's pip into .tools/. `make lock` refreshes
# the lock; `make test-oldest` / `make test-latest` run the suite on the two ends of pyproject.toml's ranges.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TOOLS  := .tools
UV     := $(TOOLS)/bin/uv
PYTEST_ARGS ?=
# the ends of the ranges: the oldest Python with the lowest direct dependencies, the newest with the newest
OLDEST_PYTHON ?= 3.10
LATEST_PYTHON ?= 3.13

# uv uses the Python it is given and never downloads one; its venvs are where the Makefile says
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

.PHONY: druid druid-stop druid-up test-druid install system-deps lint docs test test-oldest test-latest test-python lock demo lab sandbox bench java-helper clean labextension

$(UV): requirements/uv.txt
	rm -rf $(TOOLS)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-cache-dir --no-deps --require-hashes \
	  --target $(TOOLS) -r requirements/uv.txt
	touch $(UV)

# exactly the locked set (--locked: a lock that no longer matches pyproject.toml is an error, never re-resolved)
$(STAMP): pyproject.toml sandbox/pyproject.toml uv.lock $(UV)
	$(UV) sync --quiet --locked --all-extras --python $(PYTHON)
	touch $(STAMP)

install: $(STAMP)

# The test run imports most of the venv in every kernel it starts: bytecode compiled once (as pip does on
# install), so no process compiles it again, and third-party sources are never compiled under pytest's -W error.
$(VENV)/.compiled: $(STAMP)
	$(UV) sync --quiet --locked --all-extras --python $(PYTHON) --compile-bytecode
	touch $@

# The JupyterLab 4 / Notebook 7 extension (%%pmsql cells as Druid SQL), built from its TypeScript sources in
# labextension/ with the JupyterLab toolchain from the npm registry, exactly as labextension/package-lock.json pins
# it (npm ci), into labextension/dist/labextensions/pm-notebook, laid out as in share/jupyter (JUPYTER_PATH=
# labextension/dist finds it; the wheel ships it as share/jupyter/labextensions/pm-notebook). The function names
# come from the sandbox's function table; the core it is built against is the locked JupyterLab's (its staging
# folder), so no `jupyter lab build` is needed. Node (>= 18) and npm: Debian's nodejs and npm (make system-deps).
LABEXT     := labextension/dist/labextensions/pm-notebook
LABEXT_SRC := $(wildcard labextension/src/*.ts) $(wildcard labextension/style/*) labextension/package.json \
              labextension/tsconfig.json labextension/install.json

labextension/node_modules/.installed: labextension/package-lock.json
	cd labextension && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(LABEXT)/package.json: labextension/node_modules/.installed $(LABEXT_SRC) scripts/build-labextension.sh \
                        scripts/labext_functions.py sandbox/pm_sandbox/sql/dialect/functions.py $(STAMP)
	bash scripts/build-labextension.sh $(BIN)/python

labextension: system-deps $(STAMP) $(LABEXT)/package.json

lock: $(UV)
	$(UV) lock --upgrade

system-deps:
	bash scripts/system-deps.sh

# ruff, then mypy (what it checks and how strictly: [tool.mypy] in pyproject.toml).
lint: install
	$(BIN)/ruff check pm_notebook sandbox tests bench notebooks docs/conf.py conftest.py scripts druid
	$(BIN)/ruff format --check pm_notebook sandbox tests bench notebooks docs/conf.py conftest.py scripts druid
	$(BIN)/mypy

# The docs site (Sphinx + MyST-NB): warnings are errors.
docs: install
	$(BIN)/sphinx-build -W --keep-going -q -b html docs build/docs

# -X faulthandler: a crash even after pytest's own reporting (at interpreter exit) prints every thread's stack.
test: install $(VENV)/.compiled system-deps labextension lint docs
	$(BIN)/python -X faulthandler -m pytest $(PYTEST_ARGS)
	$(MAKE) test-druid

# The client's transport and mining tests once more, the session's sandbox in front of a real Druid
# (PM_TEST_DRUID=1, tests/conftest.py): PM_DRUID_URL/.druid/env's cluster, else one the session starts and
# stops. Tests of the stand-in's own behaviour are skipped with their reason (@pytest.mark.standin_only).
DRUID_TESTS = tests/sql tests/mining tests/lifecycle tests/druid/test_forward.py tests/sandbox_sql/test_jdbc.py \
  tests/sandbox_sql/test_avatica_frames.py tests/sandbox_sql/test_avatica_stream.py \
  tests/sandbox_sql/test_druid_stream.py tests/sandbox_sql/test_isolation.py
test-druid: install $(VENV)/.compiled system-deps
	PM_TEST_DRUID=1 $(BIN)/python -X faulthandler -m pytest $(DRUID_TESTS) $(PYTEST_ARGS)

# The suite on the lowest versions the ranges allow, and on today's newest releases (no lock), each in a venv
# of its own (tests/shipping installs the wheel at the same versions); the browser tests use the extension
# `make labextension` built. The notebooks' stored outputs are the locked set's (pandas 3): on the oldest set
# nbval compares them through a sanitizer for pandas 2's display.
test-oldest: $(UV) system-deps labextension
	$(MAKE) _test-range RANGE_VENV=.venv-oldest RANGE_PYTHON=$(OLDEST_PYTHON) RESOLUTION=lowest-direct \
	  PYTEST_ARGS="--nbval-sanitize-with notebooks/sanitize-pandas2.cfg $(PYTEST_ARGS)"

test-latest: $(UV) system-deps labextension
	$(MAKE) _test-range RANGE_VENV=.venv-latest RANGE_PYTHON=$(LATEST_PYTHON) RESOLUTION=highest

# The locked set on another supported Python (make test-python PY=3.12), in .venv-<PY>.
test-python: $(UV) system-deps
	UV_PROJECT_ENVIRONMENT=.venv-$(PY) $(UV) sync --quiet --locked --all-extras --compile-bytecode \
	  --python "$$(bash scripts/find-python.sh $(PY))"
	.venv-$(PY)/bin/python -X faulthandler -m pytest $(PYTEST_ARGS)

_test-range:
	rm -rf $(RANGE_VENV)
	$(UV) venv --quiet --python "$$(bash scripts/find-python.sh $(RANGE_PYTHON))" $(RANGE_VENV)
	VIRTUAL_ENV=$(RANGE_VENV) $(UV) pip install --quiet --compile-bytecode --resolution $(RESOLUTION) \
	  --no-config -e '.[all]' -e ./sandbox
	VIRTUAL_ENV=$(RANGE_VENV) $(UV) pip list --format freeze | grep -iE '^(duckdb|pandas|pyarrow|numpy|sqlglot)=='
	$(RANGE_VENV)/bin/python -X faulthandler -m pytest $(PYTEST_ARGS)

# A real Apache Druid 33.0.0 (druid/cluster.py: jars from Maven Central by druid/pom.xml, checked against
# druid/jars.sha256; ZooKeeper, Derby, coordinator-overlord, broker, historical, indexer on free loopback ports).
# Returns once the broker answers SQL; .druid/env then holds PM_DRUID_URL and PM_DRUID_COORDINATOR_URL.
druid: system-deps
	$(PYTHON) druid/cluster.py start

druid-stop:
	$(PYTHON) druid/cluster.py stop

# DRUID=1 (demo, lab): the sandbox in front of a real Druid (--druid): PM_DRUID_URL from the environment, else
# make druid's cluster from .druid/env (started first unless it runs). The projects are published there first.
DRUID_URL = $${PM_DRUID_URL:-$$(sed -n 's/^PM_DRUID_URL=//p' .druid/env)}
DRUID_UP = $(if $(filter 1,$(DRUID)),druid-up)

druid-up: system-deps
	@[ -n "$${PM_DRUID_URL:-}" ] || $(PYTHON) druid/cluster.py status | grep -q '"running": true' \
	  || $(PYTHON) druid/cluster.py start

demo: install $(DRUID_UP)
	$(BIN)/python -m pm_notebook.demo $(if $(filter 1,$(DRUID)),--druid "$(DRUID_URL)")

# JupyterLab on notebooks/ with a sandbox running and its PM_* values in the kernels' environment (binder/start);
# the sandbox stops when JupyterLab does. Jupyter refuses to run as root without --allow-root (containers often
# run as root), so that case asks for it.
lab: install labextension $(DRUID_UP)
	$(if $(filter 1,$(DRUID)),PM_SANDBOX_DRUID="$(DRUID_URL)") \
	PATH="$(CURDIR)/$(BIN):$$PATH" JUPYTER_PATH="$(CURDIR)/labextension/dist" bash binder/start jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

sandbox: install
	$(BIN)/python -m pm_sandbox --env-file .env.sandbox

bench: install system-deps
	$(BIN)/python bench/bench_server.py
	$(BIN)/python bench/bench_client.py

# Rebuild the column-wise JDBC reader shipped in the package (needs a JDK; users only need a JRE >= 11).
java-helper:
	cd pm_notebook/sql/java && rm -rf build && mkdir build \
	  && javac --release 11 -d build ColumnarReader.java \
	  && jar --create --file pm-columnar.jar -C build . && rm -rf build

clean:
	rm -rf $(VENV) .venv-oldest .venv-latest .venv-3.* $(TOOLS) build dist *.egg-info sandbox/build sandbox/*.egg-info .pytest_cache .ruff_cache test-artifacts \
	  labextension/dist labextension/node_modules labextension/lib labextension/tsconfig.tsbuildinfo
