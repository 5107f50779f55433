# `make demo`: migrate, create the demo user and a sandbox key (demo_setup), and serve the page on $(HOST)
# (`make demo HOST=0.0.0.0:8080` serves elsewhere). The checks run once, in runserver, after demo_setup has
# written the key they would otherwise warn about (migrate and demo_setup skip them).
.PHONY: demo screenshots

demo: install
	$(PY) manage.py migrate --no-input --skip-checks
	$(PY) manage.py demo_setup
	$(PY) manage.py runserver $(HOST)

# The README's pictures (docs/screenshots/), remade from the demo page as it is now: the browser test that
# takes them at desktop and phone width (headless Chromium through Playwright) writes them there.
screenshots: install-dev
	DEMO_SCREENSHOT_DIR=docs/screenshots $(VENV)/bin/pytest tests/e2e/test_demo_page.py -k screenshots -q
