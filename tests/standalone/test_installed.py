"""`pip install` of this project into a new virtual environment, then a foreign site using it."""

from __future__ import annotations

import email
import re
import zipfile
from pathlib import Path

from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import ForeignSite, base_dependencies
from tests.standalone.rows import answers_every_row, assert_nothing_leaked

# The browser client is a folder of ES modules (and its .d.ts, package.json): all of it ships, but the
# template's .jinja twins, which a generated project renders and the wheel leaves out.
CLIENT_FOLDER = Path(__file__).parents[2] / "mintroute/static/sports"
CLIENT_FILES = sorted(path.name for path in CLIENT_FOLDER.iterdir() if path.suffix != ".jinja")


def test_the_wheel_holds_the_two_parts_typed_with_the_browser_client(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"mintroute", "sportsproxy"}
    assert {"mintroute/py.typed", "sportsproxy/py.typed"} <= set(names)
    assert {f"mintroute/static/sports/{name}" for name in CLIENT_FILES} <= set(names)
    assert [name for name in names if name.endswith(".jinja")] == []
    assert "sportsproxy/sandbox/migrations/0001_initial.py" in names  # the `sandbox` extra's app is whole


def test_the_wheel_declares_its_base_dependencies_and_three_extras(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
    requirements = metadata.get_all("Requires-Dist") or []
    base = [requirement for requirement in requirements if "extra ==" not in requirement]
    assert sorted(requirement.split("<")[0].split(">")[0].lower() for requirement in base) == sorted(
        name.lower() for name in base_dependencies()
    )
    assert sorted(metadata.get_all("Provides-Extra") or []) == ["metrics", "realtime", "sandbox"]
    sandbox_extra = {
        re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0].lower()
        for requirement in requirements
        if 'extra == "sandbox"' in requirement
    }
    assert sandbox_extra == {"channels", "pyjwt", "uvicorn", "websockets"}  # what `serve` needs, and no more
    with zipfile.ZipFile(wheel) as archive:
        (entry_points,) = [name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt")]
        assert "[pytest11]\nsportsproxy = sportsproxy.testing\n" in archive.read(entry_points).decode()
    assert metadata["License-Expression"] == "MIT"


def test_an_installed_mint_route_serves_every_row_in_a_foreign_site(
    installed_python: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    site = ForeignSite(tmp_path / "site", installed_python, sandbox.api_key, sandbox.url).write()
    where = site.python_says("import mintroute, sportsproxy; print(mintroute.__file__, sportsproxy.__file__)")
    assert all("/site-packages/" in path for path in where.split()), where
    site.prepare()
    assert "System check identified no issues" in site.manage("check")
    found = site.manage("findstatic", *(f"sports/{name}" for name in CLIENT_FILES))
    assert found.count("/site-packages/mintroute/static/sports/") == len(CLIENT_FILES), found

    with site.serving() as site_url:
        seen = answers_every_row(site_url, sandbox)
    assert_nothing_leaked(seen, site, sandbox.api_key)
