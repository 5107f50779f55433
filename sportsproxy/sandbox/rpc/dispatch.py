"""The one place a request becomes a response envelope.

The HTTP view and the in-process SDK transport call `handle_http`; a WebSocket's session
calls `respond` and `call` with its own context. Every method, `auth` included, runs through
`call`, so every transport enforces the same rules and spends the quota in the same place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sportsproxy.sandbox.accounts import quota
from sportsproxy.sandbox.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, RpcError
from sportsproxy.sandbox.rpc import envelope
from sportsproxy.sandbox.rpc.methods import METHODS, Context, Method

logger = logging.getLogger(__name__)


def respond(body: bytes | str, resolve: Callable[[envelope.RpcRequest], dict[str, Any]]) -> dict[str, Any]:
    """Decode and validate `body`, resolve it to a result, and wrap either outcome in an envelope."""
    request_id = None
    try:
        payload = envelope.decode(body)
        request_id = envelope.request_id_of(payload)
        request = envelope.validate(payload)
        return envelope.result_response(request.id, resolve(request))
    except RpcError as error:
        return envelope.error_response(request_id, error)
    except Exception:
        logger.exception("Unexpected error while answering request id=%r", request_id)
        internal = RpcError(INTERNAL_ERROR, "The service hit an unexpected error; it has been logged.")
        return envelope.error_response(request_id, internal)


def find_method(name: str, transport: str) -> Method:
    method = METHODS.get(name)
    if method is None:
        raise RpcError(METHOD_NOT_FOUND, f"Unknown method {name!r}. Known: {', '.join(sorted(METHODS))}.")
    if method.websocket_only and transport != "websocket":
        raise RpcError(METHOD_NOT_FOUND, f"{name} is only available on the WebSocket endpoint /sdk/v1/ws.")
    return method


def call(request: envelope.RpcRequest, context: Context) -> dict[str, Any]:
    """Find the method (unknown ones answer before any credential check), identify the caller,
    spend one request of its account's quota, and run the method."""
    method = find_method(request.method, context.transport)
    caller = method.identify(request.params, context)
    quota.spend_request(caller)
    return method.handler(request.params, caller, context)


def handle_http(body: bytes, *, authorization: str | None, origin: str | None) -> dict[str, Any]:
    """The response envelope for one HTTP request, authenticated by its Bearer header alone."""
    context = Context(from_browser=origin is not None, authorization=authorization)
    return respond(body, lambda request: call(request, context))
