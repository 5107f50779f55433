"""The client IP the rate limit counts, honest behind a known number of proxies.

With SPORTS_TRUSTED_PROXY_COUNT = 0 (the default) it is REMOTE_ADDR: X-Forwarded-For
is ignored, because any client can send it. Behind N proxies that each append the
address they saw, the client is the Nth address from the right; addresses further
left were written by the client and are not trusted.

Every limit of the site (the route's and the login's) groups clients by this one function: an
IPv4 client counts per address, also when it reaches a server bound to `[::]` as an IPv4-mapped
address (`::ffff:a.b.c.d`) or through NAT64 (`64:ff9b::a.b.c.d`); any other IPv6 client per /64.
"""

from __future__ import annotations

import ipaddress

from django.http import HttpRequest

from mintroute import conf

IPV6_PREFIX = 64  # one IPv6 subscriber usually holds a whole /64
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # the well-known prefix (RFC 6052): an IPv4 address in its low 32 bits


def client_ip(request: HttpRequest) -> str:
    address = _forwarded_for(request, conf.trusted_proxy_count()) or str(request.META.get("REMOTE_ADDR", ""))
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return "unknown"
    if isinstance(parsed, ipaddress.IPv6Address):
        carried = ipv4_inside(parsed)
        if carried is not None:
            return str(carried)
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False).network_address)
    return str(parsed)


def ipv4_inside(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (IPv4-mapped or NAT64), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _forwarded_for(request: HttpRequest, trusted_proxies: int) -> str | None:
    if trusted_proxies <= 0:
        return None
    header = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
    hops = [hop.strip() for hop in header.split(",") if hop.strip()]
    if len(hops) < trusted_proxies:
        return None
    return hops[-trusted_proxies]
