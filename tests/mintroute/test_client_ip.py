from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory

from mintroute.client_ip import client_ip


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
    request = RequestFactory().post("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected
