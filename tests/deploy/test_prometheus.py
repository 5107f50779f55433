"""deploy/prometheus/: the alerting rules pass their `promtool test rules` unit tests, every alert has
a test that makes it fire and a runbook section in docs/operations.md, the rules read only metrics
the site serves, and the scrape configuration loads. (A real Prometheus scraping `make serve`:
tests/production/test_operating.py.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "alerts_test.yml"
SCRAPE = ROOT / "deploy" / "prometheus" / "prometheus.yml"
RUNBOOK = ROOT / "docs" / "operations.md"
# The families mintroute.metrics serves, with the suffixes Prometheus's text format adds.
SERVED = re.compile(
    r"^sports_token_requests_total$|^sports_token_upstream_seconds_(bucket|count|sum)$"
    r"|^sports_token_site_token_(age|left)_seconds$|^sports_login_throttled_total$"
)


def promtool() -> str:
    """Debian's promtool (the `prometheus` package; .ci/run installs it): skipped without it, failed under CI."""
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is not installed: apt-get install prometheus")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    return found


def run_promtool(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - a fixed program and our own files
        [promtool(), *arguments], capture_output=True, text=True, timeout=60, check=False, cwd=RULES.parent
    )


def alerts() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def test_the_rules_pass_their_unit_tests() -> None:
    checked = run_promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = run_promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_scrape_configuration_loads_with_the_rules() -> None:
    checked = run_promtool("check", "config", SCRAPE.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_four_situations_each_have_an_alert() -> None:
    assert [rule["alert"] for rule in alerts()] == [
        "SportsServiceFailing",
        "SportsTokenMintsSlow",
        "SportsSiteTokenNearItsEnd",
        "SportsRateLimitsFailingClosed",
    ]


def test_every_alert_fires_in_a_unit_test_and_has_a_runbook_section() -> None:
    fired = {
        case["alertname"]
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    headings = set(re.findall(r"^### (\w+)$", RUNBOOK.read_text(), flags=re.MULTILINE))
    for rule in alerts():
        assert rule["alert"] in fired, f"no unit test makes {rule['alert']} fire"
        assert rule["alert"] in headings, f"docs/operations.md has no '### {rule['alert']}' section"
        assert rule["annotations"]["runbook"] == f"docs/operations.md#{rule['alert'].lower()}"


def test_the_rules_read_only_metrics_the_site_serves() -> None:
    for rule in alerts():
        names = set(re.findall(r"\b(sports_\w+)", rule["expr"]))
        assert names, rule["alert"]
        assert all(SERVED.match(name) for name in names), (rule["alert"], names)
