# The two commands: `make run` starts the service, `make test` runs the whole suite.
# Both create the virtualenv from pyproject.toml, and install Debian's redis-server when it is missing.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test worker bench lint typecheck check redis-server clean

run: $(STAMP) redis-server
	$(BIN)/python -m server

worker: $(STAMP)
	$(BIN)/python -m workers

test: $(STAMP) redis-server
	$(BIN)/python -m pytest -q

bench: $(STAMP) redis-server
	@command -v wrk >/dev/null 2>&1 || { \
	  echo "installing wrk (Debian package)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; \
	}
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check server workers tests bench
	$(BIN)/ruff format --check server workers tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# redis-server comes from the machine (Debian's package), installed here when missing
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "installing redis-server (Debian package)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	}

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
