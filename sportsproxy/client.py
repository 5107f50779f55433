"""The server flavour of the sports-data client: a typed JSON-RPC client over httpx2 (httpx, maintained).

    with SportsClient(api_key="sk_live_...", base_url="https://...") as client:
        token = client.tokens.create(ttl=600)
        page = client.matches.list(sports=["football"], limit=10)

`AsyncSportsClient` has the same surface with awaitable methods. A call made inside
`sportsproxy.request_id.use_request_id(...)` carries that id as `X-Request-ID`. Framework-free: this
module and its siblings `errors.py`, `responses.py` and `request_id.py` import nothing from Django.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import logging
import os
import random
import re
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import httpx2

from sportsproxy.errors import (
    SportsError,
    SportsProtocolError,
    SportsTimeout,
    SportsUnavailable,
    api_error,
)
from sportsproxy.extras import install_hint
from sportsproxy.request_id import REQUEST_ID_HEADER, current_request_id
from sportsproxy.responses import MatchPage, TokenResponse
from sportsproxy.service import (
    DEFAULT_MAX_RETRIES,
    RETRY_BASE_DELAY,
    RETRY_MAX_DELAY,
    RPC_PATH,
    TTL_DEFAULT,
    api_key_problem,
    origin_problem,
    validate_ttl,
)

if TYPE_CHECKING:
    from sportsproxy.realtime import SportsSocket

logger = logging.getLogger("sportsproxy.client")

DEFAULT_TIMEOUT = 5.0

_JWT_SHAPE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")


def _resolve_api_key(api_key: str | None) -> str:
    key = api_key if api_key is not None else os.environ.get("SPORTS_API_KEY", "")
    if not key:
        raise ValueError("No API key: pass api_key=..., or set SPORTS_API_KEY in the environment.")
    if (malformed := api_key_problem(key)) is not None:
        raise ValueError(f"api_key {malformed}. Copy it again from the dashboard.")
    return key


T = TypeVar("T")


def _checked_transport(transport: object, expected: type[T]) -> T | None:
    """`transport` if it is httpx2's kind; an httpx one (the stalled package) is refused with the fix."""
    if transport is None or isinstance(transport, expected):
        return transport
    raise TypeError(
        f"transport must be an httpx2.{expected.__name__} (import httpx2 in place of httpx: the SDK speaks "
        f"httpx2, httpx's maintained continuation); got {type(transport).__module__}.{type(transport).__qualname__}."
    )


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """The TLS context every client of this process verifies the service with: httpx2's default (the system's
    certificates, or SSL_CERT_FILE / SSL_CERT_DIR as they are at the first client), built once. Loading the
    certificates costs about 10 ms of CPU, and one context serves any number of connections and threads."""
    return httpx2.create_ssl_context()


def _resolve_base_url(base_url: str | None) -> str:
    url = base_url if base_url is not None else os.environ.get("SPORTS_BASE_URL", "")
    if not url:
        raise ValueError("No base_url: pass base_url=..., or set SPORTS_BASE_URL in the environment.")
    problem = origin_problem(url)
    if problem is not None:
        raise ValueError(f"base_url {problem}. The client adds {RPC_PATH} itself.")
    return url.removesuffix("/")


