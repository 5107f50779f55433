"""The browser-client snippet of docs/browser-client.md reads Django's CSRF token from the page, so the route still
takes it on a site that hides the CSRF cookie from scripts (`CSRF_COOKIE_HTTPONLY = True`)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import PROJECT_ROOT, ForeignSite, log_in
from tests.standalone.rows import assert_nothing_leaked

# The snippet is the fenced code between `<!-- client: page.html -->` and `<!-- /client -->`.
SNIPPET = re.compile(r"<!-- client: page\.html -->\s*```html\n(?P<code>.*?)```\s*<!-- /client -->", re.DOTALL)
# What the snippet's `document.querySelector('meta[name="csrf-token"]').content` reads.
META_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]*)">')

HTTPONLY_SITE = """
CSRF_COOKIE_HTTPONLY = True
"""
PAGE_URLS = """
from django.views.generic import TemplateView

urlpatterns += [path("sports/", TemplateView.as_view(template_name="sports.html"))]
"""


def test_the_documented_snippet_reads_a_token_the_route_takes_with_an_httponly_cookie(
    installed_python: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    snippet = SNIPPET.search((PROJECT_ROOT / "docs" / "browser-client.md").read_text())
    assert snippet is not None
    assert "document.cookie" not in snippet["code"]
    site = ForeignSite(
        tmp_path / "site",
        installed_python,
        sandbox.api_key,
        sandbox.url,
        extra_settings=HTTPONLY_SITE,
        extra_urls=PAGE_URLS,
    ).write()
    (site.root / "templates" / "sports.html").write_text(snippet["code"])
    site.prepare()

    with site.serving() as site_url, log_in(site_url) as browser:
        (csrf_cookie,) = [cookie for cookie in browser.cookies.jar if cookie.name == "csrftoken"]
        assert csrf_cookie.has_nonstandard_attr("HttpOnly")  # no script of the page can read it
        page = browser.get("/sports/")
        assert page.status_code == 200, page.text
        page_token = META_TOKEN.search(page.text)
        assert page_token is not None, page.text
        minted = browser.post("/api/sports-token", json={"reason": "initial"}, headers={"X-CSRFToken": page_token[1]})
        without = browser.post("/api/sports-token", json={"reason": "initial"})
    assert minted.status_code == 200, minted.text
    assert without.status_code == 403
    assert_nothing_leaked([page, minted, without], site, sandbox.api_key)
