"""The demo page in headless Chromium when things fail underneath it: the network goes away, the
server restarts, the service refuses a token. The page shows it and recovers by itself."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, ConsoleMessage, Page, Request, Response, Route, ViewportSize, WebSocket, expect

from tests.asgi_server import AsgiServer
from tests.e2e.conftest import log_in, mint_reasons

OFFLINE_WAIT_MS = 2_000  # the first reconnect attempts come within 0.5 s and 1 s (backoff), if nothing holds them
PROMPT_RECONNECT_MS = 3_000  # from "online" to a new socket: one mint, then the handshake
RESTART_RECOVERY_MS = 20_000  # the next attempt after a few failed ones waits up to 2-8 s (full-jitter backoff)
EVENT_WAIT_MS = 10_000  # the sandbox publishes every second (SPORTS_SANDBOX_EVENT_INTERVAL)
MINT_ROUTE = "/api/sports-token"
# The states and the status line must fit a phone without sideways scrolling.
PHONE: ViewportSize = {"width": 390, "height": 844}
# Chromium's own report of a request that got no answer: it comes from its network layer, not from
# a line of script, and the page handles the failure through the client's "error" event. A server
# going down refuses new connections, and may reset or close one that was kept alive.
NETWORK_FAILURE = re.compile(
    r"Failed to load resource: net::ERR_(CONNECTION_REFUSED|CONNECTION_RESET|CONNECTION_CLOSED|EMPTY_RESPONSE)"
)
# The same report for a WebSocket the server refused (the client tries the token it still holds).
SOCKET_REFUSED = re.compile(
    r"WebSocket connection to 'ws://[^']+/sdk/v1/ws' failed: Error in connection establishment: "
    r"net::ERR_CONNECTION_REFUSED"
)


class ConsoleErrors:
    """The console errors and uncaught exceptions of a page, from the moment it is watched."""

    def __init__(self, page: Page) -> None:
        self.messages: list[ConsoleMessage] = []
        self.uncaught: list[str] = []
        page.on("console", lambda message: self.messages.append(message) if message.type == "error" else None)
        page.on("pageerror", lambda error: self.uncaught.append(str(error)))

    def all(self) -> list[str]:
        return [message.text for message in self.messages] + self.uncaught

    def from_page_code(self, *, failed_url_part: str) -> list[str]:
        """All but Chromium's reports of failed requests to URLs containing `failed_url_part`."""
        network_reports = [
            message
            for message in self.messages
            if (NETWORK_FAILURE.fullmatch(message.text) and failed_url_part in message.location["url"])
            or SOCKET_REFUSED.fullmatch(message.text)
        ]
        return [message.text for message in self.messages if message not in network_reports] + self.uncaught


def opened_sockets(page: Page) -> list[WebSocket]:
    """Grows with every WebSocket the page opens."""
    sockets: list[WebSocket] = []
    page.on("websocket", lambda socket: sockets.append(socket))
    return sockets


def mint_requests(page: Page) -> list[Request]:
    """Grows with every request to the mint route, answered or not."""
    requests: list[Request] = []
    page.on("request", lambda request: requests.append(request) if MINT_ROUTE in request.url else None)
    return requests


def minted(page: Page) -> list[Response]:
    """Grows with every token the mint route hands out (answered 200)."""
    answers: list[Response] = []
    page.on("response", lambda response: answers.append(response) if is_token(response) else None)
    return answers


def is_token(response: Response) -> bool:
    return MINT_ROUTE in response.url and response.status == 200


def expect_live(page: Page, *, timeout_ms: float = 5_000) -> None:
    expect(page.locator("#connection-state")).to_have_text("open", timeout=timeout_ms)
    expect(page.locator("#subscription-state")).to_have_text("active")
    expect(page.locator("#subscription-state")).to_have_attribute("data-state", "active")


