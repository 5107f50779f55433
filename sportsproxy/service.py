"""What the service's documentation fixes, written once for the SDK, its Django glue and the demo.

The embedded sandbox (`sportsproxy.sandbox`) keeps its own copies of these facts on purpose:
it stands for the remote service, which owns them.
"""

from __future__ import annotations

import re

RPC_PATH = "/sdk/v1/rpc"
WS_PATH = "/sdk/v1/ws"

TTL_MIN, TTL_MAX, TTL_DEFAULT = 60, 86400, 600  # seconds a minted token lives

API_KEY_PATTERN = re.compile(r"^sk_(live|test)_[A-Za-z0-9_-]{32,}$")
API_KEY_FORMAT = "sk_live_ or sk_test_ followed by at least 32 url-safe characters"

SPORTS = ("football", "basketball", "tennis", "ice-hockey", "baseball", "esports")
