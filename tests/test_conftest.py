"""How tests/conftest.py shares the machine: every production module that runs in the parallel run is in one of
the two production groups, so no more than two clusters of servers run at once."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PRODUCTION_GROUPS

PRODUCTION = Path(__file__).resolve().parent / "production"


def test_every_parallel_production_module_is_in_a_production_group() -> None:
    grouped = [module for modules in PRODUCTION_GROUPS.values() for module in modules]
    parallel = {
        path.name for path in PRODUCTION.glob("test_*.py") if "pytestmark = pytest.mark.serial" not in path.read_text()
    }
    assert len(grouped) == len(set(grouped)), "a module is named in both groups"
    assert parallel - set(grouped) == set(), "add these modules to the shorter of PRODUCTION_GROUPS (tests/conftest.py)"
    assert len(parallel) > 5  # the pattern still finds the folder's modules
