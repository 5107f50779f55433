"""Production static files: the browser client's modules import each other by their hashed names."""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.core.management import call_command
from django.test import override_settings

RELATIVE_IMPORT = re.compile(r"""^(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}/[^"']+)["'];""", re.M | re.S)
HASHED = re.compile(r"\.[0-9a-f]{12}\.js$")


def collect(static_root: Path) -> dict[str, str]:
    storages = {"staticfiles": {"BACKEND": "config.storage.StaticFilesStorage"}}
    with override_settings(STATIC_ROOT=static_root, STORAGES=storages):
        call_command("collectstatic", interactive=False, verbosity=0)
    paths: dict[str, str] = json.loads((static_root / "staticfiles.json").read_text())["paths"]
    return paths


def test_every_relative_import_of_a_hashed_module_names_a_hashed_file_that_exists(tmp_path: Path) -> None:
    hashed_names = collect(tmp_path)
    theirs = ("admin/", "rest_framework/", "vendor/")  # Django's, DRF's and the vendored: no relative imports to follow
    modules = [name for name in hashed_names if not name.startswith(theirs) and name.endswith(".js")]
    assert "sports/sports-client.js" in modules
    assert "sports/live-socket.js" in modules

    imports = 0
    for name in modules:
        hashed = tmp_path / hashed_names[name]
        for target in RELATIVE_IMPORT.findall(hashed.read_text()):
            imports += 1
            assert HASHED.search(target), f"{hashed_names[name]} imports {target}, which is not a hashed name"
            assert (hashed.parent / target).resolve().is_file(), f"{hashed_names[name]} imports a missing {target}"
    assert imports >= 15  # the client's modules and the pages' imports of it were all read
