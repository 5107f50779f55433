"""The product's first page (config/views.py, templates/start.html, static/start.js) in headless Chromium,
with the login, logout and 503 pages around it. It is `reverse("start")`: `/` when it is the site's only
page, `/start/` when another app of the site answers `/`."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Browser, BrowserContext, Page, Route, WebSocketRoute, expect

from config import project
from sportsproxy.sandbox import clock
from sportsproxy.sandbox.matches.book import book
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


def shown_ids(page: Page) -> list[str]:
    ids: list[str] = rows(page).evaluate_all("rows => rows.map(row => row.dataset.matchId)")
    return ids


@dataclass(frozen=True)
class Midday:
    """The browser's time zone (`zone`), in which the sandbox's matches were generated at noon (`noon`)."""

    zone: str
    noon: datetime

    def todays(self, sport: str | None = None) -> list[str]:
        """The ids of the matches that start today in `zone` (of `sport`), in the service's order."""
        day = (self.noon - timedelta(hours=12), self.noon + timedelta(hours=12))
        return [m.id for m in book("test") if day[0] <= m.starts_at < day[1] and sport in (None, m.sport)]


@pytest.fixture
def midday() -> Midday:
    """The sandbox generates its matches in minutes from the hour it first lists them (live ones just before it,
    sportsproxy/sandbox/matches/book.py): the browser is put in the whole-hour zone where that hour is noon, so
    its "today" holds the morning's results, the live matches and the afternoon's, at any hour of the run."""
    while True:
        hour = clock.now().replace(minute=0, second=0, microsecond=0)
        book("test")  # generated now, from `hour`
        if clock.now() - hour < timedelta(hours=1):
            break
        book.cache_clear()  # the hour turned meanwhile
    ahead = 12 - hour.hour  # hours ahead of UTC; the Etc/GMT zones count them the other way
    return Midday(zone=f"Etc/GMT{-ahead:+d}" if ahead else "Etc/GMT", noon=hour)


def open_page(browser: Browser, midday: Midday, **options: Any) -> Page:
    return browser.new_page(timezone_id=midday.zone, **options)


def assert_only_todays_matches(page: Page) -> None:
    """Every row's kick-off falls on the browser's own date."""
    days = rows(page).evaluate_all(
        "rows => rows.map(row => new Date(row.querySelector('time').dateTime).toDateString())"
    )
    assert days
    assert set(days) == {page.evaluate("new Date().toDateString()")}


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


def test_logged_in_the_page_opens_on_todays_matches_paged_here_and_by_sport(
    browser: Browser, site: str, midday: Midday
) -> None:
    page = open_page(browser, midday)
    seen = watched(page)
    log_in(page, site, reverse("start"))

    expect(page).to_have_title(project.NAME)
    expect(page.locator("h1")).to_have_text(project.NAME)
    expect(page.locator("#session-user")).to_have_text(USERNAME)
    todays = midday.todays()
    assert len(todays) > 30  # four pages of the 144 the service lists (sandbox book, fixed seed)
    expect(page.locator("#matches-note")).to_have_text(f"1{DASH}10 of today's {len(todays)} matches")
    expect(rows(page)).to_have_count(10)
    assert_only_todays_matches(page)  # as the page loads: not the service's first page (earlier days)
    assert shown_ids(page) == todays[:10]
    assert seen["rpc_calls"], "the matches come from the browser's own call to the service"
    expect(page.locator("#previous-page")).to_be_disabled()

    pages = [shown_ids(page)]  # paged here, without another call
    calls = len(seen["rpc_calls"])
    while page.locator("#next-page").is_enabled():
        page.click("#next-page")
        pages.append(shown_ids(page))
    assert [match for shown in pages for match in shown] == todays
    last = len(todays) - (len(pages) - 1) * 10
    expect(page.locator("#matches-note")).to_have_text(
        f"{len(todays) - last + 1}{DASH}{len(todays)} of today's {len(todays)} matches"
    )
    page.click("#previous-page")
    expect(page.locator("#matches-note")).to_have_text(re.compile(rf"^{len(todays) - last - 9}{DASH}"))
    assert len(seen["rpc_calls"]) == calls

    page.select_option("#sport-filter", "tennis")
    tennis = midday.todays("tennis")
    expect(page.locator("#matches-note")).to_have_text(f"1{DASH}{len(tennis)} of today's {len(tennis)} matches")
    assert shown_ids(page) == tennis
    assert set(rows(page).evaluate_all("rows => rows.map(row => row.dataset.sport)")) == {"tennis"}
    assert_only_todays_matches(page)
    expect(page.locator("#previous-page")).to_be_disabled()
    expect(page.locator("#next-page")).to_be_disabled()

    assert seen["console_errors"] == []  # no CSP violation, no failed call
    assert seen["failed"] == []
    page.close()


