"""docs/operations.md's lines for an existing site, pasted as they stand into a new `django-admin
startproject` site (after the README's wiring): with the wheel's `metrics` extra, two gunicorn
workers add up their counts at /metrics, /readyz answers and a mint is followed by its id; without
prometheus_client the site still works, and turning the metrics on is a check error that names the
extra."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from tests.standalone.conftest import Sandbox
from tests.standalone.foreign_site import (
    PROJECT_ROOT,
    ForeignSite,
    dev_pins,
    free_port,
    log_in,
    make_venv,
    run,
    scrubbed_environment,
)
from tests.standalone.test_readme_wiring import readme_snippets

SNIPPET = re.compile(
    r"<!-- operations: (?P<file>\S+) -->\s*```python\n(?P<code>.*?)```\s*<!-- /operations -->", re.DOTALL
)
COUNTER = re.compile(r'^sports_token_requests_total\{outcome="(\w+)"\} (\S+)$', re.MULTILINE)


def operations_snippets() -> dict[str, str]:
    page = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    return {match["file"]: match["code"] for match in SNIPPET.finditer(page)}


@pytest.fixture(scope="module")
def metrics_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment holding the wheel with its `metrics` extra, and gunicorn."""
    return make_venv(tmp_path_factory.mktemp("metrics") / "venv", f"{wheel}[metrics]", *dev_pins("gunicorn"))


def new_project(root: Path, python: Path, sandbox: Sandbox, *, operations: tuple[str, ...]) -> ForeignSite:
    """startproject, then the README's wiring and the chosen files' lines of docs/operations.md."""
    root.mkdir()
    run([str(python), "-m", "django", "startproject", "mysite", "."], cwd=root)
    pasted = {name: [code] for name, code in readme_snippets().items()}
    for name, code in operations_snippets().items():
        if name in operations:
            pasted.setdefault(name, []).append(code)
    for name, codes in pasted.items():
        target = root / "mysite" / name if name != "gunicorn.conf.py" else root / name
        with target.open("a") as project_file:
            project_file.write("\n" + "\n".join(codes))
    site = ForeignSite(root, python, sandbox.api_key, sandbox.url)
    site.environment = {"SPORTS_API_KEY": sandbox.api_key, "SPORTS_BASE_URL": sandbox.url}
    return site


def test_the_page_has_lines_for_settings_urls_and_gunicorn() -> None:
    assert set(operations_snippets()) == {"settings.py", "urls.py", "gunicorn.conf.py"}


def counts(url: str) -> dict[str, float]:
    answer = httpx2.get(f"{url}/metrics", timeout=30)
    assert answer.status_code == 200, answer.text
    return {outcome: float(value) for outcome, value in COUNTER.findall(answer.text)}


def test_two_gunicorn_workers_add_up_their_counts_and_the_probe_answers(
    metrics_python: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    site = new_project(
        tmp_path / "site", metrics_python, sandbox, operations=("settings.py", "urls.py", "gunicorn.conf.py")
    )
    assert "System check identified no issues" in site.manage("check")
    site.prepare()
    folder = tmp_path / "multiproc"
    folder.mkdir()
    (folder / "counter_4242.db").write_bytes(b"an earlier run's counts")
    port = free_port()
    command = [str(metrics_python), "-m", "gunicorn", "-c", "gunicorn.conf.py", "-w", "2", "-b", f"127.0.0.1:{port}"]
    log_path = tmp_path / "gunicorn.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(  # noqa: S603 - the site's interpreter
            [*command, "mysite.wsgi"],
            cwd=site.root,
            env=scrubbed_environment(**site.environment, PROMETHEUS_MULTIPROC_DIR=str(folder)),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                ready = httpx2.get(f"{url}/readyz", timeout=5)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.2)
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"ready": True, "checks": {"database": "ok", "service": "ok"}}
        assert not (folder / "counter_4242.db").exists()  # on_starting emptied the folder

        sent = 0
        while len(list(folder.glob("counter_*.db"))) < 2:  # until both workers have counted
            assert sent < 300, "one worker took every connection"
            with httpx2.Client(timeout=30) as fresh:
                assert fresh.post(f"{url}/api/sports-token", headers={"Connection": "close"}).status_code == 401
            sent += 1
        for _ in range(4):
            assert counts(url)["not_authenticated"] == sent
        with log_in(url, login_path="/admin/login/") as browser:
            csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
            minted = browser.post("/api/sports-token", json={}, headers=csrf)
            assert minted.status_code == 200
        assert counts(url)["minted"] == 1
        request_id = minted.headers["X-Request-ID"]  # followed: its id answered and on its access line
        assert re.search(
            rf"mintroute.access \[{request_id}\]: POST /api/sports-token 200 outcome=minted ", log_path.read_text()
        )
    except BaseException as error:
        error.add_note(f"gunicorn printed:\n{log_path.read_text()}")
        raise
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_without_prometheus_client_the_site_works_and_metrics_on_is_a_check_error(
    installed_python: Path, sandbox: Sandbox, tmp_path: Path
) -> None:
    site = new_project(tmp_path / "site", installed_python, sandbox, operations=("urls.py",))
    assert "System check identified no issues" in site.manage("check")
    site.prepare()
    with site.serving() as url:
        ready = httpx2.get(f"{url}/readyz", timeout=30)
        assert ready.status_code == 200, ready.text
        assert httpx2.get(f"{url}/metrics", timeout=30).status_code == 404
        with log_in(url, login_path="/admin/login/") as browser:
            csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}
            assert browser.post("/api/sports-token", json={}, headers=csrf).status_code == 200

    with (site.root / "mysite" / "settings.py").open("a") as settings:
        settings.write("\n" + operations_snippets()["settings.py"])
    status, output = site.manage_status("check")
    assert status != 0
    assert "(mintroute.E021)" in output
    assert "the `metrics` extra" in output
    assert "Traceback" not in output
