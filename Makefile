# Two commands: `make run` and `make test`. Everything else is set up by them.
PYTHON ?= python3
# pytest-xdist workers for `make test`: auto is one per core; tests/conftest.py groups the tests.
TEST_WORKERS ?= auto
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# axe-core, pinned by its package-lock.json, for the pages' accessibility test.
AXE    := tests/browser/axe/node_modules/axe-core/axe.min.js

# The tools nobody here wrote that tests/clients runs: openapi-python-client in a venv of its own
# (it pins an older typer than the CLI needs), the npm packages as package-lock.json pins them.
GENERATORS       := $(VENV)/generators
GENERATORS_STAMP := $(GENERATORS)/.installed
NODE_PROJECT     := tests/clients/ts
NODE_STAMP       := $(NODE_PROJECT)/node_modules/.package-lock.json

.PHONY: install run test soak lint typecheck unit bench contracts clean spades bots audit lag clients

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(AXE): tests/browser/axe/package-lock.json
	cd tests/browser/axe && npm ci --no-audit --no-fund --silent
	touch $(AXE)

clients: $(GENERATORS_STAMP) $(NODE_STAMP)

$(GENERATORS_STAMP): tests/clients/python/requirements.txt
	test -x $(GENERATORS)/bin/python || $(PYTHON) -m venv $(GENERATORS)
	$(GENERATORS)/bin/python -m pip install --quiet -r tests/clients/python/requirements.txt
	touch $(GENERATORS_STAMP)

# npm ci only when package-lock.json changed (npm writes node_modules/.package-lock.json).
$(NODE_STAMP): $(NODE_PROJECT)/package-lock.json
	npm ci --prefix $(NODE_PROJECT) --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

run: install
	$(BIN)/spades up

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Every test but the long soaks and measurements (marked `soak`), which `make soak` runs one at a
# time (beside another test on two cores, a quiet figure is no longer quiet); CI runs both.
test: lint $(AXE) clients
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup --durations=15 -m "not soak"

soak: install
	$(BIN)/pytest -m soak --durations=10

# The common commands, beside `make run` (they find its stack by themselves).
spades: install
	$(BIN)/spades $(ARGS)

bots: install
	$(BIN)/spades bots --games 4

audit: install
	@test -n "$(GAME)" || { echo "usage: make audit GAME=<game id> [HAND=<n>]" >&2; exit 2; }
	$(BIN)/spades audit $(GAME) $(if $(HAND),--hand $(HAND))

lag: install
	$(BIN)/spades projections lag

bench: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/spades bench engine --hands 2000 --preset partnership --seed 1

contracts: install
	$(BIN)/spades contracts write

clean:
	rm -rf $(VENV) var .mypy_cache .pytest_cache .ruff_cache tests/browser/axe/node_modules \
	  $(NODE_PROJECT)/node_modules