def fake_listing(page: Page, answer: Any) -> list[dict[str, Any]]:
    """The service's `matches.list` answered by `answer(params, call_number)`; its other methods as they are."""
    calls: list[dict[str, Any]] = []

    def route(route: Route) -> None:
        request = route.request.post_data_json
        if request["method"] != "matches.list":
            route.continue_()
            return
        calls.append(request["params"])
        route.fulfill(json={"jsonrpc": "2.0", "id": request["id"], "result": answer(request["params"], len(calls))})

    page.route(re.compile(r"/sdk/v1/rpc$"), route)
    return calls


def test_a_day_listed_beyond_ten_calls_shows_what_was_found_and_says_so(
    browser: Browser, site: str, midday: Midday
) -> None:
    def endless(params: dict[str, Any], call: int) -> dict[str, Any]:
        data = [
            {
                "id": f"m-{call}-{n}",
                "sport": "football",
                "competition": "Premier Division",
                "home": "Riverside FC",
                "away": "Harbour United",
                "startsAt": midday.noon.isoformat(),
                "status": "scheduled",
                "score": {"home": 0, "away": 0},
            }
            for n in range(params["limit"])
        ]
        return {"data": data, "pagination": {"limit": params["limit"], "total": 5000, "nextCursor": f"c{call}"}}

    page = open_page(browser, midday)
    calls = fake_listing(page, endless)
    log_in(page, site, reverse("start"))
    expect(page.locator("#matches-note")).to_have_text(
        f"1{DASH}10 of today's first 1000 matches (more were not fetched)"
    )
    assert [call.get("limit") for call in calls] == [100] * 10
    assert [call.get("cursor") for call in calls] == [None] + [f"c{n}" for n in range(1, 10)]
    page.close()


def test_a_day_without_matches_is_said_in_a_sentence(browser: Browser, site: str, midday: Midday) -> None:
    page = open_page(browser, midday)
    fake_listing(page, lambda params, call: {"data": [], "pagination": {"limit": 100, "total": 0, "nextCursor": None}})
    log_in(page, site, reverse("start"))
    expect(page.locator("#matches-empty")).to_have_text("No matches today.")
    expect(page.locator("#matches-table")).to_be_hidden()
    expect(page.locator("#next-page")).to_be_disabled()
    page.select_option("#sport-filter", "ice-hockey")
    expect(page.locator("#matches-empty")).to_have_text("No ice hockey matches today.")
    page.close()


def test_live_events_arrive_update_the_rows_and_the_connection_is_said_in_words(
    browser: Browser, site: str, midday: Midday
) -> None:
    page = open_page(browser, midday)
    seen = watched(page)
    log_in(page, site, reverse("start"))
    state = page.locator("#connection-state")
    expect(state).to_have_attribute("data-state", "open")
    expect(state).to_have_text("Live")

    page.select_option("#sport-filter", "football")
    football = midday.todays("football")
    expect(page.locator("#matches-note")).to_have_text(f"1{DASH}{len(football)} of today's {len(football)} matches")
    expect(page.locator("#matches-rows .status[data-status=live]")).to_have_count(4)  # today's are on one page

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


def test_the_services_refusal_of_the_socket_4429_is_said_in_words(
    browser: Browser, site: str, settings: Any, midday: Midday
) -> None:
    settings.SPORTS_SANDBOX_RATE_CLASSES = {"growth": {"connections": 0}}  # the account may hold no socket
    page = open_page(browser, midday)
    log_in(page, site, reverse("start"))
    state = page.locator("#connection-state")
    expect(state).to_have_text(SOCKET_LIMIT_WORDS)
    expect(state).to_have_attribute("data-reason", "socket-limit")
    expect(state).to_have_attribute("data-state", "limited")  # the client's own word, and it retries
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


def test_screenshots_at_desktop_and_phone_width(
    browser: Browser, site: str, midday: Midday, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page as it loads, at desktop and phone width. START_SCREENSHOT_DIR=docs/screenshots remakes the README's
    pictures (`make screenshots`); START_SCREENSHOT_NAME takes them under another name than the project's."""
    folder = Path(os.environ.get("START_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    name = os.environ.get("START_SCREENSHOT_NAME") or project.NAME
    monkeypatch.setattr(project, "NAME", name)  # what every page's context reads (config/context_processors.py)
    for size, (width, height) in {"desktop": (1280, 900), "phone": (390, 844)}.items():
        page = open_page(browser, midday, viewport={"width": width, "height": height})
        log_in(page, site, reverse("start"))
        expect(page.locator("h1")).to_have_text(name)
        expect(rows(page)).to_have_count(10)
        assert_only_todays_matches(page)
        expect(page.locator("#connection-state")).to_have_text("Live")
        expect(page.locator("#event-list li:not([hidden])").nth(2)).to_be_visible(timeout=EVENT_WAIT_MS)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
        path = folder / f"start-{size}.png"
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
