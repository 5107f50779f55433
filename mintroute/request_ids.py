"""Each request's id: the `X-Request-ID` the proxy in front sent, or a new random one.

The proxy's id is believed when the request comes from a trusted proxy by the rule the route's client
address follows (SPORTS_TRUSTED_PROXY_COUNT above 0 and the connection's peer in
SPORTS_TRUSTED_PROXIES, mintroute.ratelimits) and the value is a valid id (1 to 128 letters, digits or
`-_.:+=/@`, sportsproxy.request_id). A client that reaches the site past the proxy cannot choose its
id, and nothing a client sends can end a log line early or forge another one.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.http import HttpRequest

from mintroute.ratelimits import relayed_by_trusted_proxy
from sportsproxy.django.problems import SettingsError
from sportsproxy.request_id import is_valid_request_id

new_request_id: Callable[[], str] = lambda: secrets.token_hex(16)  # noqa: E731 - the randomness; tests pin it


def request_id_for(request: HttpRequest) -> str:
    """The trusted proxy's valid `X-Request-ID`, else a new id."""
    sent = request.META.get("HTTP_X_REQUEST_ID")
    if isinstance(sent, str) and is_valid_request_id(sent) and _from_trusted_proxy(request):
        return sent
    return new_request_id()


def _from_trusted_proxy(request: HttpRequest) -> bool:
    try:
        return relayed_by_trusted_proxy(request)
    except SettingsError:  # a wrong proxy setting is the checks' to report; the request gets an id of its own
        return False
