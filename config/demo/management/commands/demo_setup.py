"""`manage.py demo_setup`: the demo user, a sandbox account and key, and a `.env` to match.

Idempotent: run it as often as you like. It migrates nothing itself (run `migrate` first).
With DJANGO_DEBUG off it gives the demo user no default password: it requires DEMO_PASSWORD.
`.env` is written with mode 0600 and replaced atomically.
"""

from __future__ import annotations

import os
import secrets
from argparse import ArgumentParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from config.demo.mode import DEFAULT_DEMO_PASSWORD, DEMO_USERNAME
from config.dev import read_env_file, replace_privately  # the one reader and writer of .env

if TYPE_CHECKING:
    from sportsproxy.sandbox.models import Account

DEMO_ACCOUNT = "demo"
DEMO_TIER = "growth"


class Command(BaseCommand):
    help = "Create the demo user, a sandbox account (tier growth) with a test key, and write the key into .env."
    # What the checks would warn about (no SPORTS_API_KEY) is what this command sets: runserver checks after it.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        default = settings.ENV_FILE or str(Path(settings.BASE_DIR) / ".env")
        parser.add_argument("--env-file", default=default, help=f"File to write settings into (default: {default}).")

    def handle(self, *args: Any, **options: Any) -> None:
        env_file = Path(options["env_file"])
        self.ensure_demo_user()
        # A site that does not mount the sandbox has not installed it: its SPORTS_API_KEY is the service's.
        if apps.is_installed("sportsproxy.sandbox"):
            from sportsproxy.sandbox.models import Account

            account, created = Account.objects.get_or_create(name=DEMO_ACCOUNT, defaults={"tier": DEMO_TIER})
            if created:
                self.stdout.write(f"Created sandbox account {account.name} (tier {account.tier}).")
            self.ensure_api_key(account, env_file)
            # Stable secrets in .env keep logins and minted tokens valid across runserver reloads.
            self.write_if_absent(env_file, "SPORTS_SANDBOX_SIGNING_KEY", secrets.token_urlsafe(48))
        self.write_if_absent(env_file, "DJANGO_SECRET_KEY", secrets.token_urlsafe(50))

    def ensure_demo_user(self) -> None:
        user_model = get_user_model()
        if user_model.objects.filter(username=DEMO_USERNAME).exists():
            return
        password = os.environ.get("DEMO_PASSWORD") or DEFAULT_DEMO_PASSWORD
        if password == DEFAULT_DEMO_PASSWORD and not settings.DEBUG:
            # The default is printed on the demo's login page and in the README: anyone could log in.
            raise CommandError(
                "DEMO_PASSWORD is not set (or is the published default), and DJANGO_DEBUG is off: in production "
                f"demo_setup creates no {DEMO_USERNAME!r} user with the default password. Set DEMO_PASSWORD to a "
                "password of your own, or create your users with `manage.py createsuperuser` instead."
            )
        user_model.objects.create_user(username=DEMO_USERNAME, password=password)
        source = "the default" if password == DEFAULT_DEMO_PASSWORD else "DEMO_PASSWORD"
        self.stdout.write(f"Created user {DEMO_USERNAME!r} (password: {source}).")

    def ensure_api_key(self, account: Account, env_file: Path) -> None:
        from sportsproxy.sandbox.accounts.keys import KEY_PATTERN, hash_secret, issue_key, register_key
        from sportsproxy.sandbox.models import ApiKey

        configured: str = settings.SPORTS_API_KEY or read_env_file(env_file).get("SPORTS_API_KEY", "")
        if not configured:
            key, secret = issue_key(account, "test")
            self.write_if_absent(env_file, "SPORTS_API_KEY", secret)
            self.stdout.write(f"Created test key {key.public_id} and wrote it to {env_file} as SPORTS_API_KEY.")
            return
        if not settings.SPORTS_SANDBOX or KEY_PATTERN.match(configured) is None:
            return  # a key for a real upstream, or one `manage.py check` will complain about
        known = ApiKey.objects.filter(secret_hash=hash_secret(configured)).first()
        if known is None:
            # A fresh database with an existing .env: take the key back into the sandbox.
            key = register_key(account, configured)
            self.stdout.write(f"Registered the SPORTS_API_KEY from the environment as key {key.public_id}.")
        elif not known.is_active:
            self.stderr.write(
                f"SPORTS_API_KEY is key {known.public_id}, which is revoked. Remove SPORTS_API_KEY from "
                f"{env_file} and run demo_setup again to get a new one."
            )

    def write_if_absent(self, env_file: Path, name: str, value: str) -> None:
        if name in read_env_file(env_file) or os.environ.get(name):
            return
        existing = env_file.read_text() if env_file.exists() else ""
        separator = "" if not existing or existing.endswith("\n") else "\n"
        replace_privately(env_file, f"{existing}{separator}{name}={value}\n")
