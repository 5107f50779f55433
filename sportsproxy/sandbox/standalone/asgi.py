"""The standalone server's ASGI application: the service's HTTP routes and its WebSocket on one address."""

from __future__ import annotations

import os
from typing import Any

from django.core.asgi import get_asgi_application

from sportsproxy.sandbox.standalone import SETTINGS_MODULE

os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE  # never the settings of a site that started it
http_application = get_asgi_application()  # sets Django up before the imports below

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from sportsproxy.sandbox.routing import websocket_urlpatterns  # noqa: E402

# No origin validator: the socket authenticates by its first frame (docs/protocol.md).
application: Any = ProtocolTypeRouter({"http": http_application, "websocket": URLRouter(websocket_urlpatterns)})
