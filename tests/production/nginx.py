"""docs/deploy.md's nginx configuration as a reader copies it, run by a test in a folder of its own."""

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


def documented_configuration() -> str:
    """The ```nginx block of docs/deploy.md, as a reader copies it."""
    blocks = re.findall(r"```nginx\n(.*?)```", (PROJECT_ROOT / "docs" / "deploy.md").read_text(), flags=re.DOTALL)
    assert len(blocks) == 1, "docs/deploy.md should hold exactly one nginx configuration"
    return str(blocks[0])


def site_configuration(*, listen: int, http_address: str, socket_address: str) -> str:
    """The documented file, with this test's addresses in place of the documented ones."""
    text = documented_configuration()
    for documented, ours in {
        "listen 80;": f"listen 127.0.0.1:{listen};",
        "server 127.0.0.1:8000;": f"server {http_address};",
        "server 127.0.0.1:8001;": f"server {socket_address};",
    }.items():
        assert text.count(documented) == 1, documented
        text = text.replace(documented, ours)
    return text


def main_configuration(folder: Path, site: str) -> Path:
    """What Debian's /etc/nginx/nginx.conf provides around conf.d/, in a folder of the test's own."""
    (folder / "sports.conf").write_text(site)
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
