"""The site's database from `DATABASE_URL`: Django's settings for it, every wait on PostgreSQL bounded.

A URL is read by django-environ, except the hosts of one naming several (libpq's
`postgres://user:pw@h1:5432,h2:5432/db?target_session_attrs=primary`), read here: django-environ
drops an omitted port's place in the list and keeps the brackets of an IPv6 address, so a host
would be tried on another host's port. Anything that is not such a URL (libpq's keyword form
`host=a,b dbname=x`, an unknown scheme, a port that is not a number) is refused with one sentence
that says which form to write, and never repeats the URL (it holds the password).

PostgreSQL gets `DATABASE_CONNECT_TIMEOUT` as libpq's `connect_timeout` (a URL that sets its own
keeps it), `DATABASE_STATEMENT_TIMEOUT` as the server's `statement_timeout`, and that plus
ANSWER_GRACE_SECONDS as the client's own bound on every answer (`answer_timeout`, read by the
backend config/postgresql/, which says why the server's timeout is not enough). 0 leaves either
unbounded. SQLite gets the backend config/sqlite3/ and no timeouts.
"""

from __future__ import annotations

import warnings
from typing import Any
from urllib.parse import unquote, urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

POSTGRESQL = "django.db.backends.postgresql"
SQLITE = "django.db.backends.sqlite3"
URL_FORM = "postgres://user:password@host1:5432,host2:5432/db?target_session_attrs=primary&connect_timeout=2"
UNREADABLE = (
    f"DATABASE_URL cannot be read: write it as a URL, {URL_FORM} (one host or several, comma-separated), "
    "or sqlite:///path/to/db.sqlite3."
)
STATEMENT_TIMEOUT_IN_URL = (
    "DATABASE_URL sets statement_timeout in its options: remove it there and set DATABASE_STATEMENT_TIMEOUT "
    "(seconds) instead, which also bounds the site's own wait for an answer."
)
# The client gives up this long after PostgreSQL's statement_timeout would have ended a statement: a slow
# statement is ended by the server, which keeps the connection; only a server that never answers is cut off.
ANSWER_GRACE_SECONDS = 0.5
ANSWER_TIMEOUT = "answer_timeout"  # the OPTIONS key config/postgresql/ reads (and keeps from libpq)


def database_settings(url: str, *, connect_timeout: int, statement_timeout: float) -> dict[str, Any]:
    """Django's settings for the database `url` names, with the site's backends and, on PostgreSQL,
    `connect_timeout` and `statement_timeout` (seconds; 0 for none)."""
    if connect_timeout < 0 or statement_timeout < 0:
        raise ImproperlyConfigured(
            "DATABASE_CONNECT_TIMEOUT and DATABASE_STATEMENT_TIMEOUT are seconds: 0 (no bound) or more."
        )
    config = read_url(url)
    if config["ENGINE"] == SQLITE:
        config["ENGINE"] = "config.sqlite3"  # the same backend, creating its file with mode 0600
    elif config["ENGINE"] == POSTGRESQL:
        config["ENGINE"] = "config.postgresql"  # the same backend, bounding every wait for an answer
        config["OPTIONS"] = bounded(config.get("OPTIONS", {}), connect_timeout, statement_timeout)
    return config


def read_url(url: str) -> dict[str, Any]:
    """django-environ's settings for `url`, its hosts read here when it names several; refused
    (ImproperlyConfigured, one sentence) when it cannot be read."""
    if "://" not in url:  # libpq's keyword form, or not a URL at all
        raise ImproperlyConfigured(UNREADABLE)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its "Engine not recognized" warning: refused below instead
            config: dict[str, Any] = environ.Env.db_url_config(url)
        hosts = urlsplit(url).netloc.rpartition("@")[2]
    except ValueError:  # a port that is not a number, an IPv6 address left open
        raise ImproperlyConfigured(UNREADABLE) from None
    if not config.get("ENGINE"):
        raise ImproperlyConfigured(UNREADABLE)
    if config["ENGINE"] == POSTGRESQL and "," in hosts:
        config["HOST"], config["PORT"] = hosts_and_ports(hosts)
    return config


def hosts_and_ports(hosts: str) -> tuple[str, str]:
    """libpq's `host` and `port` lists for a URL's `h1:5432,[::1]:5433,h3`: `h1,::1,h3` and `5432,5433,`
    (an omitted port stays an empty item, which libpq reads as the default port)."""
    names: list[str] = []
    ports: list[str] = []
    for each in hosts.split(","):
        if each.startswith("["):
            name, _, port = each[1:].partition("]")
            port = port.removeprefix(":")
        else:
            name, _, port = each.partition(":")
        if not name or not (port == "" or port.isdigit()):
            raise ImproperlyConfigured(UNREADABLE)
        names.append(unquote(name))
        ports.append(port)
    return ",".join(names), ",".join(ports) if any(ports) else ""


def bounded(options: dict[str, Any], connect_timeout: int, statement_timeout: float) -> dict[str, Any]:
    """PostgreSQL's OPTIONS with the bounds added: libpq's `connect_timeout` unless the URL set one, the
    server's `statement_timeout` in `options` (milliseconds) and the client's ANSWER_TIMEOUT."""
    added = dict(options)
    if connect_timeout and "connect_timeout" not in added:
        added["connect_timeout"] = connect_timeout
    if statement_timeout:
        given = str(added.get("options", ""))
        if "statement_timeout" in given:
            raise ImproperlyConfigured(STATEMENT_TIMEOUT_IN_URL)
        added["options"] = f"{given} -c statement_timeout={round(statement_timeout * 1000)}".strip()
        added[ANSWER_TIMEOUT] = statement_timeout + ANSWER_GRACE_SECONDS
    return added
