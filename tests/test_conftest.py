"""How tests/conftest.py shares the machine: a module's tests run on one worker (its servers start once), and every
production module that runs in the parallel run is in one of the production groups, so no more than three
clusters of servers run at once."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.conftest import PRODUCTION_GROUPS

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = ROOT / "tests" / "production"


def test_under_pytest_xdist_each_module_runs_on_one_worker() -> None:
    modules = ["tests/test_service_facts.py", "tests/test_answer_table.py", "tests/test_settings_reference.py"]
    done = subprocess.run(  # noqa: S603 - a fixed command
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider", *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers = defaultdict(set)
    for worker, module in re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (tests/[\w/]+\.py)::", done.stdout, re.MULTILINE):
        workers[module].add(worker)
    assert set(workers) == set(modules), done.stdout[-3000:]
    assert all(len(ran_on) == 1 for ran_on in workers.values()), dict(workers)


def test_every_parallel_production_module_is_in_a_production_group() -> None:
    grouped = [module for modules in PRODUCTION_GROUPS.values() for module in modules]
    parallel = {
        path.name for path in PRODUCTION.glob("test_*.py") if "pytestmark = pytest.mark.serial" not in path.read_text()
    }
    assert len(grouped) == len(set(grouped)), "a module is named in two groups"
    assert parallel - set(grouped) == set(), (
        "add these modules to the shorter of the first two PRODUCTION_GROUPS (tests/conftest.py)"
    )
    assert len(parallel) > 5  # the pattern still finds the folder's modules
