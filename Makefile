# Two entry points a new user needs: `make demo` and `make test`. Both create .venv on demand.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test quick lint typecheck unit install browser sandbox-tools bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The demo starts from scratch each time so it shows a whole run; real runs are never deleted.
demo: $(STAMP) sandbox-tools
	rm -rf runs/demo
	$(BIN)/tally run configs/demo.toml
	$(BIN)/tally export runs/demo -o runs/demo/export.jsonl
	$(BIN)/tally report runs/demo
	@echo "run directory: runs/demo   export: runs/demo/export.jsonl   report: runs/demo/report.md"
	rm -rf runs/scored-demo
	$(BIN)/tally run configs/scored-demo.toml
	$(BIN)/tally report runs/scored-demo
	@echo "scored prompts: runs/scored-demo/report.md"

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# The browser tests of `tally view` drive Debian's chromium through Playwright (whose own browser
# download does not work here), so install it when it is missing. Without it (no root, no apt)
# those tests fail and say how to get it; they are never skipped.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium for the browser tests (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; \
	} || echo "warning: could not install chromium; the browser tests will fail"

# Code a model or a data file supplies (DexBench verification, CTE replays) runs only inside
# bubblewrap's namespaces; without bwrap nothing is verified. Install Debian's package when it
# is missing, as for chromium; without it (no root, no apt) those tests fail and say how to get it.
sandbox-tools:
	@command -v bwrap >/dev/null 2>&1 || { \
	  echo "installing bubblewrap for the verification sandbox (apt-get)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq bubblewrap >/dev/null; \
	} || echo "warning: could not install bubblewrap; DexBench verification will refuse to run"

unit: $(STAMP) browser sandbox-tools
	$(BIN)/pytest -q -p no:cacheprovider

test: lint typecheck unit

# The inner loop: every test that starts no process (no `tally`, no mock provider process, no
# browser, no sandboxed child); `make test` stays the full gate (docs/testing.md).
quick: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -m "not process and not slow"

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) runs .mypy_cache .ruff_cache
