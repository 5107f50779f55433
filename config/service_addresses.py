"""Where the page's browser client calls the service: the rule for its two addresses, in one place.

config/settings.py applies it once; the pages and their Content-Security-Policy read the result
(SPORTS_PUBLIC_BASE_URL, SPORTS_PUBLIC_WS_URL). An empty address leaves the client its own default,
the page's origin, which is where the mounted sandbox answers: the socket at `/sdk/v1/ws` there, `wss:`
under HTTPS, which the proxy routes to `make serve`'s socket server (the docs' nginx socket route). Never a
server's own loopback address: a visitor's browser would look for it on the visitor's machine.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from sportsproxy.service import WS_PATH


def origin(url: str) -> str:
    """`scheme://host[:port]` of an absolute URL, or "" for anything else."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def websocket_url(base_url: str) -> str:
    """The service's socket at the origin of `base_url`: https becomes wss, http ws, path WS_PATH."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return ""
    return f"{'wss' if parts.scheme == 'https' else 'ws'}://{parts.netloc}{WS_PATH}"


def browser_addresses(
    *, public_base_url: str, public_ws_url: str, base_url: str, sandbox_mounted: bool
) -> tuple[str, str]:
    """The (base, socket) addresses the browser client is given.

    Each one set wins. With the sandbox not mounted, an unset base is SPORTS_BASE_URL's origin, not
    the page's (which serves no /sdk/v1/ of its own), and an unset socket follows the base."""
    base = public_base_url or ("" if sandbox_mounted else origin(base_url))
    return base, public_ws_url or ("" if sandbox_mounted else websocket_url(base))
