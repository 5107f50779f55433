"""An httpx2 transport that answers from the embedded sandbox, in this process.

It hands the request body and headers to the same dispatcher the `/sdk/v1/rpc` view
uses, so the SDK behaves exactly as over the network, without a network hop (and
whatever port runserver listens on). The SDK's Django glue selects it with
SPORTS_TRANSPORT = "sandbox".
"""

from __future__ import annotations

import httpx2
from asgiref.sync import sync_to_async

from sportsproxy.sandbox.rpc.dispatch import handle_http
from sportsproxy.service import RPC_PATH


class SandboxTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self._answer(request, request.read())

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        return await sync_to_async(self._answer)(request, body)  # the sandbox reads the database

    @staticmethod
    def _answer(request: httpx2.Request, body: bytes) -> httpx2.Response:
        if request.url.path != RPC_PATH or request.method != "POST":
            return httpx2.Response(404, text=f"The embedded sandbox only answers POST {RPC_PATH}.")
        answer = handle_http(
            body, authorization=request.headers.get("Authorization"), origin=request.headers.get("Origin")
        )
        return httpx2.Response(200, json=answer)
