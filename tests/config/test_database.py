"""config/database.py: DATABASE_URL read into Django's settings, PostgreSQL's waits bounded, a form it cannot
read refused with one sentence (and `make serve` refusing to start on it, with no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db.utils import ConnectionHandler

from config.database import URL_FORM, database_settings
from tests import stores
from tests.production.cluster import free_port, require_engines

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = {"connect_timeout": 2, "statement_timeout": 2.0}  # config/settings.py's


def test_postgresql_gets_the_bounds_and_the_backend_that_keeps_them() -> None:
    config = database_settings("postgres://site:secret@db.internal:5432/sports", **DEFAULTS)
    assert config["ENGINE"] == "config.postgresql"
    assert (config["HOST"], config["PORT"], config["NAME"], config["USER"]) == ("db.internal", 5432, "sports", "site")
    assert config["OPTIONS"] == {
        "connect_timeout": 2,  # libpq's, seconds
        "options": "-c statement_timeout=2000",  # the server's, milliseconds
        "answer_timeout": 2.5,  # the site's own: half a second after the server's
    }


def test_what_the_url_says_is_kept_and_its_connect_timeout_wins() -> None:
    url = "postgres://site@db.internal/sports?connect_timeout=7&sslmode=require&options=-c%20search_path%3Dsite"
    options = database_settings(url, connect_timeout=2, statement_timeout=1.5)["OPTIONS"]
    assert options == {
        "connect_timeout": 7,
        "sslmode": "require",
        "options": "-c search_path=site -c statement_timeout=1500",
        "answer_timeout": 2.0,
    }


def test_zero_waits_without_a_bound() -> None:
    config = database_settings("postgres://site@db.internal/sports", connect_timeout=0, statement_timeout=0)
    assert config["OPTIONS"] == {}


def test_a_statement_timeout_in_the_url_is_refused_for_the_setting() -> None:
    with pytest.raises(ImproperlyConfigured, match="set DATABASE_STATEMENT_TIMEOUT"):
        database_settings("postgres://site@db/sports?options=-c%20statement_timeout%3D5000", **DEFAULTS)


def test_sqlite_keeps_its_private_file_backend_and_no_timeouts(tmp_path: Path) -> None:
    config = database_settings(f"sqlite:///{tmp_path / 'site.sqlite3'}", **DEFAULTS)
    assert config["ENGINE"] == "config.sqlite3"
    assert "OPTIONS" not in config


def test_several_hosts_each_keep_their_own_port() -> None:
    url = "postgres://site:p%40ss@h1:5432,[2001:db8::7]:5433,h3/sports?target_session_attrs=primary&connect_timeout=2"
    config = database_settings(url, **DEFAULTS)
    # libpq's lists: an omitted port is an empty item (the default port), an IPv6 address has no brackets.
    assert (config["HOST"], config["PORT"]) == ("h1,2001:db8::7,h3", "5432,5433,")
    assert (config["PASSWORD"], config["NAME"]) == ("p@ss", "sports")
    assert config["OPTIONS"]["target_session_attrs"] == "primary"
    assert config["OPTIONS"]["connect_timeout"] == 2
    assert database_settings("postgres://site@h1,h2/sports", **DEFAULTS)["PORT"] == ""


def test_several_hosts_the_first_refusing_connect_to_the_next_primary(django_db_blocker: Any) -> None:
    require_engines()
    host, port = stores.postgres_address()
    refusing = free_port()  # nothing listens there
    parts = urlsplit(stores.DATABASE_URL)
    credentials = parts.netloc.rpartition("@")[0]
    server = f"[{host}]" if ":" in host else host
    # On the default port the second host names none: the form django-environ alone misreads (it would try
    # the second host on the first one's port).
    hosts = f"127.0.0.1:{refusing},{server}" + ("" if port == 5432 else f":{port}")
    netloc = f"{credentials}@{hosts}" if credentials else hosts
    url = urlunsplit(parts._replace(netloc=netloc, query="target_session_attrs=primary&connect_timeout=2"))
    database = ConnectionHandler({"default": database_settings(url, **DEFAULTS)})["default"]
    try:
        with django_db_blocker.unblock(), database.cursor() as cursor:
            cursor.execute("SELECT inet_server_port(), pg_is_in_recovery()")
            assert cursor.fetchone() == (port, False)
        assert database.connection.info.port == port
    finally:
        database.close()


@pytest.mark.parametrize(
    "url",
    [
        "host=db1,db2 dbname=sports user=site password=secret",  # libpq's keyword form
        "db1.internal:5432/sports",
        "postgres://site:secret@db:port/sports",
        "postgres://site:secret@db1:5432,db2:port/sports",
        "postgres://site:secret@[2001:db8::7/sports",
    ],
)
def test_a_url_that_cannot_be_read_is_refused_with_the_form_to_write(url: str) -> None:
    with pytest.raises(ImproperlyConfigured) as refused:
        database_settings(url, **DEFAULTS)
    assert str(refused.value).startswith("DATABASE_URL cannot be read: write it as a URL, ")
    assert URL_FORM in str(refused.value)
    assert "secret" not in str(refused.value)


def test_a_negative_timeout_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured, match="0 \\(no bound\\) or more"):
        database_settings("postgres://site@db/sports", connect_timeout=-1, statement_timeout=2)


def test_make_serve_refuses_a_keyword_form_url_in_one_sentence() -> None:
    environment = {
        **os.environ,
        "DJANGO_ENV_FILE": "",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "x" * 50,
        "DATABASE_URL": "host=db1,db2 dbname=sports user=site password=secret",
    }
    completed = subprocess.run(
        [sys.executable, "-m", "config.serve", "--check"],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode != 0
    assert completed.stderr.strip().splitlines() == [f"make serve refuses to start: {refusal()}"]


def refusal() -> str:
    with pytest.raises(ImproperlyConfigured) as refused:
        database_settings("host=db1", **DEFAULTS)
    return str(refused.value)
