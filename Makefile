# The two commands: `make run` starts the service, `make test` runs the whole suite.
# Both create the virtualenv from pyproject.toml (run: the runtime dependencies; test: the test tools too),
# and install Debian's redis-server when it is missing.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# the official JS SDKs the tests drive (tests/js_sdk.py), installed as tests/js/package-lock.json locks them
JS := tests/js
JS_STAMP := $(JS)/node_modules/.installed

.PHONY: run test worker bench lint typecheck check redis-server chromium js-sdks clean delete-data

run: $(RUN_STAMP) redis-server
	$(BIN)/python -m server

worker: $(RUN_STAMP)
	$(BIN)/python -m workers

# three processes, a module each at a time (its shared stacks stay in one process): the suite mostly waits
# on servers, so this halves its time on two cores; `pytest tests/x.py` alone runs in one process
test: $(TEST_STAMP) redis-server chromium $(JS_STAMP)
	$(BIN)/python -m pytest -q -n 3 --dist loadfile

bench: $(TEST_STAMP) redis-server
	@command -v wrk >/dev/null 2>&1 || { \
	  echo "installing wrk (Debian package)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; \
	}
	$(BIN)/python -m bench

lint: $(TEST_STAMP)
	$(BIN)/ruff check server workers tests bench
	$(BIN)/ruff format --check server workers tests bench

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

check: lint typecheck test

$(RUN_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "Python 3.11 or newer is needed ($(PYTHON) is $$($(PYTHON) --version 2>&1)); set PYTHON=python3.x"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): $(RUN_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

# redis-server comes from the machine (Debian's package), installed here when missing
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "installing redis-server (Debian package)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	}

# the browser tests (tests/browser/) drive Debian's Chromium through Playwright, which never downloads one
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (Debian package)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	}

# node and npm come from the machine (Debian's packages when missing); `npm ci` installs exactly what the lock
# file says into tests/js/node_modules (kept out of git), again when package.json or the lock file change. No
# package's install script runs: the SDKs are plain JS. Both SDKs declare node >= 22 (npm's EBADENGINE
# warning, silenced here); what the tests use of them runs on node 20 as well
js-sdks: $(JS_STAMP)

$(JS_STAMP): $(JS)/package.json $(JS)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  echo "installing node and npm (Debian packages)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	}
	cd $(JS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# the virtualenv, the JS SDKs and the tools' caches; the stored interactions (var/) stay
clean:
	rm -rf $(VENV) $(JS)/node_modules .pytest_cache .mypy_cache .ruff_cache

# every stored interaction of `make run` (refused while a server runs on the data)
delete-data: $(RUN_STAMP)
	$(BIN)/python -m server --delete-data
