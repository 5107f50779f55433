"""A foreign site's OWN test suite on the pytest plugin, run by its own pytest in a new virtual
environment holding only the wheel's `sandbox` extra, pytest and pytest-django.

Its test files are docs/testing.md's shortest test and its complete example, taken from the
documents as they are, plus two probes: one proves the plugin starts a server (a child process of
pytest) when a fixture is used and stops it at the end of the session; the other, run alone,
proves a file that uses no fixture starts none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.standalone.foreign_site import PROJECT_ROOT, ForeignSite, run

PLACEHOLDER_KEY = "sk_test_" + "p" * 43  # the site's own settings: never the sandbox's
PLACEHOLDER_URL = "https://sports.example"

PYTEST_INI = """\
[pytest]
DJANGO_SETTINGS_MODULE = foreignsite.settings
filterwarnings = error
"""

CHILDREN = '''\
"""The processes whose parent is this one (read from /proc: nothing to install)."""

import os
from pathlib import Path


def child_processes():
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            after_name = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(after_name[1]) == os.getpid():
            children.add(int(stat.parent.name))
    return children
'''

USES_THE_FIXTURE = """\
from pathlib import Path

import children


def test_the_sandbox_is_a_child_of_this_session(sports_sandbox):
    assert sports_sandbox.pid in children.child_processes()
    Path("sandbox.pid").write_text(str(sports_sandbox.pid))  # for the test that ran this suite
"""

USES_NO_FIXTURE = """\
import children


def test_a_file_without_the_fixtures_starts_no_sandbox(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("sportsproxy")  # the plugin is loaded ...
    assert children.child_processes() == set()  # ... and has started nothing
"""


def python_block(document: Path, first_line: str) -> str:
    """The fenced Python block of `document` that starts with `first_line`."""
    blocks = re.findall(r"```python\n(.*?)```", document.read_text(), flags=re.DOTALL)
    (block,) = [block for block in blocks if block.startswith(f"{first_line}\n")]
    return str(block)


@pytest.fixture
def site(sandbox_python: Path, tmp_path: Path) -> ForeignSite:
    """A site with the mint route and its own settings, pointing at a service that does not exist."""
    site = ForeignSite(tmp_path / "site", sandbox_python, PLACEHOLDER_KEY, PLACEHOLDER_URL).write()
    (site.root / "pytest.ini").write_text(PYTEST_INI)
    (site.root / "children.py").write_text(CHILDREN)
    suite = site.root / "tests"
    suite.mkdir()
    (suite / "test_sports_integration.py").write_text(
        python_block(PROJECT_ROOT / "docs" / "testing.md", "# tests/test_sports_integration.py")
    )
    (suite / "test_sports.py").write_text(python_block(PROJECT_ROOT / "docs" / "testing.md", "# tests/test_sports.py"))
    (suite / "test_sandbox_process.py").write_text(USES_THE_FIXTURE)
    (site.root / "plain").mkdir()
    (site.root / "plain" / "test_plain.py").write_text(USES_NO_FIXTURE)
    return site


def site_pytest(site: ForeignSite, *arguments: str) -> str:
    # run() scrubs the environment: no SPORTS_* variable, so only the fixtures can point the site at the sandbox.
    command = [str(site.python), "-m", "pytest", "-p", "no:cacheprovider", *arguments]
    return run(command, cwd=site.root)


def test_the_sites_own_suite_passes_against_the_sandbox(site: ForeignSite) -> None:
    output = site_pytest(site, "-v", "tests")
    documented = re.findall(r"^def (test_\w+)", (site.root / "tests" / "test_sports_integration.py").read_text(), re.M)
    assert len(documented) == 5, documented  # mint and list, revoked key, spent quota, expired token, events
    expected = [*documented, "test_the_mint_route_gives_a_working_token", "test_the_sandbox_is_a_child_of_this_session"]
    for name in expected:
        assert re.search(rf"::{name} PASSED", output), output
    assert f"{len(expected)} passed" in output, output

    sandbox_pid = int((site.root / "sandbox.pid").read_text())
    assert not Path(f"/proc/{sandbox_pid}").exists(), "the sandbox outlived the session"


def test_a_test_file_without_the_fixtures_starts_no_server(site: ForeignSite) -> None:
    output = site_pytest(site, "plain")
    assert "1 passed" in output, output
