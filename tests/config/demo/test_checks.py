"""config/demo/checks.py: the demo user with its published password fails `check --deploy`."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from config.demo.checks import check_no_demo_user


def test_the_demo_user_with_the_published_password_is_config_e001() -> None:
    User.objects.create_user("demo", password="demo-pass-123")
    (message,) = check_no_demo_user()
    assert message.id == "config.E001"
    assert "'demo'" in message.msg
    assert "changepassword demo" in (message.hint or "")
    assert ".delete()" in (message.hint or "")
    with pytest.raises(SystemCheckError, match=r"config\.E001"):
        call_command("check", deploy=True, fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())


def test_another_password_or_another_user_passes() -> None:
    assert check_no_demo_user() == []
    User.objects.create_user("alice", password="demo-pass-123")
    User.objects.create_user("demo", password="another-pass-456")
    assert check_no_demo_user() == []


def test_it_runs_with_deploy_only() -> None:
    User.objects.create_user("demo", password="demo-pass-123")
    call_command("check", fail_level="ERROR", stdout=io.StringIO(), stderr=io.StringIO())
