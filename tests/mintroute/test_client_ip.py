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
    ],
)
def test_client_ip(settings: Any, proxies: int, remote: str, forwarded: str, expected: str) -> None:
    settings.SPORTS_TRUSTED_PROXY_COUNT = proxies
    request = RequestFactory().post("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected
