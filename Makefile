# Two entry points a new user needs: `make demo` and `make test`. Both create .venv on demand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit install bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/tally run configs/demo.toml --fresh
	$(BIN)/tally export runs/demo -o runs/demo/export.jsonl
	@echo "run directory: runs/demo   export: runs/demo/export.jsonl"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) runs .mypy_cache .ruff_cache
