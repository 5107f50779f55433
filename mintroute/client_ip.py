"""The client IP the rate limit counts, honest behind a known number of proxies.

With SPORTS_TRUSTED_PROXY_COUNT = 0 (the default) it is REMOTE_ADDR: X-Forwarded-For
is ignored, because any client can send it. Behind N proxies that each append the
address they saw, the client is the Nth address from the right; addresses further
left were written by the client and are not trusted.
"""

from __future__ import annotations

import ipaddress

from django.http import HttpRequest

from mintroute import conf

IPV6_PREFIX = 64  # one IPv6 subscriber usually holds a whole /64


def client_ip(request: HttpRequest) -> str:
    address = _forwarded_for(request, conf.trusted_proxy_count()) or str(request.META.get("REMOTE_ADDR", ""))
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return "unknown"
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False).network_address)
    return str(parsed)


def _forwarded_for(request: HttpRequest, trusted_proxies: int) -> str | None:
    if trusted_proxies <= 0:
        return None
    header = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
    hops = [hop.strip() for hop in header.split(",") if hop.strip()]
    if len(hops) < trusted_proxies:
        return None
    return hops[-trusted_proxies]
