"""Core-v1 composition and the paper's Table 1 controls, through stats and the grader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaltally.benchmarks.cte.baselines import PREDICTORS, graded_calls
from evaltally.benchmarks.cte.cli import app
from evaltally.benchmarks.cte.grade import summarize
from evaltally.benchmarks.cte.records import Scenario
from evaltally.benchmarks.cte.stats import composition

TABLE_1 = {  # all-call VM / effect-step VM / status match, %
    "replay": (75.7, 0.0, 91.6),
    "copy_last": (1.5, 1.1, 72.3),
    "majority_status": (0.0, 0.0, 76.8),
}


def test_core_v1_composition(official: list[Scenario]) -> None:
    stats = composition(official)
    assert (stats["scenarios"], stats["scored_calls"], stats["effect_steps"]) == (255, 10200, 2476)
    assert sum(c["late_first_change"] for c in stats["by"]) == 8
    cells = {(c["service"], c["kind"]): c["scenarios"] for c in stats["by"]}
    assert cells[("ratelimiter", "state_injection")] == 15 and len(cells) == 9


def test_stats_cli_json_and_table(official_path: Path) -> None:
    result = CliRunner().invoke(app, ["stats", str(official_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["scenarios"], data["scored_calls"], data["effect_steps"]) == (255, 10200, 2476)
    assert {"service", "kind", "scenarios", "effect_steps", "late_first_change"} <= set(
        data["by"][0]
    )
    table = CliRunner().invoke(app, ["stats", str(official_path)])
    assert table.exit_code == 0 and "10,200" in table.output and "2,476" in table.output


@pytest.mark.parametrize("name", sorted(TABLE_1))
def test_table_1_is_reproduced(official: list[Scenario], name: str) -> None:
    summary = summarize(graded_calls(official, PREDICTORS[name]), resamples=0)
    m = summary["metrics"]
    got = tuple(
        round(100 * m[k]["value"], 1) for k in ("all_call_vm", "effect_step_vm", "status_match")
    )
    assert got == TABLE_1[name]
    assert summary["n_calls"] == 10200 and summary["n_effect_steps"] == 2476
