"""deploy/prometheus/: the alerting rules pass their `promtool test rules` unit tests (each alert fires in
time on a recorded situation, stays firing when its series vanish, and is quiet on a healthy site), every
alert has a test that makes it fire, a severity the example Alertmanager routes on and a runbook section in
docs/operations.md, the rules read only metrics the site serves, the objective is written once, and the
scrape and Alertmanager configurations load. (A real Prometheus and Alertmanager paging through an outage
of `make serve`: tests/production/test_operating.py.)"""

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
ROUTING = ROOT / "deploy" / "prometheus" / "alertmanager.yml"
RUNBOOK = ROOT / "docs" / "operations.md"
# The families the site serves (mintroute.metrics; sports_service_up is /readyz's), with the suffixes
# Prometheus's text format adds.
SERVED = re.compile(
    r"^sports_token_requests_total$|^sports_token_(upstream|request)_seconds_(bucket|count|sum)$"
    r"|^sports_token_site_token_(age|left)_seconds$|^sports_login_throttled_total$|^sports_service_up$"
)
RECEIVERS = {"page": "on-call", "ticket": "tickets"}  # alertmanager.yml's receiver for each severity


def installed(program: str, package: str) -> str:
    """A program of a Debian package (.ci/run installs it): skipped without it, failed under CI."""
    found = shutil.which(program)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{program} is not installed: apt-get install {package}")
        pytest.skip(f"{program} is not installed (apt-get install {package})")
    return found


def run(program: str, package: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - a fixed program and our own files
        [installed(program, package), *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=RULES.parent,
    )


def run_promtool(*arguments: str) -> subprocess.CompletedProcess[str]:
    return run("promtool", "prometheus", *arguments)


def run_amtool(*arguments: str) -> subprocess.CompletedProcess[str]:
    return run("amtool", "prometheus-alertmanager", *arguments)


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def test_the_rules_pass_their_unit_tests() -> None:
    checked = run_promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = run_promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_the_scrape_configuration_loads_with_the_rules() -> None:
    checked = run_promtool("check", "config", SCRAPE.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_routing_example_loads_and_routes_each_severity() -> None:
    checked = run_amtool("check-config", ROUTING.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for rule in alerts():
        severity = rule["labels"]["severity"]
        routed = run_amtool("config", "routes", "test", f"--config.file={ROUTING.name}", f"severity={severity}")
        assert routed.stdout.split() == [RECEIVERS[severity]], (rule["alert"], routed.stdout + routed.stderr)


def test_symptoms_and_causes_each_have_an_alert() -> None:
    assert [rule["alert"] for rule in alerts()] == [
        "SportsTokenAnswersFailing",
        "SportsTokenErrorBudgetDraining",
        "SportsTokenAnswersSlow",
        "SportsServiceDown",
        "SportsServiceFailing",
        "SportsTokenMintsSlow",
        "SportsSiteTokenNearItsEnd",
        "SportsRateLimitsFailingClosed",
        "SportsMetricsDown",
        "SportsMetricsScrapeSlow",
    ]


def test_each_alert_pages_soon_and_does_not_resolve_when_its_series_vanish() -> None:
    """At most a minute of `for:` (alerts_test.yml times each one); an alert on the site's series keeps firing
    while they are gone (Prometheus's own series of the job do not vanish; SportsMetricsDown has absent())."""
    for rule in alerts():
        assert parse_seconds(rule.get("for", "0s")) <= 60, rule["alert"]
        if re.search(r"\bsports_", rule["expr"]):
            held = f'max(ALERTS{{alertname="{rule["alert"]}", alertstate="firing"}}) unless on() count('
            assert held in rule["expr"], rule["alert"]


def parse_seconds(duration: str) -> int:
    found = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert found is not None, duration
    return int(found[1] or 0) * 60 + int(found[2] or 0)


def test_the_objective_is_written_once_and_every_window_counts_the_same_answers() -> None:
    """One recording rule holds the objective; every ratio counts as "not 200" the outcomes that are not
    mintroute.metrics.ANSWERED_200."""
    from mintroute.metrics import ANSWERED_200

    objectives = [rule for rule in rules() if rule.get("record") == "sports_token:objective:ratio"]
    assert len(objectives) == 1
    text = RULES.read_text()
    assert len(re.findall(r"\b0\.995\b", text)) == 1
    not_200 = re.findall(r'outcome!~"([^"]*)"', text)
    assert not_200, "no rule counts the answers that are not 200"
    assert all(set(matched.split("|")) == ANSWERED_200 for matched in not_200), not_200


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


def test_the_rules_read_only_metrics_the_site_serves_and_their_own_records() -> None:
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    for rule in rules():
        names = set(re.findall(r"\b(sports_[\w:]+)", rule["expr"]))
        assert all(SERVED.match(name) or name in recorded for name in names), (rule, names)
