"""`manage.py sandbox_key create|revoke|list`: the sandbox dashboard's key operations."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from sportsproxy.sandbox.accounts.keys import issue_key
from sportsproxy.sandbox.conf import ENVIRONMENTS, TIERS
from sportsproxy.sandbox.models import Account, ApiKey


class Command(BaseCommand):
    help = "Create, revoke or list sandbox API keys."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a key (and its account if needed); prints the secret last.")
        create.add_argument("--account", required=True, help="Account name; created if it does not exist.")
        create.add_argument("--tier", choices=TIERS, help="Tier of a new account (default: starter).")
        create.add_argument("--env", choices=ENVIRONMENTS, default="test", help="Key environment (default: test).")
        revoke = actions.add_parser("revoke", help="Revoke a key by its public id (key_...).")
        revoke.add_argument("key_id")
        listing = actions.add_parser("list", help="List keys with their state and last use.")
        listing.add_argument("--account", help="Only this account's keys.")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self.create(options["account"], options["tier"], options["env"])
        elif action == "revoke":
            self.revoke(options["key_id"])
        else:
            self.list(options["account"])

    def create(self, account_name: str, tier: str | None, env: str) -> None:
        account, created = Account.objects.get_or_create(name=account_name, defaults={"tier": tier or "starter"})
        if created:
            self.stdout.write(f"Created account {account.name} ({account.public_id}, tier {account.tier}).")
        elif tier and tier != account.tier:
            self.stderr.write(f"Account {account.name} exists with tier {account.tier}; its tier was left unchanged.")
        key, secret = issue_key(account, env)
        self.stdout.write(f"Created {env} key {key.public_id} for {account.name}. The secret below is shown once:")
        self.stdout.write(secret)

    def revoke(self, key_id: str) -> None:
        key = ApiKey.objects.filter(public_id=key_id).first()
        if key is None:
            raise CommandError(f"No key with id {key_id!r}. `manage.py sandbox_key list` shows the key ids.")
        if not key.is_active:
            self.stdout.write(f"Key {key_id} was already revoked at {key.revoked_at:%Y-%m-%d %H:%M:%S %Z}.")
            return
        key.revoke()
        self.stdout.write(f"Revoked key {key_id}. Its tokens keep working until they expire.")

    def list(self, account_name: str | None) -> None:
        keys = ApiKey.objects.select_related("account").order_by("account__name", "created_at")
        if account_name:
            keys = keys.filter(account__name=account_name)
        self.stdout.write(f"{'KEY ID':<22} {'ACCOUNT':<16} {'TIER':<9} {'ENV':<5} {'STATE':<8} {'LAST USED'}")
        for key in keys:
            last_used = f"{key.last_used_at:%Y-%m-%d %H:%M:%S}" if key.last_used_at else "never"
            account = key.account
            self.stdout.write(
                f"{key.public_id:<22} {account.name:<16} {account.tier:<9} {key.env:<5} {key.state:<8} {last_used}"
            )
