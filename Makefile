# The README's two commands work on a fresh machine:
# each creates .venv and installs what it needs first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1:8000

.PHONY: serve test check conflicts lockcheck lockverify lint typecheck format pytest pytest-parallel pytest-check jstest bench lock upgrade install install-dev clean

# A bare `make` is the quick loop.
.DEFAULT_GOAL := check

# What `make test` runs side by side; a fragment below may add to it.
GATE_JOBS := conflicts lint typecheck pytest-parallel jstest



# Production: settings from the environment alone (docs/deploy.md); gunicorn for HTTP on $(HOST), and
# uvicorn for the sandbox's WebSocket when it is mounted (config/serve.py). Debug is off unless DJANGO_DEBUG
# says otherwise, and then the start is refused; with debug off no step reads .env. `check --deploy` runs
# before migrate and again before serving; any error refuses the start, exit 1 (docs/settings.md lists the ids).
# The last line execs: make passes its SIGTERM (a container's or a service manager's stop) to its child and
# waits for it, so that child must be config.serve itself, not a shell that would die and leave it running.
serve: export DJANGO_DEBUG ?= 0
serve: install
	$(PY) -m config.serve --check
	$(PY) manage.py migrate --no-input
	$(PY) manage.py collectstatic --no-input --verbosity 0
	exec env HOST=$(HOST) $(PY) -m config.serve

# The test runs write Python's bytecode caches (`__pycache__/`, ignored by git) even where the environment says
# not to (PYTHONDONTWRITEBYTECODE, set on these machines): every test process, server and virtual environment would
# otherwise compile the same modules again, and rewrite pytest's assertions in every test module (docs/contributing.md).
test check pytest pytest-parallel pytest-check bench: export PYTHONDONTWRITEBYTECODE :=

# The whole gate, what CI runs: the lock; then GATE_JOBS side by side (the linters, the types, pytest's parallel
# run, the browser client's tests: each mostly waits on servers and browsers it started, so one after another
# left the cores idle half the time), each one's output printed whole as it ends; then the tests marked `serial`,
# alone on the machine.
test: install-dev lockcheck
	$(MAKE) --no-print-directory --jobs=6 --output-sync=target $(GATE_JOBS)
	$(PYTEST_SERIAL)

# The quick loop while changing code: lint, types, and the unit tests of the route, the SDK, its Django glue
# and the browser client, in two minutes or less. `make test` stays the whole gate, and what CI runs.
# Side by side, as in `make test`: the linters and the types fill the cores while the tests wait on their servers.
CHECK_TESTS := tests/mintroute tests/sportsproxy/django $(wildcard tests/sportsproxy/test_*.py)
check: install-dev
	$(MAKE) --no-print-directory --jobs=5 --output-sync=target conflicts lint typecheck jstest pytest-check
	$(PYTEST_SERIAL) $(CHECK_TESTS)

pytest-check: install-dev
	$(PYTEST_PARALLEL) $(CHECK_TESTS)

# The lock (tests/lock.py): every package, direct or transitive, pinned with its hashes. `make lock` after
# changing a dependency in pyproject.toml: uv resolves uv.lock and exports requirements.txt (the site's) and
# requirements-dev.txt (the tests'). `make upgrade` moves every pin to its newest release. `make test` fails
# first, saying to run `make lock`, when the lock disagrees with pyproject.toml.
lockcheck: install-dev
	$(PY) -m tests.lock check

lock: install-dev
	$(PY) -m tests.lock write

upgrade: install-dev
	$(PY) -m tests.lock upgrade

# A `copier update` that met a conflict leaves its markers in the files and still exits 0: the gate fails while
# any is left in a tracked file, and lists them.
conflicts:
	@if git grep -nE '^(<<<<<<<|>>>>>>>)( |$$)' -- . ; then \
		echo "Conflict markers are left in the files above (a \`copier update\`?): resolve them, then commit."; exit 1; fi

# mypy types the sandbox's app too, installed for it whatever the project mounts (SPORTS_SANDBOX).
lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DJANGO_ENV_FILE= DJANGO_DEBUG=1 SPORTS_SANDBOX=1 $(VENV)/bin/mypy

# pytest on PYTEST_WORKERS processes (pytest-xdist, one test module per worker at a time), then the tests marked
# `serial` alone (docs/contributing.md, "Running the tests in parallel"). Four on two cores: most tests wait on
# the servers, browsers and products they started, and with two the cores were idle about half the run. At most
# 4 workers: the production tests hold four sets of databases in the shared Redis.
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := $(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not serial"
# A temporary folder of its own (--basetemp): pytest's default would first delete the older runs' folders, the
# parallel run's environments and projects among them (10 s on the serial run's clock).
PYTEST_SERIAL := $(VENV)/bin/pytest -m serial --basetemp="$$(mktemp -d -t pytest-serial.XXXXXX)"
pytest: pytest-parallel
	$(PYTEST_SERIAL)

pytest-parallel: install-dev
	$(PYTEST_PARALLEL)

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

# More targets, one concern a file: make/*.mk, and each site app's own in config/<app>/make.mk.
include $(wildcard make/*.mk config/*/make.mk)
