# pm_notebook — every target installs what it needs first, so each works on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: install system-deps lint docs test demo lab sandbox bench java-helper clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all]'
	touch $(STAMP)

install: $(STAMP)

system-deps:
	bash scripts/system-deps.sh

# ruff, then mypy (what it checks and how strictly: [tool.mypy] in pyproject.toml).
lint: install
	$(BIN)/ruff check pm_notebook tests bench notebooks docs/conf.py conftest.py scripts
	$(BIN)/ruff format --check pm_notebook tests bench notebooks docs/conf.py conftest.py scripts
	$(BIN)/mypy

# The docs site (Sphinx + MyST-NB): warnings are errors.
docs: install
	$(BIN)/sphinx-build -W --keep-going -q -b html docs build/docs

# -X faulthandler: a crash even after pytest's own reporting (at interpreter exit) prints every thread's stack.
test: install system-deps lint docs
	$(BIN)/python -X faulthandler -m pytest $(PYTEST_ARGS)

demo: install
	$(BIN)/python -m pm_notebook.demo

# JupyterLab on notebooks/ with a sandbox running and its PM_* values in the kernels' environment (binder/start);
# the sandbox stops when JupyterLab does.
lab: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash binder/start jupyter lab notebooks/

sandbox: install
	$(BIN)/python -m pm_notebook.sandbox --env-file .env.sandbox

bench: install system-deps
	$(BIN)/python bench/bench_server.py
	$(BIN)/python bench/bench_client.py

# Rebuild the column-wise JDBC reader shipped in the package (needs a JDK; users only need a JRE >= 11).
java-helper:
	cd pm_notebook/sql/java && rm -rf build && mkdir build \
	  && javac --release 11 -d build ColumnarReader.java \
	  && jar --create --file pm-columnar.jar -C build . && rm -rf build

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache test-artifacts
