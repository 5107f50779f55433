"""The product's starting page (config/views.py, templates/start.html, static/start.js) in headless Chromium:
`/` in a project without the demo, `/start/` beside it."""

from __future__ import annotations

from django.urls import reverse
from playwright.sync_api import Browser, expect

from config import project
from tests.e2e.conftest import USERNAME, log_in


def test_a_visitor_sees_the_name_and_a_way_to_log_in(browser: Browser, site: str) -> None:
    page = browser.new_page()
    page.goto(f"{site}{reverse('start')}")
    expect(page.locator("h1")).to_have_text(project.NAME)
    expect(page.locator("#client-panel")).to_have_count(0)  # no client, so no mint, before a login
    page.click("#log-in")
    expect(page.locator("#id_username")).to_be_visible()
    page.close()


def test_logged_in_the_client_holds_a_token_and_an_open_socket(browser: Browser, site: str) -> None:
    page = browser.new_page()
    console_errors: list[str] = []
    page.on("console", lambda message: console_errors.append(message.text) if message.type == "error" else None)
    log_in(page, site, reverse("start"))

    expect(page).to_have_title(project.NAME)
    expect(page.locator("#project-name")).to_have_text(project.NAME)
    expect(page.locator("#connection-state")).to_have_text("open")
    expect(page.locator("#token-fingerprint")).to_contain_text("…")
    expect(page.locator("#client-error")).to_be_hidden()
    assert console_errors == []  # no CSP violation, no failed call

    log_out = page.get_by_role("button", name="Log out")
    expect(log_out).to_have_count(1)
    expect(page.locator("header")).to_contain_text(USERNAME)
    log_out.click()
    expect(page.locator("h1")).to_have_text("Logged out")
    page.close()
