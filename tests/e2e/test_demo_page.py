"""The demo page in headless Chromium: the whole flow, the failure buttons, tabs, phone width."""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import USERNAME, log_in, mint_reasons

REFRESH_WAIT_MS = 45_000  # tokens live 60 s and are refreshed at half their life


def self_mints(page: Page) -> int:
    return page.locator("#mint-log li[data-minted-by=self]").count()


def test_anonymous_visitors_are_sent_to_the_login_page(browser: Browser, site: str) -> None:
    page = browser.new_page()
    page.goto(f"{site}/")
    expect(page).to_have_url(f"{site}/accounts/login/?next=/")
    page.close()


def test_the_whole_flow_in_one_tab(browser: Browser, site: str) -> None:
    page = browser.new_page()
    failed_calls: list[str] = []
    page.on("response", lambda response: failed_calls.append(response.url) if response.status >= 400 else None)
    console_errors: list[str] = []
    page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
    csp_violations: list[str] = []
    page.on(
        "console",
        lambda message: csp_violations.append(message.text) if "Content Security Policy" in message.text else None,
    )
    log_in(page, site)

    expect(page.locator("#matches-rows tr")).to_have_count(10)
    expect(page.locator("#server-matches tbody tr").first).to_be_visible()
    expect(page.locator("#connection-state")).to_have_text("open")
    expect(page.locator("#event-feed li").first).to_be_visible(timeout=15_000)
    assert mint_reasons(page) == ["initial"]
    assert "…" in page.locator("#token-fingerprint").inner_text()

    page.select_option("#sport-filter", "tennis")
    expect(page.locator("#matches-rows tr td:first-child").first).to_have_text("tennis")
    page.click("#next-page")
    expect(page.locator("#matches-note")).to_contain_text("of 24")

    page.click("#expire-token")
    expect(page.locator("#mint-log li")).to_have_count(2)
    assert mint_reasons(page) == ["initial", "unauthorized"]
    expect(page.locator("#matches-note")).to_contain_text("fetched by your browser")

    page.click("#drop-socket")
    expect(page.locator("#connection-state")).to_have_text("open", timeout=10_000)
    events_before = page.locator("#event-feed li").count()
    expect(page.locator("#event-feed li")).not_to_have_count(events_before, timeout=15_000)

    expect(page.locator("#mint-log li[data-reason=refresh]")).to_have_count(1, timeout=REFRESH_WAIT_MS)
    expect(page.locator("#client-error")).to_be_hidden()
    # One mint per cause: the socket told of the early end after the call had replaced the token mints none.
    # (The reconnect asks the route unless a refresh under way brings the next token: one entry or none.)
    assert [reason for reason in mint_reasons(page) if reason != "reconnect"] == ["initial", "unauthorized", "refresh"]
    assert [url for url in failed_calls if "/sdk/v1/rpc" in url or "/api/sports-token" in url] == []
    assert csp_violations == []
    assert console_errors == []  # not even a favicon 404

    log_out = page.get_by_role("button", name="Log out")
    expect(log_out).to_have_count(1)  # one button of that name, in the header
    expect(page.locator("header")).to_contain_text(USERNAME)
    log_out.click()
    expect(page.locator("#client-error")).to_contain_text("HTTP 401")
    expect(page.locator("#connection-state")).to_have_text("unauthorized")
    expect(page.locator("header")).to_contain_text("Logged out")  # the header no longer shows the user
    expect(page.locator("header")).not_to_contain_text(USERNAME)
    expect(page.get_by_role("link", name="Log in")).to_have_attribute("href", "/accounts/login/?next=/")
    page.close()


def test_a_token_handed_back_after_a_reconnect_is_logged_as_the_same_token(browser: Browser, site: str) -> None:
    page = browser.new_page()
    log_in(page, site)
    expect(page.locator("#connection-state")).to_have_text("open")
    expect(page.locator("#mint-log li")).to_have_count(1)
    minted_at = page.locator("#token-minted-at").inner_text()

    page.click("#drop-socket")
    expect(page.locator("#connection-state")).to_have_text("open", timeout=10_000)
    reconnect = page.locator("#mint-log li[data-reason=reconnect]")
    expect(reconnect).to_have_count(1)
    # The route gave the token this login already holds (it has more than half its life left).
    expect(reconnect).to_have_attribute("data-reused", "true")
    expect(reconnect).to_contain_text("the same token, handed back (not a new mint)")
    assert page.locator("#token-minted-at").inner_text() == minted_at
    assert page.locator("#mint-log li").first.get_attribute("data-reused") == "true"
    assert page.locator("#mint-log li").last.get_attribute("data-reused") == "false"  # the first was minted
    page.close()


def test_two_tabs_of_one_session_mint_once_per_refresh(browser: Browser, site: str) -> None:
    context = browser.new_context()
    first = context.new_page()
    log_in(first, site)
    expect(first.locator("#mint-log li")).to_have_count(1)
    second = context.new_page()
    second.goto(f"{site}/")
    expect(second.locator("#matches-rows tr")).to_have_count(10)
    minted_before = self_mints(first) + self_mints(second)

    for page in (first, second):
        expect(page.locator("#mint-log li[data-reason=refresh]")).to_have_count(1, timeout=REFRESH_WAIT_MS)
    assert self_mints(first) + self_mints(second) == minted_before + 1
    context.close()


def test_screenshots_at_desktop_and_phone_width(browser: Browser, site: str, tmp_path: Path) -> None:
    """DEMO_SCREENSHOT_DIR=docs/screenshots refreshes the pictures in the README."""
    folder = Path(os.environ.get("DEMO_SCREENSHOT_DIR") or tmp_path)
    for name, viewport in {"desktop": (1280, 900), "phone": (390, 844)}.items():
        page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        log_in(page, site)
        expect(page.locator("#event-feed li").first).to_be_visible(timeout=15_000)
        expect(page.locator("#server-matches tbody tr").first).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
        path = folder / f"demo-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000
        page.close()
