"""`pip install "Django==X.Y.*" <checkout>`, as a site on Django X.Y runs it, keeps Django X.Y.

The matrix runs this on every supported pair, in a new virtual environment of that pair's Python
with that pair's Django series: on (3.13, 6.1) it is `pip install "Django==6.1.*" <checkout>` with
Python 3.13. Nothing is constrained: pip resolves the checkout's declared dependencies as it would
for an integrator.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import ForeignSite, install, new_venv, running_django
from tests.standalone.rows import answers_every_row, assert_nothing_leaked


def test_installing_the_checkout_beside_the_sites_django_keeps_it_and_mints(
    checkout: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    series = ".".join(running_django().split(".")[:2])
    python = install(new_venv(tmp_path / "venv"), f"Django=={series}.*", str(checkout))
    site = ForeignSite(tmp_path / "site", python, sandbox.api_key, sandbox.url).write()

    versions = site.python_says(
        "import sys, django, importlib.metadata as m;"
        "print(f'{sys.version_info[0]}.{sys.version_info[1]}', django.get_version(), m.version('sports-token-starter'))"
    )
    python_version, django_version, _ = versions.split()
    assert python_version == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert django_version.startswith(f"{series}."), versions
    installed = site.python_says(
        "import importlib.metadata as m; print(' '.join(sorted(d.metadata['Name'].lower() for d in m.distributions())))"
    ).split()
    assert "httpx2" in installed, installed  # the maintained continuation of httpx, and not httpx itself
    assert {"httpx", "httpcore"}.isdisjoint(installed), installed
    site.prepare()
    assert "System check identified no issues" in site.manage("check")
    with site.serving() as site_url:
        seen = answers_every_row(site_url, sandbox)
    assert_nothing_leaked(seen, site, sandbox.api_key)
