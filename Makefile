# Every target sets itself up: the first command on a fresh clone just works.
# Installs come from uv.lock (the whole dependency tree, pinned with hashes); only
# python3 and PyPI are needed. uv itself is pinned and lives in .tools/, apart from the
# project's .venv, so that an exact sync of .venv never removes it.
PYTHON ?= python3
UV_VERSION := 0.13.9
VENV := .venv
BIN := $(VENV)/bin
TOOLS := .tools
UV := $(TOOLS)/bin/uv
RUNTIME := $(VENV)/.runtime-installed
DEV := $(VENV)/.dev-installed
STALE := (uv.lock out of date after a pyproject.toml edit? run: make lock)

# The interpreter is $(PYTHON), never one uv would download; .venv is the project's.
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# A shell with PYTHONDONTWRITEBYTECODE set (this machine's sessions have it) makes every
# Python process compile its imports from source again: each `chatgate` subprocess of
# the suite then costs ~4 s of CPU instead of ~1.5 s. The caches are Python's own.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test check bench lock config-example clean

$(UV):
	@echo "fetching uv $(UV_VERSION), the installer (first run only)…"
	@$(PYTHON) -m venv $(TOOLS)
	@$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# --locked: a pyproject.toml edited without `make lock` stops here and says so.
# --inexact: a later `make run` keeps the dev tools that `make test` installed.
$(RUNTIME): pyproject.toml uv.lock | $(UV)
	@echo "installing chatgate's runtime dependencies from the lock (first run only, about 10–20 s)…"
	@$(UV) sync --locked --no-dev --inexact --quiet || { echo "$(STALE)" >&2; exit 1; }
	@touch $@

$(DEV): pyproject.toml uv.lock | $(UV)
	@echo "installing chatgate with its dev tools from the lock (first run only, about 10–30 s)…"
	@$(UV) sync --locked --extra dev --quiet || { echo "$(STALE)" >&2; exit 1; }
	@touch $@ $(RUNTIME)

# exec: the gateway replaces the recipe's shell, so a stop signal reaches it directly
# and its exit status (0 after a requested stop) is the target's.
run: $(RUNTIME)
	@exec $(BIN)/chatgate run

test: $(DEV)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

check: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(DEV)
	$(BIN)/python bench/throughput.py

# After editing pyproject.toml's dependencies: resolve what changed, keep the other pins.
# `make lock UPGRADE=1` moves every pin to the newest release within its range.
# Commit the new uv.lock either way.
lock: | $(UV)
	$(UV) lock $(if $(UPGRADE),--upgrade)

# deploy/config.example.yaml is what `chatgate init` writes; regenerate it after a
# settings change (tests/test_deploy_files.py fails until then).
config-example: $(RUNTIME)
	$(BIN)/python -c 'from gateway.config import starter_config; print(starter_config(), end="")' \
		> deploy/config.example.yaml

clean:
	rm -rf $(VENV) $(TOOLS) .mypy_cache .pytest_cache .ruff_cache
