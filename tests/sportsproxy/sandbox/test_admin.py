"""The dashboard (Django admin): create a key (secret shown once), revoke it, see last use."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from sportsproxy.sandbox.accounts.keys import hash_secret, issue_key
from sportsproxy.sandbox.models import Account, ApiKey
from tests.conftest import RpcCall
from tests.support import error_code


@pytest.fixture
def admin_client() -> Client:  # type: ignore[override]
    client = Client()
    client.force_login(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    return client


def test_creating_a_key_shows_the_secret_once(admin_client: Client, account: Account, rpc: RpcCall) -> None:
    response = admin_client.post("/admin/sandbox/apikey/add/", {"account": account.pk, "env": "live"})
    assert response.status_code == 200
    page = response.content.decode()
    secret = re.search(r"sk_live_[A-Za-z0-9_-]{32,}", page)
    assert secret is not None
    key = ApiKey.objects.get(secret_hash=hash_secret(secret.group()))
    assert rpc("auth", {}, credential=secret.group())["result"]["env"] == "live"
    change_page = admin_client.get(f"/admin/sandbox/apikey/{key.pk}/change/").content.decode()
    listing = admin_client.get("/admin/sandbox/apikey/").content.decode()
    assert secret.group() not in change_page
    assert secret.group() not in listing
    assert key.public_id in listing


def test_the_revoke_action_revokes_at_once(admin_client: Client, account: Account, rpc: RpcCall) -> None:
    key, secret = issue_key(account, "test")
    response = admin_client.post(
        "/admin/sandbox/apikey/", {"action": "revoke_selected", "_selected_action": [key.pk]}, follow=True
    )
    assert "Revoked 1 key(s)" in response.content.decode()
    assert error_code(rpc("auth", {}, credential=secret)) == "unauthorized"


def test_keys_cannot_be_deleted_only_revoked(admin_client: Client, account: Account) -> None:
    key, _ = issue_key(account, "test")
    assert admin_client.get(f"/admin/sandbox/apikey/{key.pk}/delete/").status_code == 403


def test_the_key_list_shows_last_use(admin_client: Client, account: Account, rpc: RpcCall) -> None:
    _, secret = issue_key(account, "test")
    rpc("auth", {}, credential=secret)
    listing = admin_client.get("/admin/sandbox/apikey/").content.decode()
    assert "Last used at" in listing
    assert "-" not in re.findall(r'class="field-last_used_at">([^<]*)<', listing)


@pytest.fixture
def viewer() -> Client:
    """A real staff user who may only view API keys and accounts."""
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_apikey", "view_account"], content_type__app_label="sandbox")
    )
    client = Client()
    client.force_login(user)
    return client


def test_a_view_only_staff_user_sees_keys_but_cannot_revoke_them(
    viewer: Client, account: Account, rpc: RpcCall
) -> None:
    key, secret = issue_key(account, "test")
    listing = viewer.get("/admin/sandbox/apikey/")
    assert listing.status_code == 200
    assert key.public_id in listing.content.decode()
    assert "revoke_selected" not in listing.content.decode()  # the action is not offered

    viewer.post("/admin/sandbox/apikey/", {"action": "revoke_selected", "_selected_action": [key.pk]}, follow=True)
    change_form = viewer.post(f"/admin/sandbox/apikey/{key.pk}/change/", {"state": "revoked"})
    assert change_form.status_code == 403
    key.refresh_from_db()
    assert key.state == ApiKey.State.ACTIVE
    assert "result" in rpc("auth", {}, credential=secret)


def test_a_staff_user_with_the_change_permission_revokes(account: Account, rpc: RpcCall) -> None:
    user = User.objects.create_user("keeper", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_apikey", "change_apikey"], content_type__app_label="sandbox")
    )
    client = Client()
    client.force_login(user)
    key, secret = issue_key(account, "test")
    client.post("/admin/sandbox/apikey/", {"action": "revoke_selected", "_selected_action": [key.pk]})
    assert error_code(rpc("auth", {}, credential=secret)) == "unauthorized"
