"""Shared fixtures of the CTE-Bench tests: the verified official file beside the clone."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaltally.benchmarks.cte.records import Scenario, load_scenarios

OFFICIAL = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "data"
    / "cte-bench"
    / "core_v1.jsonl.gz"
)


@pytest.fixture(scope="session")
def official_path() -> Path:
    if not OFFICIAL.exists():
        pytest.fail(
            f"official Core-v1 copy not found at {OFFICIAL}: ../shared must be beside the clone"
        )
    return OFFICIAL


@pytest.fixture(scope="session")
def official(official_path: Path) -> list[Scenario]:
    return load_scenarios(official_path)
