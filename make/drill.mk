# The outage drill (tests/drill/outage.py; not part of `make test`): make serve with 2 workers behind the documented
# nginx, PostgreSQL behind a proxy it can cut, a Redis of its own, the service as a process of its own, Prometheus
# and Alertmanager with deploy/prometheus/'s files, and 20 users on the browser client's schedule; then one fault at
# a time. About an hour; it prints what users saw of each fault and when the page came (docs/operations.md).
# DRILL_OPTIONS="--long-only" runs only the faults of 2 minutes or more.
.PHONY: drill

drill: install-dev
	$(PY) -m tests.drill.outage $(DRILL_OPTIONS)
