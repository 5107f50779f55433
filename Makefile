# The README's two commands work on a fresh machine:
# each creates .venv and installs what it needs first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1:8000

.PHONY: serve test check lockcheck lockverify lint typecheck format pytest jstest matrix bench lock upgrade install install-dev clean

# The targets of this site's own apps, each in its config/<app>/make.mk.
include $(wildcard config/*/make.mk)


# Production: settings from the environment alone (docs/deploy.md); gunicorn for HTTP on $(HOST), and
# uvicorn for the sandbox's WebSocket when it is mounted (config/serve.py). Debug is off unless DJANGO_DEBUG
# says otherwise, and then the start is refused; with debug off no step reads .env. `check --deploy` runs
# before migrate and again before serving; any error refuses the start, exit 1 (docs/settings.md lists the ids).
serve: export DJANGO_DEBUG ?= 0
serve: install
	$(PY) -m config.serve --check
	$(PY) manage.py migrate --no-input
	$(PY) manage.py collectstatic --no-input --verbosity 0
	HOST=$(HOST) $(PY) -m config.serve

test: install-dev lockcheck lint typecheck pytest jstest matrix

# The quick loop: the linters and the tests that start no server of their own (docs, settings, imports, the route).
check: install-dev lint
	$(VENV)/bin/pytest -q -p no:cacheprovider tests/test_settings_reference.py tests/test_spec_coverage.py tests/test_architecture.py tests/config/test_views.py tests/mintroute/test_live.py

# The lock (tests/lock.py): every package, direct or transitive, pinned with its hashes. `make lock` after
# changing a dependency in pyproject.toml: uv resolves uv.lock and exports requirements.txt (the demo's) and
# requirements-dev.txt (the tests'). `make upgrade` moves every pin to its newest release. `make test` fails
# first, saying to run `make lock`, when the lock disagrees with pyproject.toml.
lockcheck: install-dev
	$(PY) -m tests.lock check

lock: install-dev
	$(PY) -m tests.lock write

upgrade: install-dev
	$(PY) -m tests.lock upgrade

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

pytest: install-dev
	$(VENV)/bin/pytest

# The test matrix (noxfile.py): the route's, the SDK's and the standalone tests on every supported
# pair of Python (3.11, 3.12, 3.13, found on this machine) and Django (5.2, 6.0, 6.1), one environment
# each under .nox/, MATRIX_JOBS pairs at a time (most of a pair's time is spent waiting on the
# subprocesses of its standalone tests). With CI set, a missing interpreter fails it. One pair:
# `.venv/bin/nox -s "tests(python='3.13', django='6.1')"`.
MATRIX_JOBS ?= 2
matrix: install-dev
	$(VENV)/bin/nox --tags matrix --parallel $(MATRIX_JOBS)

# Benchmarks (not part of `make test`): starts its own servers on 127.0.0.1 and prints one table.
# Uses the Redis on 127.0.0.1:6379 for the two-process fan-out row when it is running.
bench: install-dev
	$(PY) -m tests.bench.run_bench

# The browser client's unit tests: Node's own runner, nothing from npm. The client's folder is an
# ES module package (its package.json says "type": "module"), so Node never guesses.
jstest:
	node --test --test-timeout=30000 tests/js/

# The browser client's .d.ts and a usage example, compiled by the pinned TypeScript (tests/types/).
# The .d.ts twice: with the DOM library (a web page) and without it (React Native, "lib": ["es2022"]).
typecheck: tests/types/node_modules/.installed
	tests/types/node_modules/.bin/tsc -p tests/types
	tests/types/node_modules/.bin/tsc -p tests/types/tsconfig.no-dom.json
	tests/types/node_modules/.bin/tsc -p tests/types/tsconfig.checkjs.json

tests/types/node_modules/.installed: tests/types/package.json tests/types/package-lock.json
	npm ci --prefix tests/types --no-audit --no-fund --loglevel=error
	touch $@

format: install-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# Hash-checked: only the files whose hashes the lock holds, and nothing the lock does not name. pip
# (the venv's own) installs uv, the lock's tool, from its hashed lines in requirements-dev.txt; uv then
# installs the rest, checking every hash (`--require-hashes`), many times faster than pip would; it
# compiles the bytecode as pip does, so that every later start is quick even under PYTHONDONTWRITEBYTECODE.
UV := $(VENV)/bin/uv
UV_INSTALL := $(UV) pip install --quiet --python $(PY) --require-hashes --no-deps --compile-bytecode

# Before any of that, the machine's own Python, with its standard library only (-I -S), checks both
# requirements files against uv.lock and pyproject.toml (tests/lockfile.py): a line added or a hash changed
# by hand fails here, saying to run `make lock`, and nothing from the file is installed or run.
lockverify:
	$(PYTHON) -I -S tests/lockfile.py

$(VENV)/bin/python: | lockverify
	$(PYTHON) -m venv $(VENV)

$(UV): requirements-dev.txt | lockverify $(VENV)/bin/python
	$(PY) -m tests.lock entry requirements-dev.txt uv > $(VENV)/uv-requirement.txt
	$(PY) -m pip install --quiet --require-hashes --no-deps -r $(VENV)/uv-requirement.txt
	touch $@

$(VENV)/.installed: requirements.txt | lockverify $(UV)
	$(UV_INSTALL) -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | lockverify $(UV)
	$(UV_INSTALL) -r requirements-dev.txt
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache tests/types/node_modules
