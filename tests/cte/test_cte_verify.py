"""Sandboxed replay and ``tally cte replay`` on the official file and altered copies."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evaltally.benchmarks.cte.cli import app
from evaltally.benchmarks.cte.records import Scenario, unedited_sources
from evaltally.benchmarks.cte.sandbox import Limits, replay_in_sandbox, require_results
from evaltally.benchmarks.cte.verify import verify_file
from evaltally.errors import SandboxError

QUIRK_CART_RECORDS = 9


def test_official_file_verifies_with_the_known_cart_quirk(official_path: Path) -> None:
    report = verify_file(official_path)
    assert report.ok
    assert report.count("ok") == 255 - QUIRK_CART_RECORDS
    quirks = [c for c in report.checks if c.status == "known_quirk"]
    assert len(quirks) == QUIRK_CART_RECORDS and {c.domain for c in quirks} == {"cart"}


def altered_copy(official_path: Path, tmp_path: Path) -> tuple[Path, str]:
    with gzip.open(official_path, "rt") as fh:
        recs = [json.loads(line) for line in fh]
    target = next(r for r in recs if r["domain"] == "bank")
    target["trace_counterfactual"][12]["response"] = {"account_id": "a0", "balance": 1e9}
    target["final_state_original"]["total_deposits"] = -1.0
    out = tmp_path / "altered.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return out, target["item_id"]


def test_verify_catches_an_altered_response(official_path: Path, tmp_path: Path) -> None:
    path, item = altered_copy(official_path, tmp_path)
    report = verify_file(path)
    assert not report.ok
    [bad] = [c for c in report.checks if c.status == "mismatch"]
    assert bad.item_id == item
    assert any(p.startswith("trace_counterfactual[12].response: stored") for p in bad.problems)
    assert any(
        p.startswith("final_state_original: differs at total_deposits") for p in bad.problems
    )
    result = CliRunner().invoke(app, ["replay", str(path)])
    assert result.exit_code == 1
    assert f"MISMATCH    {item} (bank)" in result.output
    assert "trace_counterfactual[12].response" in result.output


def test_sandbox_names_a_runaway_record_and_continues(official: list[Scenario]) -> None:
    loop: dict[str, Any] = dict(official[0].raw)
    loop["item_id"] = "runaway"
    loop["patched_source"] = loop["patched_source"].replace(
        "def check_access(self, tid, as_user_id):",
        "def check_access(self, tid, as_user_id):\n        while True: pass",
    )
    printing: dict[str, Any] = dict(official[1].raw)
    printing["item_id"] = "printer"
    printing["patched_source"] = printing["patched_source"].replace(
        "    def deposit(self, account_id: str, amount: float) -> dict:\n",
        "    def deposit(self, account_id: str, amount: float) -> dict:\n        print('{}')\n",
    )
    outs = replay_in_sandbox(
        [loop, printing, official[2].raw],
        unedited_sources=unedited_sources(official),
        limits=Limits(cpu_seconds_per_record=1, wall_seconds_per_record=5),
        jobs=1,
    )
    assert [o.item_id for o in outs] == ["runaway", "printer", official[2].item_id]
    assert outs[0].result is None and "record runaway" in str(outs[0].error)
    assert "CPU limit" in str(outs[0].error) or "timed out" in str(outs[0].error)
    assert outs[1].result is not None and outs[2].result is not None  # prints cannot forge lines


def test_sandbox_wall_clock_timeout_names_the_record(official: list[Scenario]) -> None:
    sleeper: dict[str, Any] = dict(official[0].raw)
    sleeper["item_id"] = "sleeper"
    sleeper["patched_source"] = "import time\n" + sleeper["patched_source"].replace(
        "def check_access(self, tid, as_user_id):",
        "def check_access(self, tid, as_user_id):\n        time.sleep(60)",
    )
    sleeper["intervention"] = dict(sleeper["intervention"], line_number=10)  # one line added
    outs = replay_in_sandbox(
        [official[2].raw, sleeper, official[3].raw],
        unedited_sources=unedited_sources(official),
        limits=Limits(wall_seconds_per_record=1.0),
        jobs=1,
    )
    assert [o.result is not None for o in outs] == [True, False, True]
    assert outs[1].error == "record sleeper: timed out after 1 s wall clock"
    with pytest.raises(SandboxError, match="record sleeper"):
        require_results(outs)
