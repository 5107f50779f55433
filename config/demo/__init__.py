"""The demo: the page at `/`, its server-rendered HTMX panel, the "expire my token" helper and
`manage.py demo_setup` (the demo user and the sandbox key). Everything of the demo is here and
nothing else imports it; a site built from this template deletes this folder and its line in
INSTALLED_APPS and urls.
"""
