"""The route's rate limit: django-ratelimit on the Django cache, per user and per client IP.

It fails closed: if the cache cannot be reached the route answers 503 rather than mint
without a limit, because an unthrottled mint route lets a scraper spend the account's quota.

`client_ip` is the client IP the limits count, honest behind a known number of proxies.

With SPORTS_TRUSTED_PROXY_COUNT = 0 (the default) it is REMOTE_ADDR: X-Forwarded-For
is ignored, because any client can send it. Behind N proxies that each append the
address they saw, the client is the Nth address from the right; addresses further
left were written by the client and are not trusted. The header is read only when the
connection's own peer (REMOTE_ADDR) is one of SPORTS_TRUSTED_PROXIES: a client that reaches
the server past the proxy counts by its own address, whatever header it sends.

Every limit of the site (the route's and the login's) groups clients by this one function: an
IPv4 client counts per address, also when it reaches a server bound to `[::]` as an IPv4-mapped
address (`::ffff:a.b.c.d`) or through NAT64 (`64:ff9b::a.b.c.d`); any other IPv6 client per /64.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from django_ratelimit.core import get_usage

from mintroute import conf
from mintroute.errors import RouteError
from mintroute.redis_cache import CountingInOneRoundTrip

logger = logging.getLogger(__name__)

IPV6_PREFIX = 64  # one IPv6 subscriber usually holds a whole /64
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # the well-known prefix (RFC 6052): an IPv4 address in its low 32 bits


PER_USER = "user"
PER_IP = "client IP"


def enforce_rate_limit(
    request: HttpRequest,
    *,
    group: str = "mintroute",
    counted: str = "token requests",
    per: tuple[str, ...] = (PER_USER, PER_IP),
    reading: Sequence[str] = (),
) -> dict[str, Any]:
    """Count this request for its user and its IP (or only the scopes in `per`); 429 if any is over
    SPORTS_TOKEN_RATE.

    Any view that spends the API key's quota on a user's behalf should call it with a `group`
    of its own (a server-rendered panel that calls the service, say); `counted` names what the 429 counts.

    On a cache that counts in one round trip (mintroute.redis_cache) the counts and the reads of the cache
    keys in `reading` share one round trip: returns what those keys hold (the keys that hold something);
    on any other cache, nothing is read ({}), and the caller reads them itself.
    """
    rate = conf.token_rate()
    # Read before the store is touched, so a wrong setting is not mistaken for a store failure.
    scopes = {scope: str(request.user.pk) if scope == PER_USER else client_ip(request) for scope in per}

    def usages() -> dict[str, Any]:
        return {
            scope: get_usage(request, group=f"{group}:{scope}", key=_constant(value), rate=rate, increment=True)
            for scope, value in scopes.items()
        }

    read: dict[str, Any] = {}
    try:
        cache = caches[getattr(settings, "RATELIMIT_USE_CACHE", "default")]
        if isinstance(cache, CountingInOneRoundTrip):
            counts, read = cache.counted_with(usages, reading)
        else:
            counts = usages()
    except Exception:
        logger.exception("Rate-limit store unreachable; refusing to mint without a limit")
        raise _store_unavailable() from None
    waits: dict[str, int] = {}
    for scope, usage in counts.items():
        if usage is None:  # RATELIMIT_ENABLE = False
            continue
        if usage["limit"] == 0 and usage["time_left"] == -1:  # django-ratelimit's "cache failed" answer
            logger.error("Rate-limit store gave no count; refusing to mint without a limit")
            raise _store_unavailable()
        if usage["should_limit"]:
            # django-ratelimit's window still holds at its last second, hence the + 1.
            waits[scope] = max(1, int(usage["time_left"]) + 1)
    if waits:
        scope, wait = max(waits.items(), key=lambda item: item[1])
        raise RouteError(
            429,
            "rate_limited",
            f"Too many {counted} for this {scope} (limit {rate}). Retry in {wait} s.",
            {"Retry-After": str(wait)},
        )
    return read


def _constant(value: str) -> Callable[[str, HttpRequest], str]:
    return lambda group, request: value


def _store_unavailable() -> RouteError:
    return RouteError(
        503,
        "rate_limit_unavailable",
        "The rate-limit store (the Django cache) is unreachable, so nothing is sent upstream. Retry shortly.",
        {"Retry-After": "5"},
    )


# --- the client IP ----------------------------------------------------------------------------------


def client_ip(request: HttpRequest) -> str:
    """The client as every limit groups it: an IPv4 address, or an IPv6 client's /64; "unknown"."""
    address = client_address(request)
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False).network_address)
    return str(address)


def client_address(request: HttpRequest) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The client's own address, not grouped (an IPv4 address carried in IPv6 as itself): the forwarded
    one when the peer is a trusted proxy, else the peer's; None when unparsable."""
    peer = str(request.META.get("REMOTE_ADDR", ""))
    forwarded = _forwarded_for(request, conf.trusted_proxy_count()) if relayed_by_trusted_proxy(request) else None
    parsed = _address(forwarded or peer)
    if isinstance(parsed, ipaddress.IPv6Address):
        return ipv4_inside(parsed) or parsed
    return parsed


def relayed_by_trusted_proxy(request: HttpRequest) -> bool:
    """True when the site sits behind proxies (SPORTS_TRUSTED_PROXY_COUNT above 0) and this connection's
    own peer is one of them (SPORTS_TRUSTED_PROXIES): only then is a header the proxy sets believed."""
    return conf.trusted_proxy_count() > 0 and _is_trusted_proxy(str(request.META.get("REMOTE_ADDR", "")))


def relayed_without_its_client(request: HttpRequest) -> bool:
    """True when a trusted proxy relayed the request with fewer X-Forwarded-For entries than
    SPORTS_TRUSTED_PROXY_COUNT: the client is unknown (the limits count it by the proxy's address)."""
    return relayed_by_trusted_proxy(request) and _forwarded_for(request, conf.trusted_proxy_count()) is None


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_trusted_proxy(peer: str) -> bool:
    """True when the connection comes from one of SPORTS_TRUSTED_PROXIES (an IPv4 peer seen by a
    server bound to `[::]` as its IPv4 address)."""
    address = _address(peer)
    if isinstance(address, ipaddress.IPv6Address):
        address = address.ipv4_mapped or address
    return address is not None and any(address in network for network in conf.trusted_proxies())


def ipv4_inside(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (IPv4-mapped or NAT64), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _forwarded_for(request: HttpRequest, trusted_proxies: int) -> str | None:
    header = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
    hops = [hop.strip() for hop in header.split(",") if hop.strip()]
    if len(hops) < trusted_proxies:
        return None
    return hops[-trusted_proxies]