def assert_no_sideways_scrolling(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def expect_new_events(page: Page) -> None:
    """An event arrives after this call. The feed keeps the newest 50, so entries are marked, not counted."""
    page.locator("#event-feed li").evaluate_all("items => items.forEach(item => { item.dataset.seen = 'yes'; })")
    expect(page.locator("#event-feed li:not([data-seen])").first).to_be_visible(timeout=EVENT_WAIT_MS)


def test_offline_holds_the_reconnect_until_online(browser: Browser, site: str) -> None:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    console = ConsoleErrors(page)
    sockets = opened_sockets(page)
    mints = mint_requests(page)
    log_in(page, site)
    expect_live(page)
    expect_new_events(page)
    expect(page.locator("#network-state")).to_be_hidden()

    context.set_offline(True)
    expect(page.locator("#network-state")).to_have_text("offline")
    expect(page.locator("#network-state")).to_be_visible()
    # Chromium's offline emulation leaves an open WebSocket open (it holds its frames until online),
    # so the socket is dropped by hand: the reconnect then has to wait for the network.
    page.click("#drop-socket")
    expect(page.locator("#connection-state")).to_have_text("reconnecting")
    expect(page.locator("#subscription-state")).to_have_text("restoring")
    sockets_while_offline, mints_while_offline = len(sockets), len(mints)
    page.wait_for_timeout(OFFLINE_WAIT_MS)
    assert (len(sockets), len(mints)) == (sockets_while_offline, mints_while_offline)  # no attempt at all
    expect(page.locator("#client-status")).to_be_hidden()  # so no failed attempt either
    assert_no_sideways_scrolling(page)

    with page.expect_websocket(timeout=PROMPT_RECONNECT_MS):
        context.set_offline(False)
    expect(page.locator("#network-state")).to_be_hidden()
    expect_live(page)
    expect_new_events(page)
    assert mint_reasons(page) == ["initial", "reconnect"]
    expect(page.locator("#client-error")).to_be_hidden()
    assert console.all() == []  # nothing was even attempted offline, so nothing failed
    context.close()


def test_the_page_recovers_when_the_server_restarts(browser: Browser, site_server: AsgiServer) -> None:
    page = browser.new_page(viewport=PHONE)
    console = ConsoleErrors(page)
    log_in(page, site_server.url)
    expect_live(page)
    expect_new_events(page)

    site_server.stop()  # uvicorn closes the socket (1012) and stops listening
    expect(page.locator("#connection-state")).to_have_text("reconnecting")
    expect(page.locator("#subscription-state")).to_have_text("restoring")
    # A reconnect attempt has failed (the mint route unreachable, then the socket with the token
    # still held refused too): a quiet line, not the red box.
    expect(page.locator("#client-status")).to_have_attribute("data-kind", re.compile("AuthEndpointError|RpcError"))
    expect(page.locator("#client-error")).to_be_hidden()
    assert_no_sideways_scrolling(page)

    mints, tokens = mint_requests(page), minted(page)
    site_server.start()  # the same port, the same database: the session survives
    expect_live(page, timeout_ms=RESTART_RECOVERY_MS)
    expect_new_events(page)
    # The attempt that reconnects asks for a new token first. If that mint was refused because it
    # came a moment before the server listened again, the client goes with the token it still holds
    # (valid for a minute) and the page recovers without a new one: either way every token the
    # route handed out is in the log, with its reason.
    assert mints, "no reconnect attempt asked the mint route for a new token"
    assert mint_reasons(page) == ["initial"] + ["reconnect"] * len(tokens)
    expect(page.locator("#client-status")).to_be_hidden()
    expect(page.locator("#client-error")).to_be_hidden()
    # The mint and socket attempts while the server was down fail as requests, and Chromium says so.
    assert console.from_page_code(failed_url_part=MINT_ROUTE) == []
    page.close()


def refuse_as_unauthorized(route: Route) -> None:
    """Answers a JSON-RPC call as the service does when it refuses the token, with a reason."""
    request_id = (route.request.post_data_json or {}).get("id")
    # A real sandbox accepts the tokens it mints; this stands for a service that has stopped doing so.
    error = {
        "code": "unauthorized",
        "message": "Invalid token: Signature verification failed.",
        "data": {"reason": "invalid_token"},
    }
    route.fulfill(json={"jsonrpc": "2.0", "id": request_id, "error": error})


def test_an_unauthorized_answer_shows_its_reason(browser: Browser, site: str) -> None:
    page = browser.new_page()
    log_in(page, site)
    expect(page.locator("#matches-rows tr")).to_have_count(10)
    page.route(f"{site}/sdk/v1/rpc", refuse_as_unauthorized)

    page.select_option("#sport-filter", "tennis")  # refused, and refused again with a new token
    expect(page.locator("#client-error")).to_have_attribute("data-reason", "invalid_token")
    expect(page.locator("#client-error")).to_have_attribute("data-kind", "UnauthorizedError")
    expect(page.locator("#client-error")).to_contain_text("invalid_token")
    assert mint_reasons(page) == ["initial", "unauthorized"]
    expect(page.locator("#client-status")).to_be_hidden()
    page.close()
