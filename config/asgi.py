"""ASGI entry point (`config.asgi.application`): Django over HTTP, the sandbox's socket over WebSocket."""

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

django_application = get_asgi_application()  # sets Django up before the imports below

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

websocket_routes: list[Any] = []
if settings.SPORTS_SANDBOX:
    from sportsproxy.sandbox.routing import websocket_urlpatterns

    websocket_routes = websocket_urlpatterns

# No AllowedHostsOriginValidator: the socket authenticates by its first frame, and must
# accept servers that send no Origin as well as browsers of any origin (docs/service.md).
application = ProtocolTypeRouter({"http": django_application, "websocket": URLRouter(websocket_routes)})
