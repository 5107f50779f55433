# `make demo`: migrate, create the demo user and a sandbox key (demo_setup), and serve the page on $(HOST).
.PHONY: demo

demo: install
	$(PY) manage.py migrate --no-input
	$(PY) manage.py demo_setup
	$(PY) manage.py runserver $(HOST)
