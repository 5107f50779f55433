"""The client IP every limit counts (mintroute.ratelimits.client_ip): behind trusted proxies, per IPv4
address, IPv4-mapped and NAT64 clients as their IPv4 address, other IPv6 clients per /64."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

from mintroute.ratelimits import client_ip
from tests.dual_stack import client_from, dual_stack_server


@pytest.mark.parametrize(
    ("proxies", "remote", "forwarded", "expected"),
    [
        (0, "192.0.2.1", "203.0.113.5", "192.0.2.1"),
        (1, "10.0.0.1", "203.0.113.5", "203.0.113.5"),
        (1, "10.0.0.1", "6.6.6.6, 203.0.113.5", "203.0.113.5"),
        (2, "10.0.0.1", "6.6.6.6, 203.0.113.5, 10.0.0.2", "203.0.113.5"),
        (2, "10.0.0.1", "203.0.113.5", "10.0.0.1"),  # fewer hops than proxies: not trusted
        (0, "2001:db8:1:2:3:4:5:6", "", "2001:db8:1:2::"),
        (0, "not-an-ip", "", "unknown"),
        (0, "::ffff:192.0.2.1", "", "192.0.2.1"),  # IPv4-mapped: a server bound to [::] sees IPv4 clients so
        (0, "::ffff:192.0.2.2", "", "192.0.2.2"),
        (0, "64:ff9b::192.0.2.1", "", "192.0.2.1"),  # NAT64's well-known prefix
        (0, "64:ff9b::c000:202", "", "192.0.2.2"),
        (1, "10.0.0.1", "::ffff:203.0.113.5", "203.0.113.5"),
        (0, "64:ff9b:1::c000:201", "", "64:ff9b:1::"),  # a local-use NAT64 prefix is not unwrapped: its /64
        (0, "::1", "", "::"),
    ],
)
def test_client_ip(settings: Any, proxies: int, remote: str, forwarded: str, expected: str) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = proxies
    settings.SPORTS_TRUSTED_PROXIES = ["10.0.0.0/8"]  # the proxies' network
    request = RequestFactory().post("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected


LOOPBACK = ["127.0.0.0/8", "::1"]  # config/settings.py's default


@pytest.mark.parametrize(
    ("trusted", "peer", "expected"),
    [
        (LOOPBACK, "127.0.0.1", "203.0.113.5"),  # the proxy on this machine
        (LOOPBACK, "127.0.0.2", "203.0.113.5"),
        (LOOPBACK, "::1", "203.0.113.5"),
        (LOOPBACK, "::ffff:127.0.0.1", "203.0.113.5"),  # the proxy, seen by a server bound to [::]
        (LOOPBACK, "192.0.2.9", "192.0.2.9"),  # past the proxy, straight to the server: its own address
        (LOOPBACK, "::ffff:192.0.2.9", "192.0.2.9"),
        (LOOPBACK, "2001:db8::9", "2001:db8::"),
        (["10.0.0.5"], "10.0.0.5", "203.0.113.5"),
        (["10.0.0.5"], "10.0.0.6", "10.0.0.6"),
        (["10.0.0.5"], "127.0.0.1", "127.0.0.1"),  # only the listed proxies, not loopback as well
        (["10.1.0.0/16", "2001:db8:5::/48"], "10.1.200.3", "203.0.113.5"),
        (["10.1.0.0/16", "2001:db8:5::/48"], "2001:db8:5::1", "203.0.113.5"),
        (["10.1.0.0/16", "2001:db8:5::/48"], "2001:db8:6::1", "2001:db8:6::"),
        ("10.1.0.0/16, 10.0.0.5", "10.0.0.5", "203.0.113.5"),  # one comma-separated string
        ([], "127.0.0.1", "127.0.0.1"),  # no proxy at all
    ],
)
def test_x_forwarded_for_is_read_only_from_a_trusted_proxy(
    settings: Any, trusted: list[str] | str, peer: str, expected: str
) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    settings.SPORTS_TRUSTED_PROXIES = trusted
    request = RequestFactory().post("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.5")
    assert client_ip(request) == expected


def test_without_the_setting_the_loopback_networks_are_trusted(settings: Any) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    del settings.SPORTS_TRUSTED_PROXIES
    forwarded = {"HTTP_X_FORWARDED_FOR": "203.0.113.5"}
    assert client_ip(RequestFactory().post("/", REMOTE_ADDR="127.0.0.1", **forwarded)) == "203.0.113.5"
    assert client_ip(RequestFactory().post("/", REMOTE_ADDR="192.0.2.9", **forwarded)) == "192.0.2.9"


def test_a_peer_past_the_proxy_spends_the_routes_per_ip_limit_whatever_it_forwards(settings: Any) -> None:
    """Eleven users' sessions from one address that is not a proxy, each call with another
    X-Forwarded-For: all count for that address (SPORTS_TOKEN_RATE 10/m)."""
    settings.SPORTS_TRUSTED_PROXY_COUNT = 1
    answers = []
    for number in range(11):
        browser = Client(enforce_csrf_checks=True, REMOTE_ADDR="192.0.2.9")
        browser.force_login(User.objects.create_user(f"user-{number}"))
        browser.get("/accounts/login/")
        csrf = browser.cookies["csrftoken"].value
        spoofed = f"198.51.100.{number}"
        answer = browser.post(
            "/api/sports-token",
            "{}",
            content_type="application/json",
            HTTP_X_CSRFTOKEN=csrf,
            HTTP_X_FORWARDED_FOR=spoofed,
        )
        answers.append(answer.status_code)
    assert answers == [200] * 10 + [429]


@pytest.fixture
def dual_stack(transactional_db: None) -> Iterator[str]:
    with dual_stack_server() as url:
        yield url


def mint_over_tcp(url: str, source: str, username: str) -> int:
    """One mint by `username`'s session from the IPv4 address `source`, with no remembered token."""
    session = Client()
    session.force_login(User.objects.get_or_create(username=username)[0])
    with client_from(url, source) as browser:
        browser.cookies.set("sessionid", session.cookies["sessionid"].value)
        browser.get("/accounts/login/")  # the CSRF cookie, as the page leaves it
        answer = browser.post("/api/sports-token", json={}, headers={"X-CSRFToken": browser.cookies["csrftoken"]})
        return answer.status_code


def test_the_routes_ipv4_clients_of_a_server_bound_to_ipv6_count_apart(dual_stack: str) -> None:
    assert [mint_over_tcp(dual_stack, "127.0.0.1", "alice") for _ in range(10)] == [200] * 10
    assert mint_over_tcp(dual_stack, "127.0.0.1", "bob") == 429  # 127.0.0.1's minute is spent
    assert mint_over_tcp(dual_stack, "127.0.0.2", "carol") == 200  # another IPv4 client: its own count
