"""What the command line says about batch mode: the plan's rounds and batches, the end of a run,
and `tally status`'s rounds table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from batch_kit import CTE_TWO, batch_sweep, prompts_benchmark

from testkit import tally

MOCK = "[mock]\nbatch_validating_s = 0.01\nbatch_in_progress_s = 0.02\nbatch_finalizing_s = 0.01\n"


def test_plan_shows_requests_rounds_and_batches_of_each_batch_model(tmp_path: Path) -> None:
    config = batch_sweep(
        tmp_path / "p.toml",
        "http://127.0.0.1:9",
        name="p",
        mode="batch",
        kinds=("openai",),
        benchmark=CTE_TWO,
        batch_table="max_requests = 100",
    )
    result = tally("plan", str(config))
    assert result.returncode == 0, result.stderr
    # 160 independent calls + 2 rollout chains of 40: round 1 holds 162 requests (2 batches of
    # at most 100), rounds 2..40 one rollout step each.
    assert "batch mode: openai-model: 240 requests in 40 rounds (162 in round 1" in result.stdout
    assert "about 41 batches (per batch: 100 requests, 200 MB)" in result.stdout


def test_run_and_status_show_rounds_with_the_share_answered(
    tmp_path: Path, mock_process: Any
) -> None:
    (tmp_path / "mock.toml").write_text(MOCK)
    mock = mock_process("--config", str(tmp_path / "mock.toml"))
    config = batch_sweep(
        tmp_path / "c.toml",
        mock.base_url,
        name="cli",
        mode="batch",
        kinds=("gemini",),
        benchmark=prompts_benchmark(tmp_path / "chains.jsonl", 3, turns=2),
    )
    ran = tally("run", str(config))
    assert ran.returncode == 0, ran.stderr
    assert "batch rounds (all sessions):" in ran.stdout
    assert "gemini-model: 2 rounds, 2 batches, 6 requests, 100% answered" in ran.stdout
    run_dir = tmp_path / "runs" / "cli"
    status = tally("status", str(run_dir))
    assert status.returncode == 0, status.stderr
    assert "batch rounds" in status.stdout and "batches: 2 (2 completed)" in status.stdout
    data = orjson.loads(tally("status", str(run_dir), "--json").stdout)
    assert [(r["round"], r["requests"], r["answered_share"]) for r in data["rounds"]] == [
        (1, 3, 1.0),
        (2, 3, 1.0),
    ]
    assert tally("verify", str(run_dir)).returncode == 0
