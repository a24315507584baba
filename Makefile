# Every target sets itself up: the first command on a fresh clone just works.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/chatgate run

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/throughput.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
