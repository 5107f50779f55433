"""Answers do not describe the configuration in production: with DEBUG off no answer of the route
names a setting (`SPORTS_...`), a check id, a dotted path or a hint; a configuration problem is
answered with its row's `error` code and a generic message, and its detail goes to the log with the
check's id. With DEBUG on the answers keep naming the setting (tests/mintroute/test_views.py)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest
from django.test import Client

from sportsproxy.sandbox.accounts.keys import hash_secret
from sportsproxy.sandbox.models import ApiKey
from tests.mintroute.conftest import logged_in_browser, post_token
from tests.mintroute.test_authentication import DEVICE, app_call
from tests.mintroute.test_authentication_failures import BROKEN, TOKEN_AUTHENTICATION
from tests.upstreams import closed_port_url, fake_upstream, http_response

CHECK_ID = re.compile(r"\b(?:mintroute|sportsproxy|config)\.[EW]\d{3}\b")
DOTTED_PATH = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}\b")  # a.b.c: a module, class or setting path
CONFIGURATION_WORDS = ("SPORTS_", "INSTALLED_APPS", "DJANGO_", "sandbox_key", "manage.py", "settings")


def upstream(stack: ExitStack, settings: Any, reply: Callable[[bytes], bytes | None], **more: Any) -> None:
    settings.SPORTS_TRANSPORT = "http"
    settings.SPORTS_BASE_URL = stack.enter_context(fake_upstream(reply))
    for name, value in more.items():
        setattr(settings, name, value)


def envelope(code: str, data: Any = None) -> Callable[[bytes], bytes]:
    error = {"code": code, "message": "No.", **({"data": data} if data is not None else {})}
    return lambda body: http_response(json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode())


def redis_on_a_closed_port() -> dict[str, dict[str, str]]:
    location = closed_port_url().replace("http://", "redis://")
    return {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location}}


def with_the_cache_down(browser: Client, settings: Any) -> Client:
    settings.CACHES = redis_on_a_closed_port()
    return browser


def token_without_an_offset(body: bytes) -> bytes:
    result = {"token": "a.b.c", "expiresAt": "2026-03-14T15:19:26"}
    return http_response(json.dumps({"jsonrpc": "2.0", "id": json.loads(body)["id"], "result": result}).encode())


def revoke(site_key: str) -> None:
    ApiKey.objects.get(secret_hash=hash_secret(site_key)).revoke()


# Every row of the route, as a caller meets it: (status, code, how to provoke it, the check id logged).
ROWS: dict[str, tuple[int, str, Callable[[ExitStack, Any, str], Any], str | None]] = {
    "405": (405, "method_not_allowed", lambda stack, settings, key: logged_in_browser().get("/api/sports-token"), None),
    "401 session": (401, "not_authenticated", lambda stack, settings, key: post_token(Client()), None),
    "401 app": (
        401,
        "not_authenticated",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_TOKEN_AUTHENTICATION", [DEVICE]) or app_call(device=None)
        ),
        None,
    ),
    "403 csrf": (403, "csrf_failed", lambda stack, settings, key: post_token(logged_in_browser(), csrf=False), None),
    "403 forbidden": (
        403,
        "forbidden",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_TOKEN_PERMISSION", lambda request: False) or post_token(logged_in_browser())
        ),
        None,
    ),
    "400 not an object": (400, "bad_request", lambda stack, settings, key: post_token(logged_in_browser(), "[]"), None),
    "400 not json": (400, "bad_request", lambda stack, settings, key: post_token(logged_in_browser(), "{"), None),
    "400 reason": (
        400,
        "bad_request",
        lambda stack, settings, key: post_token(logged_in_browser(), '{"reason": "x"}'),
        None,
    ),
    "400 host not allowed": (
        400,
        "bad_request",
        lambda stack, settings, key: post_token(logged_in_browser(), HTTP_HOST="evil.example"),
        None,
    ),
    "400 body over the limit": (
        400,
        "bad_request",
        lambda stack, settings, key: post_token(Client(), "x" * 2048),
        None,
    ),
    "502 expiry without an offset": (
        502,
        "upstream_error",
        lambda stack, settings, key: (
            upstream(stack, settings, token_without_an_offset) or post_token(logged_in_browser())
        ),
        None,
    ),
    "429": (
        429,
        "rate_limited",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_TOKEN_RATE", "1/m")
            or [post_token(logged_in_browser(), '{"reason": "unauthorized"}') for _ in range(2)][-1]
        ),
        None,
    ),
    "502 revoked key": (
        502,
        "upstream_unauthorized",
        lambda stack, settings, key: revoke(key) or post_token(logged_in_browser()),
        None,
    ),
    "502 missing key": (
        502,
        "upstream_unauthorized",
        lambda stack, settings, key: setattr(settings, "SPORTS_API_KEY", "") or post_token(logged_in_browser()),
        "sportsproxy.W001",  # a warning for `check` while a development site has no key yet; fatal at run time
    ),
    "502 malformed key": (
        502,
        "upstream_unauthorized",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_API_KEY", "sk_live_short") or post_token(logged_in_browser())
        ),
        "sportsproxy.E002",
    ),
    "502 ttl": (
        502,
        "upstream_error",
        lambda stack, settings, key: setattr(settings, "SPORTS_TOKEN_TTL", 59) or post_token(logged_in_browser()),
        "mintroute.E001",
    ),
    "502 authentication not importable": (
        502,
        "upstream_error",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_TOKEN_AUTHENTICATION", ["nowhere.Authentication"])
            or post_token(logged_in_browser())
        ),
        "mintroute.E005",
    ),
    "502 base url with a path": (
        502,
        "upstream_error",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_TRANSPORT", "http")
            or setattr(settings, "SPORTS_BASE_URL", "http://127.0.0.1:8000/api")
            or post_token(logged_in_browser())
        ),
        "sportsproxy.E004",
    ),
    "502 sandbox not installed": (
        502,
        "upstream_error",
        lambda stack, settings, key: (
            setattr(
                settings, "INSTALLED_APPS", [app for app in settings.INSTALLED_APPS if app != "sportsproxy.sandbox"]
            )
            or post_token(logged_in_browser())
        ),
        "sportsproxy.E007",
    ),
    "502 upstream error": (
        502,
        "upstream_error",
        lambda stack, settings, key: (
            upstream(stack, settings, envelope("internal_error")) or post_token(logged_in_browser())
        ),
        None,
    ),
    "502 upstream garbage": (
        502,
        "upstream_error",
        lambda stack, settings, key: (
            upstream(stack, settings, lambda body: http_response(b"<h1>no</h1>")) or post_token(logged_in_browser())
        ),
        None,
    ),
    "503 upstream unreachable": (
        503,
        "upstream_unavailable",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_TRANSPORT", "http")
            or setattr(settings, "SPORTS_BASE_URL", closed_port_url())
            or post_token(logged_in_browser())
        ),
        None,
    ),
    "503 upstream rate limited": (
        503,
        "upstream_rate_limited",
        lambda stack, settings, key: (
            upstream(stack, settings, envelope("rate_limited", {"retryAfter": 3})) or post_token(logged_in_browser())
        ),
        None,
    ),
    "504 upstream timeout": (
        504,
        "upstream_timeout",
        lambda stack, settings, key: (
            upstream(stack, settings, lambda body: None, SPORTS_TIMEOUT=0.5) or post_token(logged_in_browser())
        ),
        None,
    ),
    "503 rate-limit store": (
        503,
        "rate_limit_unavailable",
        lambda stack, settings, key: (
            [browser := logged_in_browser(), setattr(settings, "CACHES", redis_on_a_closed_port())]
            and post_token(browser)
        ),
        None,
    ),
    "503 authentication app missing": (
        503,
        "authentication_unavailable",
        lambda stack, settings, key: (
            setattr(settings, "SPORTS_TOKEN_AUTHENTICATION", [TOKEN_AUTHENTICATION]) or app_call(device=None)
        ),
        "mintroute.E010",
    ),
    "503 authentication class raises": (
        503,
        "authentication_unavailable",
        lambda stack, settings, key: setattr(settings, "SPORTS_TOKEN_AUTHENTICATION", [BROKEN]) or app_call(),
        None,
    ),
}


@pytest.mark.parametrize("row", ROWS)
def test_no_production_answer_describes_the_configuration(settings: Any, site_key: str, caplog: Any, row: str) -> None:
    status, code, provoke, check_id = ROWS[row]
    settings.DEBUG = False
    with ExitStack() as stack, caplog.at_level(logging.INFO):
        response = provoke(stack, settings, site_key)
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == code
    text = response.content.decode()
    assert not CHECK_ID.search(text), text
    assert not DOTTED_PATH.search(text), text
    for word in CONFIGURATION_WORDS:
        assert word not in text, text
    if check_id is not None:
        assert check_id in caplog.text  # the detail is in the log, with the check's id


def test_with_debug_on_the_same_answer_names_the_setting(settings: Any) -> None:
    settings.DEBUG = True
    settings.SPORTS_TOKEN_TTL = 59
    assert "SPORTS_TOKEN_TTL" in post_token(logged_in_browser()).json()["message"]
