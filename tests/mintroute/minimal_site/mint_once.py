"""Run in a subprocess by test_copyable.py: set up the minimal site, log in, mint, print the outcome."""

from __future__ import annotations

import json
import sys

import django
from django.core.management import call_command

django.setup()

from django.contrib.auth.models import User  # noqa: E402 - after django.setup()
from django.test import Client  # noqa: E402

call_command("migrate", verbosity=0)
call_command("check", fail_level="ERROR")
browser = Client(enforce_csrf_checks=True)
browser.force_login(User.objects.create_user("site-user"))
csrf = "c" * 32
browser.cookies["csrftoken"] = csrf
anonymous = Client(enforce_csrf_checks=True).post("/api/sports-token")
minted = browser.post("/api/sports-token", '{"reason": "initial"}', "application/json", HTTP_X_CSRFTOKEN=csrf)
print(
    json.dumps(
        {
            "status": minted.status_code,
            "body": minted.json(),
            "anonymous_status": anonymous.status_code,
            "sandbox_imported": any(name.startswith("sportsproxy.sandbox") for name in sys.modules),
        }
    )
)
