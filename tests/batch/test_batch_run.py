"""Batch mode through the real runner against the mock: the same export as synchronous calls,
chains in rounds, and every way a batch or a line can go wrong ending as the synchronous path
would (retried in a later round, failed, blocked), with the ledger verified after each run."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from batch_kit import (
    CTE_TWO,
    FAST,
    answered_bodies,
    batch_sweep,
    export_rows,
    prompts_benchmark,
    run,
)

from evaltally.ledger import run_status, verify_run
from evaltally.mockserver import FaultRule
from evaltally.mockserver.batch.knobs import BatchFault

Mock = Callable[..., Any]


def _attempts(run_dir: Path) -> list[tuple[str, int, str, str | None]]:
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    try:
        return conn.execute(
            "SELECT a.call_id, a.attempt, a.kind, a.error_class FROM attempts a ORDER BY a.seq"
        ).fetchall()
    finally:
        conn.close()


def _one(
    tmp_path: Path, mock: Any, name: str, kind: str, mode: str = "batch", **options: Any
) -> Path:
    """A sweep of one model of API shape `kind` (in batch mode unless `mode` says), on `mock`."""
    return batch_sweep(
        tmp_path / f"{name}.toml", mock.base_url, name=name, mode=mode, kinds=(kind,), **options
    )


def _ok(run_dir: Path) -> None:
    report = verify_run(run_dir)
    assert report.ok, report.violations


async def test_a_cte_sweep_in_batch_mode_exports_what_the_sync_sweep_exports(
    tmp_path: Path, mock_server: Mock
) -> None:
    """All three protocols on two built-in scenarios, one model per API shape."""
    sync_mock, batch_mock = await mock_server(), await mock_server(**FAST)
    sync = batch_sweep(
        tmp_path / "s.toml", sync_mock.base_url, name="sync", mode="sync", benchmark=CTE_TWO
    )
    batch = batch_sweep(
        tmp_path / "b.toml", batch_mock.base_url, name="batch", mode="batch", benchmark=CTE_TWO
    )
    sync_result, batch_result = await asyncio.gather(run(sync), run(batch))
    assert sync_result.complete and batch_result.complete, batch_result.failures
    rows = export_rows(tmp_path / "runs" / "batch")
    assert len(rows) == 3 * 240 and {r["status"] for r in rows} == {"ok"}
    assert rows == export_rows(tmp_path / "runs" / "sync")
    _ok(tmp_path / "runs" / "batch")
    rounds = run_status(tmp_path / "runs" / "batch").rounds
    for kind in ("openai", "anthropic", "gemini"):
        mine = [r for r in rounds if r["model"] == f"{kind}-model"]
        # 160 independent calls and 2 rollout first steps, then one rollout step per round.
        assert [r["requests"] for r in mine] == [162] + [2] * 39
        assert all(r["answered_share"] == 1.0 for r in mine)
    stats = batch_mock.stats()
    assert stats["total"] == 0, "batch mode sent no synchronous request"
    assert stats["batch"]["answered_by_body"] == answered_bodies(tmp_path / "runs" / "batch")
    assert sum(stats["batch"]["answered_by_body"].values()) == 720


async def test_an_expired_batchs_calls_finish_in_a_later_batch(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST, batch_faults=(BatchFault("expire"),))
    bench = prompts_benchmark(tmp_path / "items.jsonl", 6)
    config = _one(
        tmp_path,
        mock,
        "exp",
        "openai",
        benchmark=bench,
    )
    result = await run(config)
    assert result.complete
    run_dir = tmp_path / "runs" / "exp"
    rounds = run_status(run_dir).rounds
    assert [(r["round"], r["requests"], r["answered"]) for r in rounds] == [(1, 6, 3), (2, 3, 3)]
    expired = {c for c, n, kind, error in _attempts(run_dir) if error == "batch_expired"}
    assert len(expired) == 3
    ends = {c: n for c, n, kind, _ in _attempts(run_dir) if kind == "end" and c in expired}
    assert ends == dict.fromkeys(expired, 2)
    sync_mock = await mock_server()
    sync = _one(tmp_path, sync_mock, "s", "openai", mode="sync", benchmark=bench)
    await run(sync)
    assert export_rows(run_dir) == export_rows(tmp_path / "runs" / "s")
    _ok(run_dir)
    assert mock.stats()["batch"]["final_states"] == {"expired": 1, "completed": 1}


async def test_a_400_line_fails_its_call_and_blocks_its_chain_a_503_line_is_retried(
    tmp_path: Path, mock_server: Mock
) -> None:
    faults = (FaultRule("400", match="chain 1 turn 1"), FaultRule("503", match="chain 2 turn 0"))
    mock = await mock_server(**FAST, batch_line_faults=faults)
    bench = prompts_benchmark(tmp_path / "chains.jsonl", 3, turns=3)
    config = _one(
        tmp_path,
        mock,
        "lines",
        "anthropic",
        benchmark=bench,
    )
    result = await run(config)
    assert not result.complete
    rows = {(r["item_id"], r["step"]): r for r in export_rows(tmp_path / "runs" / "lines")}
    assert rows[("c1", 1)]["status"] == "failed" and "http_400" in rows[("c1", 1)]["reason"]
    assert rows[("c1", 2)]["status"] == "blocked"
    assert {rows[("c2", s)]["status"] for s in range(3)} == {"ok"}
    assert {rows[("c0", s)]["status"] for s in range(3)} == {"ok"}
    assert any("http_400" in f for f in result.failures)
    _ok(tmp_path / "runs" / "lines")


async def test_with_sync_fallback_an_expired_line_is_answered_synchronously_at_once(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST, batch_faults=(BatchFault("expire"),))
    config = _one(
        tmp_path,
        mock,
        "fb",
        "gemini",
        benchmark=prompts_benchmark(tmp_path / "items.jsonl", 4),
        model_extra='batch_fallback = "sync"\n',
    )
    assert (await run(config)).complete
    run_dir = tmp_path / "runs" / "fb"
    assert len(run_status(run_dir).rounds) == 1
    stats = mock.stats()
    assert stats["by_status"] == {"200": 2} and stats["batch"]["created"] == 1
    _ok(run_dir)


async def test_the_budget_is_checked_on_a_batchs_estimate_before_it_is_submitted(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST)
    config = _one(
        tmp_path,
        mock,
        "budget",
        "openai",
        benchmark=prompts_benchmark(tmp_path / "items.jsonl", 10),
        model_extra="[models.price]\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0\n",
    )
    # Each call: ~8 input tokens + 64 max_tokens at $500/Mtok (batch price) = ~$0.036.
    result = await run(config, budget_usd=0.15)
    assert not result.complete
    rows = export_rows(tmp_path / "runs" / "budget")
    blocked = [r for r in rows if r["status"] == "blocked"]
    assert 0 < len(blocked) < 10 and all("budget" in r["reason"] for r in blocked)
    assert mock.stats()["batch"]["lines"] == 10 - len(blocked)
    _ok(tmp_path / "runs" / "budget")


async def test_failed_batches_failed_uploads_lost_creates_and_dropped_downloads_all_recover(
    tmp_path: Path, mock_server: Mock
) -> None:
    faults = tuple(BatchFault(k) for k in ("fail", "upload_error", "create_lost", "download_drop"))
    mock = await mock_server(**FAST, batch_faults=faults)
    config = _one(
        tmp_path,
        mock,
        "faults",
        "openai",
        benchmark=prompts_benchmark(tmp_path / "chains.jsonl", 4, turns=2),
    )
    assert (await run(config)).complete
    run_dir = tmp_path / "runs" / "faults"
    _ok(run_dir)
    stats = mock.stats()["batch"]
    # The lost create answer was found again: no second batch for the same calls.
    assert stats["created"] == len(run_status(run_dir).batches)
    assert stats["fault_create_lost"] == stats["fault_fail"] == stats["fault_download_drop"] == 1
    assert stats["answered_by_body"] == answered_bodies(run_dir)


async def test_a_batch_cancelled_at_the_provider_is_replanned(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**{**FAST, "batch_in_progress_s": 0.4})
    config = _one(
        tmp_path,
        mock,
        "cancel",
        "anthropic",
        benchmark=prompts_benchmark(tmp_path / "items.jsonl", 6),
    )

    async def cancel_first_batch() -> None:
        async with asyncio.timeout(10):
            while not mock.batches.jobs:  # noqa: ASYNC110 (the mock has no event to wait on)
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        mock.batches.cancel(next(iter(mock.batches.jobs.values())))

    result, _ = await asyncio.gather(run(config), cancel_first_batch())
    assert result.complete
    assert mock.stats()["batch"]["final_states"] == {"cancelled": 1, "completed": 1}
    _ok(tmp_path / "runs" / "cancel")


async def test_a_request_larger_than_a_batch_may_be_fails_with_the_limit_named(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST)
    config = _one(
        tmp_path,
        mock,
        "big",
        "openai",
        benchmark=prompts_benchmark(tmp_path / "items.jsonl", 2),
        batch_table="poll_s = 0.01\nmax_bytes = 150",
    )
    result = await run(config)
    rows = export_rows(tmp_path / "runs" / "big")
    assert {r["status"] for r in rows} == {"failed"} and "exceeds the batch limit" in rows[0][
        "reason"
    ]
    assert mock.stats()["batch"].get("created", 0) == 0 and not result.complete


async def test_refused_credentials_stop_the_lane_and_block_its_calls(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST, api_key="the-right-key")
    config = _one(
        tmp_path,
        mock,
        "auth",
        "openai",
        benchmark=prompts_benchmark(tmp_path / "chains.jsonl", 2, turns=2),
    )
    result = await run(config)
    lane = result.lanes["openai-model"]
    assert lane.stop_reason and "batch API" in lane.stop_reason
    statuses = {r["status"] for r in export_rows(tmp_path / "runs" / "auth")}
    assert statuses <= {"failed", "blocked"} and not result.complete
    _ok(tmp_path / "runs" / "auth")
