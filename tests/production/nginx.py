"""docs/deploy.md's nginx configuration as a reader copies it (and, where the site mounts the sandbox,
the route for its socket that its page, embedded-sandbox.md, adds), run by a test in a folder of its own."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found is None:
        message = "nginx not found: install Debian's nginx package (.ci/run does)."
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it: never skip there
        pytest.skip(message)
    return found


DEPLOY_PAGE = PROJECT_ROOT / "docs" / "deploy.md"
# The page of a site that mounts the sandbox: the socket's route to add to deploy.md's file. A project made with
# the sandbox for its tests only has no such page.
SOCKET_PAGE = PROJECT_ROOT / "docs" / "embedded-sandbox.md"
SOCKET_ROUTE_DOCUMENTED = SOCKET_PAGE.is_file()


def nginx_blocks(page: Path) -> list[str]:
    return [str(block) for block in re.findall(r"```nginx\n(.*?)```", page.read_text(), flags=re.DOTALL)]


def documented_configuration() -> str:
    """The ```nginx block of docs/deploy.md, as a reader copies it."""
    blocks = nginx_blocks(DEPLOY_PAGE)
    assert len(blocks) == 1, "docs/deploy.md should hold exactly one nginx configuration"
    return blocks[0]


def with_socket_route(configuration: str) -> str:
    """deploy.md's file with the socket's route added as SOCKET_PAGE says: its first block (the
    upstream and the map) above the `server` block, its second (the location) inside it, beside `location /`."""
    above, location = nginx_blocks(SOCKET_PAGE)
    assert configuration.count("\nserver {") == 1, "one server block"
    assert configuration.endswith("\n}\n"), "the server block last"
    configuration = configuration.replace("\nserver {", f"\n{above}\nserver {{")
    return configuration.removesuffix("}\n") + f"\n{location}}}\n"


def site_configuration(*, listen: int, http_address: str, socket_address: str | None = None) -> str:
    """The documented file, with this test's addresses in place of the documented ones. With `socket_address`,
    in a project that documents the socket's route (SOCKET_PAGE: a site that mounts the sandbox),
    that route is added too, to `socket_address`; a project without the page has no socket route to add."""
    text = documented_configuration()
    replacements = {"listen 80;": f"listen 127.0.0.1:{listen};", "server 127.0.0.1:8000;": f"server {http_address};"}
    if socket_address is not None and SOCKET_ROUTE_DOCUMENTED:
        text = with_socket_route(text)
        replacements["server 127.0.0.1:8001;"] = f"server {socket_address};"
    for documented, ours in replacements.items():
        assert text.count(documented) == 1, documented
        text = text.replace(documented, ours)
    return text


ACCESS_LOG = "/var/log/nginx/sports.access.log"  # the documented file's access log, where Debian keeps nginx's


def access_log(folder: Path) -> Path:
    """Where the documented access log is written, for nginx run by main_configuration(folder, ...)."""
    return folder / "access.log"


def main_configuration(folder: Path, site: str) -> Path:
    """What Debian's /etc/nginx/nginx.conf provides around conf.d/, in a folder of the test's own (the
    documented access log in it too)."""
    assert site.count(ACCESS_LOG) == 1, ACCESS_LOG
    (folder / "sports.conf").write_text(site.replace(ACCESS_LOG, str(access_log(folder))))
    paths = "\n".join(
        f"    {kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = folder / "nginx.conf"
    main.write_text(
        f"""daemon off;
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;
events {{ worker_connections 768; }}
http {{
    access_log off;
{paths}
    include {folder / "sports.conf"};
}}
"""
    )
    return main
