"""The product's first page (config/views.py, templates/start.html, static/start.js) in headless Chromium,
with the login, logout and 503 pages around it. It is `reverse("start")`: `/` when it is the site's only
page, `/start/` when another app of the site answers `/`."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from django.urls import reverse
from playwright.sync_api import Browser, BrowserContext, Page, WebSocketRoute, expect

from config import project
from tests.e2e.conftest import PASSWORD, USERNAME, log_in

EVENT_WAIT_MS = 30_000  # the live server plays one event per sport a second (SPORTS_SANDBOX_EVENT_INTERVAL)
DASH = "\N{EN DASH}"  # as the page writes ranges and scores
SOCKET_LIMIT_WORDS = "Too many live connections for this account; retrying…"


def watched(page: Page) -> dict[str, list[str]]:
    """What the page does that a test checks afterwards: console errors, and the service calls it makes."""
    seen: dict[str, list[str]] = {"console_errors": [], "rpc_calls": [], "failed": []}
    page.on("console", lambda message: seen["console_errors"].append(message.text) if message.type == "error" else None)
    page.on("request", lambda request: seen["rpc_calls"].append(request.url) if "/sdk/v1/rpc" in request.url else None)
    page.on("response", lambda response: seen["failed"].append(response.url) if response.status >= 400 else None)
    return seen


def rows(page: Page) -> Any:
    return page.locator("#matches-rows tr")


def to_a_page_with_live_matches(page: Page) -> None:
    """Pages on until the table shows a match being played (the service lists by kick-off, oldest first)."""
    expect(page.locator("#matches-table")).to_have_attribute("aria-busy", "false")
    while not page.locator("#matches-rows .status[data-status=live]").count():
        page.click("#next-page")
        expect(page.locator("#matches-table")).to_have_attribute("aria-busy", "false")


def test_a_visitor_sees_one_sentence_and_a_way_to_log_in(browser: Browser, site: str) -> None:
    page = browser.new_page()
    page.goto(f"{site}{reverse('start')}")
    expect(page).to_have_title(project.NAME)
    expect(page.locator("h1")).to_have_text(project.NAME)
    expect(page.locator("main p.lead")).to_have_count(1)
    expect(page.locator("#log-in")).to_have_text("Log in")
    expect(page.locator("#client-config")).to_have_count(0)  # no client, so no mint, before a login
    expect(page.locator("#connection-state")).to_have_count(0)

    page.click("#log-in")
    expect(page).to_have_title(f"Log in · {project.NAME}")
    expect(page.locator("form.form .field label[for=id_username]")).to_have_text("Username")
    expect(page.locator("#id_username")).to_be_focused()  # the form's autofocus
    expect(page.locator("#id_password")).to_have_attribute("type", "password")
    page.close()


def test_a_wrong_password_is_said_on_the_styled_form(browser: Browser, site: str) -> None:
    page = browser.new_page()
    page.goto(f"{site}/accounts/login/")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", "not-the-password")
    page.click("button[type=submit]")
    expect(page.locator("#login-error")).to_have_text("Your username and password did not match. Please try again.")
    expect(page.locator("#login-error")).to_have_attribute("role", "alert")
    expect(page.locator("#id_username")).to_have_value(USERNAME)
    expect(page.locator("#id_password")).to_have_value("")
    # The site's stylesheet dresses the form: a card on the page's background, not Django's bare `as_p`.
    card = page.locator(".card").evaluate("card => getComputedStyle(card).backgroundColor")
    body = page.locator("body").evaluate("body => getComputedStyle(body).backgroundColor")
    assert card == "rgb(255, 255, 255)"
    assert body != card
    page.close()


def test_logged_in_the_browser_lists_the_matches_by_sport_and_page(browser: Browser, site: str) -> None:
    page = browser.new_page()
    seen = watched(page)
    log_in(page, site, reverse("start"))

    expect(page).to_have_title(project.NAME)
    expect(page.locator("h1")).to_have_text(project.NAME)
    expect(page.locator("#session-user")).to_have_text(USERNAME)
    expect(rows(page)).to_have_count(10)
    assert seen["rpc_calls"], "the matches come from the browser's own call to the service"
    expect(page.locator("#matches-note")).to_have_text(f"1{DASH}10 of 144")
    expect(page.locator("#previous-page")).to_be_disabled()

    page.select_option("#sport-filter", "tennis")
    expect(page.locator("#matches-note")).to_have_text(f"1{DASH}10 of 24")
    assert set(rows(page).evaluate_all("rows => rows.map(row => row.dataset.sport)")) == {"tennis"}
    first_page = rows(page).evaluate_all("rows => rows.map(row => row.dataset.matchId)")

    page.click("#next-page")
    expect(page.locator("#matches-note")).to_have_text(f"11{DASH}20 of 24")
    expect(rows(page).first).not_to_have_attribute("data-match-id", first_page[0])
    page.click("#next-page")
    expect(page.locator("#matches-note")).to_have_text(f"21{DASH}24 of 24")
    expect(page.locator("#next-page")).to_be_disabled()  # the service gave no next cursor
    page.click("#previous-page")
    page.click("#previous-page")
    expect(page.locator("#matches-note")).to_have_text(f"1{DASH}10 of 24")
    assert rows(page).evaluate_all("rows => rows.map(row => row.dataset.matchId)") == first_page

    assert seen["console_errors"] == []  # no CSP violation, no failed call
    assert seen["failed"] == []
    page.close()


def test_live_events_arrive_update_the_rows_and_the_connection_is_said_in_words(browser: Browser, site: str) -> None:
    page = browser.new_page()
    seen = watched(page)
    log_in(page, site, reverse("start"))
    state = page.locator("#connection-state")
    expect(state).to_have_attribute("data-state", "open")
    expect(state).to_have_text("Live")

    page.select_option("#sport-filter", "football")
    expect(page.locator("#matches-note")).to_have_text(f"1{DASH}10 of 24")
    to_a_page_with_live_matches(page)

    shown_events = page.locator("#event-list li:not([hidden])")
    expect(shown_events.first).to_be_visible(timeout=EVENT_WAIT_MS)
    assert set(shown_events.evaluate_all("items => items.map(item => item.dataset.sport)")) == {"football"}
    expect(page.locator("#matches-rows tr.changed").first).to_be_visible(timeout=EVENT_WAIT_MS)
    changed = page.locator("#matches-rows tr.changed").first
    expect(changed.locator(".score")).to_have_text(re.compile(rf"^\d+ {DASH} \d+$"))

    page.context.set_offline(True)
    expect(state).to_have_text("Offline — waiting for the network")
    page.context.set_offline(False)
    expect(state).to_have_text("Live", timeout=15_000)

    shown = page.locator("main").inner_text().replace(project.NAME, "")
    assert "token" not in shown.lower()  # no token facts on this page
    assert seen["console_errors"] == []
    page.close()


def test_the_services_refusal_of_the_socket_4429_is_said_in_words(browser: Browser, site: str, settings: Any) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"growth": {"connections": 0}}  # the account may hold no socket
    page = browser.new_page()
    log_in(page, site, reverse("start"))
    state = page.locator("#connection-state")
    expect(state).to_have_text(SOCKET_LIMIT_WORDS)
    expect(state).to_have_attribute("data-reason", "socket-limit")
    expect(state).to_have_attribute("data-state", "reconnecting")  # the client's own word, and it retries
    expect(rows(page)).to_have_count(10)  # the matches come over HTTP all the same
    page.close()


def test_log_out_leads_to_the_styled_logged_out_page(browser: Browser, site: str) -> None:
    page = browser.new_page()
    log_in(page, site, reverse("start"))
    expect(page.locator("#connection-state")).to_have_text("Live")
    log_out = page.get_by_role("button", name="Log out")
    expect(log_out).to_have_count(1)
    log_out.click()
    expect(page).to_have_title(f"Logged out · {project.NAME}")
    expect(page.locator("h1")).to_have_text("Logged out")
    expect(page.locator("#project-name")).to_have_text(project.NAME)
    expect(page.locator("#session")).to_have_count(0)
    page.click("#log-in-again")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("#session-user")).to_have_text(USERNAME)
    page.close()


def test_screenshots_at_desktop_and_phone_width(browser: Browser, site: str, tmp_path: Path) -> None:
    """START_SCREENSHOT_DIR=docs/screenshots remakes the README's pictures of the first page (`make screenshots`)."""
    folder = Path(os.environ.get("START_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    for name, (width, height) in {"desktop": (1280, 900), "phone": (390, 844)}.items():
        page = browser.new_page(viewport={"width": width, "height": height})
        log_in(page, site, reverse("start"))
        expect(rows(page)).to_have_count(10)
        to_a_page_with_live_matches(page)
        expect(page.locator("#connection-state")).to_have_text("Live")
        expect(page.locator("#event-list li:not([hidden])").nth(2)).to_be_visible(timeout=EVENT_WAIT_MS)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
        path = folder / f"start-{name}.png"
        page.screenshot(path=str(path), full_page=True, animations="disabled")
        assert path.stat().st_size > 10_000
        page.close()


def test_a_session_ended_elsewhere_is_said_in_words_when_the_page_next_needs_a_token(
    browser: Browser, site: str
) -> None:
    context = browser.new_context()
    page = context.new_page()
    sockets: list[WebSocketRoute] = []

    def pass_through(socket: WebSocketRoute) -> None:
        socket.connect_to_server()
        sockets.append(socket)

    page.route_web_socket(re.compile(r"/sdk/v1/ws$"), pass_through)  # so that the test can drop the socket
    log_in(page, site, reverse("start"))
    state = page.locator("#connection-state")
    expect(state).to_have_text("Live")

    context.request.post(f"{site}/accounts/logout/", headers={"X-CSRFToken": csrf_token(context)})  # another tab
    sockets[-1].close(code=1012, reason="service restart")  # reconnecting, the page asks the mint route again
    expect(state).to_have_text("Signed out — log in again", timeout=15_000)
    expect(state).to_have_attribute("data-state", "unauthorized")
    expect(page.locator("#signed-out")).to_be_visible()
    context.close()


def csrf_token(context: BrowserContext) -> str:
    (token,) = [cookie["value"] for cookie in context.cookies() if cookie["name"] == "csrftoken"]
    return token
