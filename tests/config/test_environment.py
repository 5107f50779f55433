"""config/settings.py reads the environment: with DJANGO_DEBUG off there it reads no `.env` file, and
secrets and keys are read as written (a value starting with `$` is not another variable's name)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from django.core.management.utils import get_random_secret_key

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SHOW = "from django.conf import settings as s; print(json.dumps([s.DEBUG, s.SECRET_KEY, s.SPORTS_API_KEY]))"


def settings_in(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Load the settings in a process of their own, with only `environment` (and PATH) set."""
    return subprocess.run(  # noqa: S603 - this interpreter, fixed code
        [sys.executable, "-c", f"import django, json; django.setup(); {SHOW}"],
        cwd=PROJECT_ROOT,
        env={"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", **environment},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def dotenv(folder: Path, **values: str) -> Path:
    path = folder / ".env"
    path.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
    return path


def test_with_debug_off_in_the_environment_no_env_file_is_read(tmp_path: Path) -> None:
    env_file = dotenv(tmp_path, DJANGO_SECRET_KEY=secrets.token_urlsafe(50))
    loaded = settings_in({"DJANGO_DEBUG": "0", "DJANGO_ENV_FILE": str(env_file)})
    assert loaded.returncode != 0
    assert "DJANGO_SECRET_KEY is not set" in loaded.stderr


def test_with_debug_on_or_unset_the_env_file_fills_in_what_the_environment_does_not_set(tmp_path: Path) -> None:
    secret_key = secrets.token_urlsafe(50)
    env_file = dotenv(tmp_path, DJANGO_SECRET_KEY=secret_key, SPORTS_API_KEY="sk_test_" + "a" * 40)
    for debug in ({}, {"DJANGO_DEBUG": "1"}):
        loaded = settings_in({**debug, "DJANGO_ENV_FILE": str(env_file), "SPORTS_API_KEY": "sk_test_" + "b" * 40})
        assert loaded.returncode == 0, loaded.stderr
        assert json.loads(loaded.stdout) == [True, secret_key, "sk_test_" + "b" * 40]


def test_an_env_file_that_turns_debug_off_is_refused_with_a_sentence(tmp_path: Path) -> None:
    env_file = dotenv(tmp_path, DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secrets.token_urlsafe(50))
    loaded = settings_in({"DJANGO_ENV_FILE": str(env_file)})
    assert loaded.returncode != 0
    assert "DJANGO_DEBUG is off in" in loaded.stderr
    assert "production reads no .env file" in loaded.stderr


def test_a_secret_starting_with_a_dollar_is_read_as_written(tmp_path: Path) -> None:
    while not (secret_key := get_random_secret_key()).startswith("$"):  # 1 in 50 of Django's keys
        pass
    from_the_environment = settings_in({"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": secret_key, "SPORTS_SANDBOX": "0"})
    assert from_the_environment.returncode == 0, from_the_environment.stderr
    assert json.loads(from_the_environment.stdout)[1] == secret_key
    from_the_file = settings_in({"DJANGO_ENV_FILE": str(dotenv(tmp_path, DJANGO_SECRET_KEY=f"'{secret_key}'"))})
    assert from_the_file.returncode == 0, from_the_file.stderr
    assert json.loads(from_the_file.stdout)[1] == secret_key