class _RpcProtocol:
    """What the sync and async clients share: building requests, reading answers, retry policy."""

    def __init__(self, credential: str, base_url: str, max_retries: int) -> None:
        self._credential = credential
        self.base_url = base_url
        self.max_retries = max_retries
        self.random: Callable[[], float] = random.random  # the jitter's source; tests pin it

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def with_token(self, token: str) -> Self:
        """A client on the same connection pool that calls with a JWT instead of the key."""
        if not _JWT_SHAPE.match(token):
            raise ValueError("with_token() takes a JWT (three dot-separated base64url parts).")
        return self._twin(token)

    def with_api_key(self, api_key: str) -> Self:
        """A client on the same connection pool that calls with another API key (key rotation)."""
        return self._twin(_resolve_api_key(api_key))

    def _twin(self, credential: str) -> Self:
        twin = copy.copy(self)
        twin._credential = credential
        twin._attach_resources()
        return twin

    def _attach_resources(self) -> None:
        """Give the client its namespaces (`tokens`, `matches`), bound to it."""
        raise NotImplementedError

    def _request(self, method: str, params: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
        request_id = uuid.uuid4().hex
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
        headers = {"Authorization": f"Bearer {self._credential}", "Content-Type": "application/json"}
        followed = current_request_id()  # the caller's request, for the service's logs (sportsproxy.request_id)
        if followed is not None:
            headers[REQUEST_ID_HEADER] = followed
        return request_id, headers, body

    def retry_delay(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1-based): full jitter, capped."""
        return self.random() * min(RETRY_MAX_DELAY, RETRY_BASE_DELAY * 2.0 ** (attempt - 1))

    def _retryable(self, error: httpx2.HTTPError, attempt: int) -> bool:
        # Only failures to connect are retried: the request cannot have reached the service.
        return isinstance(error, (httpx2.ConnectError, httpx2.ConnectTimeout)) and attempt <= self.max_retries

    def _log_retry(self, method: str, request_id: str, error: httpx2.HTTPError, attempt: int, delay: float) -> None:
        logger.debug(
            "retrying %s id=%s after %s (retry %d of %d) in %.3f s",
            method, request_id, type(error).__name__, attempt, self.max_retries, delay,
        )  # fmt: skip

    @staticmethod
    def _transport_error(error: httpx2.HTTPError, request_id: str) -> SportsError:
        if isinstance(error, httpx2.TimeoutException):
            return SportsTimeout(
                f"The sports service did not answer in time ({type(error).__name__}).", request_id=request_id
            )
        if isinstance(error, httpx2.RemoteProtocolError):
            return SportsProtocolError(f"The sports service broke the HTTP protocol: {error}.", request_id=request_id)
        return SportsUnavailable(f"Could not reach the sports service ({type(error).__name__}).", request_id=request_id)

    @staticmethod
    def _result(response: httpx2.Response, request_id: str) -> dict[str, Any]:
        """The `result` of a JSON-RPC answer, or the SportsError it stands for."""
        if response.status_code != 200:
            raise SportsProtocolError(
                f"Expected HTTP 200 with a JSON-RPC envelope, got HTTP {response.status_code}.", request_id=request_id
            )
        try:
            answer = response.json()
        except ValueError:
            raise SportsProtocolError("The answer is not JSON.", request_id=request_id) from None
        if (
            not isinstance(answer, dict)
            or answer.get("jsonrpc") != "2.0"
            or ("result" in answer) == ("error" in answer)
        ):
            raise SportsProtocolError("The answer is not a JSON-RPC 2.0 envelope.", request_id=request_id)
        if "error" in answer:
            raise api_error(answer, request_id)
        if answer.get("id") != request_id:
            raise SportsProtocolError(
                f"The answer's id {answer.get('id')!r} is not this request's.", request_id=request_id
            )
        result = answer["result"]
        if not isinstance(result, dict):
            raise SportsProtocolError("The answer's result is not an object.", request_id=request_id)
        return result


def _parsed(parse: Callable[[dict[str, Any]], Any], result: dict[str, Any]) -> Any:
    try:
        return parse(result)
    except (KeyError, TypeError, ValueError) as error:
        raise SportsProtocolError(f"The result does not have the documented shape ({error!r}).") from None


def _list_params(sports: list[str] | None, limit: int | None, cursor: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"sports": sports, "limit": limit, "cursor": cursor}
    return {name: value for name, value in params.items() if value is not None}


class SportsClient(_RpcProtocol):
    """Synchronous client. One connection pool per instance: create it once, reuse it, close it.

    `api_key` and `base_url` default to SPORTS_API_KEY and SPORTS_BASE_URL from the
    environment. Connection failures are retried `max_retries` times with jittered
    backoff; answered errors never are.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        super().__init__(_resolve_api_key(api_key), _resolve_base_url(base_url), max_retries)
        self.sleep: Callable[[float], None] = time.sleep
        transport = _checked_transport(transport, httpx2.BaseTransport)
        self._http = httpx2.Client(
            base_url=self.base_url, timeout=timeout, transport=transport, verify=shared_tls_context()
        )
        self._attach_resources()

    def _attach_resources(self) -> None:
        self.tokens = Tokens(self)
        self.matches = Matches(self)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call any method; returns its `result` object or raises a SportsError."""
        request_id, headers, body = self._request(method, params or {})
        attempt = 0
        while True:
            logger.debug("POST %s%s method=%s id=%s", self.base_url, RPC_PATH, method, request_id)
            try:
                response = self._http.post(RPC_PATH, content=body, headers=headers)
            except httpx2.HTTPError as error:
                attempt += 1
                if not self._retryable(error, attempt):
                    raise self._transport_error(error, request_id) from None
                delay = self.retry_delay(attempt)
                self._log_retry(method, request_id, error, attempt, delay)
                self.sleep(delay)
                continue
            return self._result(response, request_id)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Tokens:
    def __init__(self, client: SportsClient) -> None:
        self._client = client

    def create(self, ttl: int = TTL_DEFAULT) -> TokenResponse:
        """Mint a token for the browser, valid for `ttl` seconds (60..86400)."""
        result = self._client.call("tokens.create", {"ttl": validate_ttl(ttl)})
        token: TokenResponse = _parsed(TokenResponse.from_result, result)
        return token


class Matches:
    def __init__(self, client: SportsClient) -> None:
        self._client = client

    def list(self, sports: list[str] | None = None, limit: int | None = None, cursor: str | None = None) -> MatchPage:
        """One page of matches, optionally of some `sports` only."""
        result = self._client.call("matches.list", _list_params(sports, limit, cursor))
        page: MatchPage = _parsed(MatchPage.from_result, result)
        return page


class AsyncSportsClient(_RpcProtocol):
    """Asynchronous twin of SportsClient: the same names, awaitable."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(_resolve_api_key(api_key), _resolve_base_url(base_url), max_retries)
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        self.timeout = timeout
        transport = _checked_transport(transport, httpx2.AsyncBaseTransport)
        self._http = httpx2.AsyncClient(
            base_url=self.base_url, timeout=timeout, transport=transport, verify=shared_tls_context()
        )
        self._attach_resources()

    def _attach_resources(self) -> None:
        self.tokens = AsyncTokens(self)
        self.matches = AsyncMatches(self)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call any method; returns its `result` object or raises a SportsError."""
        request_id, headers, body = self._request(method, params or {})
        attempt = 0
        while True:
            logger.debug("POST %s%s method=%s id=%s", self.base_url, RPC_PATH, method, request_id)
            try:
                response = await self._http.post(RPC_PATH, content=body, headers=headers)
            except httpx2.HTTPError as error:
                attempt += 1
                if not self._retryable(error, attempt):
                    raise self._transport_error(error, request_id) from None
                delay = self.retry_delay(attempt)
                self._log_retry(method, request_id, error, attempt, delay)
                await self.sleep(delay)
                continue
            return self._result(response, request_id)

    def connect(self) -> AbstractAsyncContextManager[SportsSocket]:
        """Open the service's WebSocket, authenticated by an `auth {apiKey}` first frame.

        Use as `async with client.connect() as socket:`; see `sportsproxy.realtime`. Needs the
        `realtime` extra (websockets), imported only here so that HTTP-only users never load it.
        """
        try:
            from sportsproxy.realtime import open_socket, websocket_url
        except ImportError as error:
            raise ImportError(
                f"AsyncSportsClient.connect() needs websockets: install {install_hint('realtime', 'websockets')}."
            ) from error
        slot = "token" if self._credential.count(".") == 2 else "apiKey"
        return open_socket(websocket_url(self.base_url), {slot: self._credential}, self.timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class AsyncTokens:
    def __init__(self, client: AsyncSportsClient) -> None:
        self._client = client

    async def create(self, ttl: int = TTL_DEFAULT) -> TokenResponse:
        """Mint a token for the browser, valid for `ttl` seconds (60..86400)."""
        result = await self._client.call("tokens.create", {"ttl": validate_ttl(ttl)})
        token: TokenResponse = _parsed(TokenResponse.from_result, result)
        return token


class AsyncMatches:
    def __init__(self, client: AsyncSportsClient) -> None:
        self._client = client

    async def list(
        self, sports: list[str] | None = None, limit: int | None = None, cursor: str | None = None
    ) -> MatchPage:
        """One page of matches, optionally of some `sports` only."""
        result = await self._client.call("matches.list", _list_params(sports, limit, cursor))
        page: MatchPage = _parsed(MatchPage.from_result, result)
        return page
