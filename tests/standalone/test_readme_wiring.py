"""The README's wiring, pasted as it stands into a brand-new `django-admin startproject` site."""

from __future__ import annotations

import re
from pathlib import Path

from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import PROJECT_ROOT, ForeignSite, run
from tests.standalone.rows import answers_every_row, assert_nothing_leaked

# Each snippet is the fenced code between `<!-- wiring: FILE -->` and `<!-- /wiring -->`.
SNIPPET = re.compile(r"<!-- wiring: (?P<file>\S+) -->\s*```python\n(?P<code>.*?)```\s*<!-- /wiring -->", re.DOTALL)


def readme_snippets() -> dict[str, str]:
    """The README's wiring snippets by the file of a new project they are pasted at the end of."""
    return {match["file"]: match["code"] for match in SNIPPET.finditer((PROJECT_ROOT / "README.md").read_text())}


def test_the_readme_has_a_snippet_for_settings_and_one_for_urls() -> None:
    snippets = readme_snippets()
    assert set(snippets) == {"settings.py", "urls.py"}
    assert "import os" in snippets["settings.py"]
    assert 'os.environ.get("SPORTS_API_KEY", "")' in snippets["settings.py"]


def test_the_readme_wiring_pasted_into_a_new_project_checks_and_mints(
    installed_python: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    root = tmp_path / "site"
    root.mkdir()
    run([str(installed_python), "-m", "django", "startproject", "mysite", "."], cwd=root)
    for file_name, code in readme_snippets().items():
        with (root / "mysite" / file_name).open("a") as project_file:
            project_file.write("\n" + code)
    site = ForeignSite(root, installed_python, sandbox.api_key, sandbox.url)

    status, output = site.manage_status("check")  # nothing in the environment yet
    assert status != 0
    assert "(sportsproxy.E001)" in output
    assert "Traceback" not in output
    site.manage("migrate", "--no-input", "--skip-checks", "-v", "0")  # the settings load: commands run

    site.environment = {"SPORTS_API_KEY": sandbox.api_key, "SPORTS_BASE_URL": sandbox.url}
    assert "System check identified no issues" in site.manage("check")
    site.prepare()
    with site.serving() as site_url:
        seen = answers_every_row(site_url, sandbox, login_path="/admin/login/")  # the new project's only login page
    assert_nothing_leaked(seen, site, sandbox.api_key)
