# pm_notebook — every target installs what it needs first, so each works on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: install system-deps lint test demo sandbox bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all]'
	touch $(STAMP)

install: $(STAMP)

system-deps:
	bash scripts/system-deps.sh

lint: install
	$(BIN)/ruff check pm_notebook tests bench

test: install system-deps lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

demo: install
	$(BIN)/python -m pm_notebook.demo

sandbox: install
	$(BIN)/python -m pm_notebook.sandbox --env-file .env.sandbox

bench: install system-deps
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache test-artifacts
