"""The README's copy steps: the two folders (without the sandbox) beside a foreign site, with only
the four base dependencies installed."""

from __future__ import annotations

from pathlib import Path

from tests.standalone.conftest import Sandbox, copy_parts
from tests.standalone.foreign_site import ForeignSite
from tests.standalone.rows import answers_every_row, assert_nothing_leaked


def test_copied_folders_serve_every_row_in_a_foreign_site(base_python: Path, sandbox: Sandbox, tmp_path: Path) -> None:
    site_root = tmp_path / "site"
    copy_parts(site_root)
    assert not (site_root / "sportsproxy" / "sandbox").exists()
    site = ForeignSite(site_root, base_python, sandbox.api_key, sandbox.url).write()
    installed = site.python_says("import importlib.metadata as m; print([d.name.lower() for d in m.distributions()])")
    for absent in ("websockets", "pyjwt", "channels", "sports-token-starter"):
        assert f"'{absent}'" not in installed
    where = site.python_says("import mintroute; print(mintroute.__file__)")
    assert where == str(site_root / "mintroute" / "__init__.py")
    site.prepare()
    assert "System check identified no issues" in site.manage("check")

    with site.serving() as site_url:
        seen = answers_every_row(site_url, sandbox)
    assert_nothing_leaked(seen, site, sandbox.api_key)
