"""Security headers and cookie flags on the pages and the mint route."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_pages_send_nosniff_referrer_policy_and_deny_framing() -> None:
    response = Client().get("/accounts/login/")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"


def test_the_session_cookie_is_httponly_and_samesite(settings: Any) -> None:
    User.objects.create_user("alice", password="pw-alice-123")
    browser = Client()
    page = browser.get("/accounts/login/")
    token = page.cookies["csrftoken"].value
    browser.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123", "csrfmiddlewaretoken": token})
    cookie = browser.cookies["sessionid"]
    assert cookie["httponly"]
    assert cookie["samesite"] == "Lax"


def test_cookies_are_secure_and_hsts_on_in_production() -> None:
    code = (
        "from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS > 0)"
    )
    environment = {
        **os.environ,
        "DJANGO_ENV_FILE": "",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "x" * 60,
        "SPORTS_SANDBOX_SIGNING_KEY": "y" * 60,
    }
    completed = subprocess.run(  # noqa: S603 - fixed interpreter and script
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert completed.stdout.split() == ["True", "True", "True", "True"]
