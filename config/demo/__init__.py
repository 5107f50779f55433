"""The demo: the page at `/`, its server-rendered HTMX panel, the "expire my token" helper and
`manage.py demo_setup` (the demo user and the sandbox key), `make demo` (make.mk). Everything of the demo
is here and nothing else names it: the settings, urls and the Makefile find this folder, so a project
generated without the demo (`copier copy`, demo=false) has none of it and `/` is its starting page.

The demo's conveniences (the login page's hint, "expire my token") exist only in the demo,
debug on and the sandbox mounted (`mode.is_demo`); `demo_setup` gives the demo user the default
password only there.
"""
