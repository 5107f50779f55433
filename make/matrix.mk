# The test matrix: this template's CI runs it after `make test` (.ci/run); a generated project tests its one pair.
.PHONY: matrix

# The test matrix (noxfile.py): what differs between pairs (the route's, the glue's and the plugin's tests;
# the standalone, SDK and sandbox tests on the covering pairs) on every supported pair of Python (3.11, 3.12,
# 3.13, found on this machine) and Django (5.2, 6.0, 6.1) but the site's own (3.11 with 5.2: `make pytest`
# is that pair, every test), one environment each under .nox/, MATRIX_JOBS pairs at a time
# (docs/contributing.md, "Supported versions"). With CI set, a missing interpreter fails it. One pair:
# `.venv/bin/nox -s "tests(python='3.13', django='6.1')"`.
# Below the CPU priority of whatever runs beside it (`nice`): a contributor may run it beside `make test`, whose
# production tests time real servers. Not Linux's idle class (`chrt --idle`): a starved matrix process holding
# uv's cache lock held up pytest's own installs, and its timed tests failed.
matrix: export PYTHONDONTWRITEBYTECODE :=
MATRIX_JOBS ?= 2
matrix: install-dev
	nice -n 19 $(VENV)/bin/nox --tags matrix --parallel $(MATRIX_JOBS)
