"""The one place a request becomes a response envelope.

The HTTP view and the in-process SDK transport call `handle_http`; the WebSocket
consumer calls `respond` with its own credential handling. Both reach the methods
through `call`, so every transport enforces the same rules and quota.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sportsproxy.sandbox import envelope, quota
from sportsproxy.sandbox.credentials import (
    auth_params_credential,
    authenticate_auth_params,
    authenticate_bearer,
    bearer_credential,
)
from sportsproxy.sandbox.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, RpcError, invalid_params
from sportsproxy.sandbox.methods import METHODS, Context, Method, auth_acknowledgement

logger = logging.getLogger(__name__)

Transport = str  # "http" or "websocket"


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


def find_method(name: str, transport: Transport) -> Method:
    method = METHODS.get(name)
    if method is None:
        raise RpcError(METHOD_NOT_FOUND, f"Unknown method {name!r}. Known: auth, {', '.join(sorted(METHODS))}.")
    if method.websocket_only and transport != "websocket":
        raise RpcError(METHOD_NOT_FOUND, f"{name} is only available on the WebSocket endpoint /sdk/v1/ws.")
    return method


def call(request: envelope.RpcRequest, context: Context) -> dict[str, Any]:
    """Spend one request of the caller's quota and run the method."""
    method = find_method(request.method, "websocket" if context.socket else "http")
    quota.spend_request(context.caller)
    return method.handler(request.params, context)


def handle_http(body: bytes, *, authorization: str | None, origin: str | None) -> dict[str, Any]:
    """The response envelope for one HTTP request, authenticated by its Bearer header alone."""
    from_browser = origin is not None

    def resolve(request: envelope.RpcRequest) -> dict[str, Any]:
        if request.method == "auth":
            # Over HTTP, auth reports on the Bearer credential; params, if given, must repeat it.
            if not request.params:
                caller = authenticate_bearer(authorization, from_browser=from_browser)
            elif auth_params_credential(request.params) == bearer_credential(authorization):
                caller = authenticate_auth_params(request.params, from_browser=from_browser)
            else:
                raise invalid_params("Over HTTP, auth checks the Bearer credential; params, if given, must repeat it.")
            quota.spend_request(caller)
            return auth_acknowledgement(caller)
        find_method(request.method, "http")  # unknown methods answer before any credential check
        caller = authenticate_bearer(authorization, from_browser=from_browser)
        return call(request, Context(caller))

    return respond(body, resolve)
