# The README's two commands, `make demo` and `make test`, work on a fresh machine:
# each creates .venv and installs what it needs first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1:8000

.PHONY: demo test lint format pytest jstest bench install install-dev clean

demo: install
	$(PY) manage.py migrate --no-input
	$(PY) manage.py demo_setup
	$(PY) manage.py runserver $(HOST)

test: install-dev lint pytest jstest

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

pytest: install-dev
	$(VENV)/bin/pytest

# Benchmarks (not part of `make test`): starts its own servers on 127.0.0.1 and prints one table.
# Uses the Redis on 127.0.0.1:6379 for the two-process fan-out row when it is running.
bench: install-dev
	$(PY) -m tests.bench.run_bench

# The browser client's unit tests: Node's own runner, nothing from npm.
jstest:
	node --test tests/js/

format: install-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
