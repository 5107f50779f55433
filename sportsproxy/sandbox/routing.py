from __future__ import annotations

from typing import Any

from django.urls import path

from sportsproxy.sandbox.realtime.consumers import SandboxConsumer

websocket_urlpatterns: list[Any] = [
    path("sdk/v1/ws", SandboxConsumer.as_asgi()),  # type: ignore[arg-type]  # Django's stubs know no ASGI apps
]
