"""The demo: the page at `/`, its server-rendered HTMX panel, the "expire my token" helper and
`manage.py demo_setup` (the demo user and the sandbox key). Everything of the demo is here and
nothing else imports it; a site built from this template deletes this folder and its lines in
INSTALLED_APPS, the template context processors and urls.

The demo's conveniences (the login page's hint, "expire my token") exist only in the demo,
debug on and the sandbox mounted (`mode.is_demo`); `demo_setup` gives the demo user the default
password only there.
"""
