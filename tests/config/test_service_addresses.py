"""The socket address a page hands its browser client where the sandbox is mounted: its own origin's
`/sdk/v1/ws`, never a loopback address that a visitor's own machine would answer."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client
from django.urls import reverse

from config import serve
from config.service_addresses import browser_addresses

CONFIG_START = '<script id="client-config" type="application/json">'


def client_config(page: str) -> dict[str, object]:
    start = page.index(CONFIG_START) + len(CONFIG_START)
    config: dict[str, object] = json.loads(page[start : page.index("</script>", start)])
    return config


def connect_src(policy: str) -> list[str]:
    (rule,) = [part for part in policy.split("; ") if part.startswith("connect-src ")]
    return rule.split()[1:]


def served_addresses(environment: dict[str, str]) -> tuple[str, str]:
    """What config/settings.py makes of the environment `make serve` gives its HTTP server (sandbox mounted)."""
    ((_, http_environment), _) = serve.plan(environment, sandbox=True)
    return browser_addresses(
        public_base_url=http_environment.get("SPORTS_PUBLIC_BASE_URL", ""),
        public_ws_url=http_environment.get("SPORTS_PUBLIC_WS_URL", ""),
        base_url="",
        sandbox_mounted=True,
    )


def test_make_serve_hands_the_page_no_socket_address_of_its_own() -> None:
    assert served_addresses({"HOST": "127.0.0.1:8000"}) == ("", "")
    assert served_addresses({"HOST": "0.0.0.0:8000", "SPORTS_SANDBOX_WS_HOST": "127.0.0.1:9001"}) == ("", "")


def test_an_operators_public_socket_address_is_handed_over() -> None:
    environment = {"HOST": "127.0.0.1:8000", "SPORTS_PUBLIC_WS_URL": "wss://live.sports.example/sdk/v1/ws"}
    assert served_addresses(environment) == ("", "wss://live.sports.example/sdk/v1/ws")


def test_behind_a_tls_proxy_the_page_opens_wss_at_its_own_origin(admin_client: Client, settings: Any) -> None:
    """Production with the sandbox mounted, no SPORTS_PUBLIC_WS_URL, behind a TLS-terminating proxy
    (DJANGO_BEHIND_TLS_PROXY): the client is given no address, so it opens `wss://<the page's host>/sdk/v1/ws`
    (tests/js/sports-client.test.mjs, "default to the page's origin"), which the policy allows; nothing on
    the page names a loopback address."""
    settings.DEBUG = False
    settings.SPORTS_SANDBOX = True
    settings.ALLOWED_HOSTS = ["sports.example"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SPORTS_PUBLIC_BASE_URL, settings.SPORTS_PUBLIC_WS_URL = served_addresses({"HOST": "127.0.0.1:8000"})
    response = admin_client.get(reverse("start"), HTTP_HOST="sports.example", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    page = response.content.decode()
    config = client_config(page)
    assert (config["baseUrl"], config["wsUrl"]) == (None, None)
    assert connect_src(response["Content-Security-Policy"]) == ["'self'", "wss://sports.example"]
    for loopback in ("127.0.0.1", "localhost", "[::1]", "ws://"):
        assert loopback not in page
        assert loopback not in response["Content-Security-Policy"]
