"""The integrator's mint route: `POST /api/sports-token` returns `{token, expiresAt}`.

Install it (`pip install` this project) or copy the folders `mintroute/` and `sportsproxy/`
(without `sportsproxy/sandbox/`) into your site. It needs Django, Django REST framework,
django-ratelimit and httpx2, nothing else. The wiring is three steps: "mintroute" in
INSTALLED_APPS, `path("", include("mintroute.urls"))`, and SPORTS_API_KEY and SPORTS_BASE_URL
in settings (README: "Add the mint route to an existing Django site").

It also ships the browser client as static files: `{% static "sports/sports-client.js" %}`.

    mintroute/views.py      the two entries (WSGI, ASGI); urls.py picks one per request
    mintroute/admission.py  the rules before a mint: method, authentication, permission, limit, body
    mintroute/minting.py    tokens.create upstream, and its failures as the route's answers
    mintroute/reuse.py      the token remembered for one login (a signed cookie)
    mintroute/conf.py       the settings and their problems (checks.py reports them)
    mintroute/readiness.py  GET /readyz's checks; metrics.py, the counts GET /metrics serves;
                            operations.py, those two views (`mintroute.urls.operations`)
    mintroute/request_ids.py, access_log.py   each request's id and its access line
                            (`mintroute.middleware.follow_requests`)

The names below are the route's public surface for your own views (loaded on first use, so that
importing the package loads nothing else).
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from mintroute.errors import RouteError
    from mintroute.minting import amint_upstream, mint_upstream
    from mintroute.ratelimits import client_ip, enforce_rate_limit
    from mintroute.reuse import login_of, remembered_token

__all__ = [
    "RouteError",
    "amint_upstream",
    "client_ip",
    "enforce_rate_limit",
    "login_of",
    "mint_upstream",
    "remembered_token",
]

_HOMES = {
    "RouteError": "mintroute.errors",
    "amint_upstream": "mintroute.minting",
    "client_ip": "mintroute.ratelimits",
    "enforce_rate_limit": "mintroute.ratelimits",
    "login_of": "mintroute.reuse",
    "mint_upstream": "mintroute.minting",
    "remembered_token": "mintroute.reuse",
}


def __getattr__(name: str) -> typing.Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'mintroute' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
