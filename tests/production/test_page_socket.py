"""The page finds the socket where it came from: `make serve` with the sandbox mounted and no
SPORTS_PUBLIC_WS_URL, behind docs/deploy.md's nginx with the socket's route (the mounted sandbox's page),
and a real Chromium that logs in through nginx. The page's client is given no socket address, and its
socket opens at the page's own origin, `/sdk/v1/ws`, which nginx routes to the socket server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from playwright.sync_api import expect, sync_playwright

from tests.production.cluster import PASSWORD, USERNAME, Cluster, free_port, require_engines
from tests.production.nginx import main_configuration, nginx_binary, site_configuration

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
OPEN_WITHIN_MS = 30_000


@pytest.fixture(scope="module")
def node() -> Iterator[Cluster]:
    require_engines()
    running = Cluster(SPORTS_TRUSTED_PROXY_COUNT="1", SPORTS_TRUSTED_PROXIES="127.0.0.1/32")
    running.environment.pop("SPORTS_PUBLIC_WS_URL", None)  # the operator names no socket address
    try:
        running.start(events_in=(True,))
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def proxy(node: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    nginx = nginx_binary()
    port = free_port()
    http_address = node.urls[0].removeprefix("http://")
    socket_address = node.ws_urls[0].removeprefix("ws://").removesuffix("/sdk/v1/ws")
    site = site_configuration(listen=port, http_address=http_address, socket_address=socket_address)
    main = main_configuration(tmp_path_factory.mktemp("nginx"), site)
    process = subprocess.Popen([nginx, "-c", str(main)])  # noqa: S603 - the nginx binary, a file of ours
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                if httpx2.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert process.poll() is None, "nginx exited"
            assert time.monotonic() < deadline, "nginx did not answer within 15 s"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def chromium() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        message = "Chromium not found: install Debian's chromium package or set CHROMIUM_PATH."
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def test_the_page_opens_its_socket_at_its_own_origin_through_the_proxy(node: Cluster, proxy: str) -> None:
    # The product's first page: `/`, or `/start/` where a site app answers `/`.
    start = "/start/" if httpx2.get(f"{proxy}/start/", timeout=10).status_code == 200 else "/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            opened: list[str] = []
            page.on("websocket", lambda socket: opened.append(socket.url))
            page.goto(f"{proxy}/accounts/login/?next={start}")
            page.fill("#id_username", USERNAME)
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{proxy}{start}")
            config = json.loads(page.locator("#client-config").text_content() or "{}")
            assert config["wsUrl"] is None  # no address of the server's: the page's own origin
            expect(page.locator("#connection-state")).to_have_attribute("data-state", "open", timeout=OPEN_WITHIN_MS)
            assert set(opened) == {f"{proxy.replace('http://', 'ws://')}/sdk/v1/ws"}
            html = page.content()
            assert node.ws_urls[0] not in html  # the socket server's own address is nowhere on the page
        finally:
            browser.close()
