"""mintroute stands alone: a minimal site (not `config`) with only typical apps plus mintroute mints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jwt
from django.conf import settings

from sportsproxy.sandbox.keys import issue_key
from sportsproxy.sandbox.models import Account

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def test_a_minimal_site_with_mintroute_serves_a_working_mint_route(live_server: Any, transactional_db: None) -> None:
    _, secret = issue_key(Account.objects.create(name="copied-site", tier="starter"), "test")
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.mintroute.minimal_site.settings",
        "SPORTS_API_KEY": secret,
        "SPORTS_BASE_URL": live_server.url,  # the sandbox, served by this test's live server
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    completed = subprocess.run(  # noqa: S603 - fixed interpreter and script
        [sys.executable, str(PROJECT_ROOT / "tests/mintroute/minimal_site/mint_once.py")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    outcome = json.loads(completed.stdout.splitlines()[-1])
    assert outcome["status"] == 200
    assert outcome["anonymous_status"] == 401
    assert outcome["sandbox_imported"] is False
    claims = jwt.decode(
        outcome["body"]["token"],
        settings.SPORTS_SANDBOX_SIGNING_KEY,
        algorithms=["HS256"],
        audience="sports-sdk",
        options={"verify_exp": False},  # minted on the frozen test clock
    )
    assert claims["tier"] == "starter"
    assert secret not in completed.stdout + completed.stderr
