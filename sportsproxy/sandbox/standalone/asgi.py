"""The standalone server's ASGI application: the service's HTTP routes and its WebSocket on one address.

server.py imports it once Django is set up on the standalone settings.
"""

from __future__ import annotations

from typing import Any

from django.core.asgi import get_asgi_application

http_application = get_asgi_application()  # sets Django up before the imports below

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from sportsproxy.sandbox.routing import websocket_urlpatterns  # noqa: E402

# No origin validator: the socket authenticates by its first frame (docs/service.md).
application: Any = ProtocolTypeRouter({"http": http_application, "websocket": URLRouter(websocket_urlpatterns)})
