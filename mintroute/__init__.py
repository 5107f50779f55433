"""The integrator's mint route: `POST /api/sports-token` returns `{token, expiresAt}`.

Install it (`pip install` this project) or copy the folders `mintroute/` and `sportsproxy/`
(without `sportsproxy/sandbox/`) into your site. It needs Django, Django REST framework,
django-ratelimit and httpx, nothing else. The wiring is three steps: "mintroute" in
INSTALLED_APPS, `path("", include("mintroute.urls"))`, and SPORTS_API_KEY and SPORTS_BASE_URL
in settings (README: "Add the mint route to an existing Django site").

It also ships the browser client as static files: `{% static "sports/sports-client.js" %}`.
"""
