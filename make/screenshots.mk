# The README's pictures of the product's first page (docs/screenshots/start-desktop.png, start-phone.png), remade
# from the page as it loads: the browser test that takes them at desktop and phone width (headless Chromium
# through Playwright) writes them there. `make screenshots` remakes them, with any other pictures a fragment of
# the site adds to it (a fragment may give `screenshots` its own recipe; this one only adds a prerequisite).
# The pages wear the project's name; `make screenshots START_SCREENSHOT_NAME="Your product"` (or the variable in
# the environment) takes them under that name instead: the neutral pictures a freshly generated project ships
# until its team runs `make screenshots`.
.PHONY: screenshots screenshots-start

# Included before any other target, these still leave `make`'s default goal to the Makefile.
screenshots_mk_default_goal := $(.DEFAULT_GOAL)

screenshots: screenshots-start

screenshots-start: install-dev
	START_SCREENSHOT_DIR=docs/screenshots $(VENV)/bin/pytest tests/e2e/test_start_page.py -k screenshots -q

.DEFAULT_GOAL := $(screenshots_mk_default_goal)
