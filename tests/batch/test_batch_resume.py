"""Resume decides from the ledger alone what a batch left by a stopped run may still do: one
whose create never reached the provider is closed and its calls sent again; one the provider
holds is waited for and only its unread lines are recorded."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from batch_kit import (
    FAST,
    Driven,
    answered_bodies,
    batch_sweep,
    export_rows,
    prompts_benchmark,
    run,
)

from evaltally.adapters.base import Endpoint, HttpAdapter
from evaltally.adapters.batch.base import BatchItem
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.config import load_config
from evaltally.errors import LedgerError
from evaltally.ledger import Ledger, request_hash, verify_run
from evaltally.plan import iter_plan
from evaltally.records import Usage
from evaltally.runner.lane import Lane
from evaltally.runner.units import build_unit
from testkit import FAKE_KEY

Mock = Callable[..., Any]


async def _stopped_run(tmp_path: Path, mock_url: str, kind: str) -> tuple[Path, Ledger, list[Any]]:
    """A run stopped just after its first batch was recorded: the ledger holds the plan, the
    batch and its members' attempt starts, nothing else."""
    config = batch_sweep(
        tmp_path / "c.toml",
        mock_url,
        name="stopped",
        mode="batch",
        kinds=(kind,),
        benchmark=prompts_benchmark(tmp_path / "items.jsonl", 3),
    )
    cfg = load_config(config)
    benchmarks = load_benchmarks(cfg)
    calls = list(iter_plan(cfg, benchmarks))
    unit = build_unit(cfg.models[0], FAKE_KEY, Lane("m", cfg.models[0].limits))
    sync = cast(HttpAdapter, unit.adapter)
    assert unit.endpoint is not None
    bodies = [
        sync.build_request(unit.endpoint, benchmarks[c.benchmark].render(c, [])).body for c in calls
    ]
    ledger = await Ledger.open(cfg.run_dir, create=True, command="tally run (stopped)")
    await ledger.reconcile_plan(calls)
    book = ledger.batch_book()
    book.planned("et-stopped", cfg.models[0].key, 1, kind, [(c.call_id, 1) for c in calls], b"x")
    for call, body in zip(calls, bodies, strict=True):
        ledger.attempt_started(call.call_id, 1, request_hash(body), body)
    return config, ledger, list(zip(calls, bodies, strict=True))


async def test_a_batch_whose_create_never_reached_the_provider_is_closed_and_resent(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST)
    config, ledger, _ = await _stopped_run(tmp_path, mock.base_url, "anthropic")
    ledger.batch_book().event("et-stopped", "creating")
    await ledger.close()

    assert (await run(config)).complete
    run_dir = tmp_path / "runs" / "stopped"
    assert {r["status"] for r in export_rows(run_dir)} == {"ok"}
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    closed = conn.execute(
        "SELECT state FROM batch_events WHERE batch_key = 'et-stopped' AND kind = 'closed'"
    ).fetchall()
    errors = conn.execute(
        "SELECT DISTINCT error_class FROM attempts WHERE attempt = 1 AND kind = 'end'"
    ).fetchall()
    conn.close()
    assert closed == [("not_created",)] and errors == [("batch_not_created",)]
    assert mock.stats()["batch"]["created"] == 1
    assert verify_run(run_dir).ok


async def test_a_batch_the_provider_holds_is_waited_for_and_only_unread_lines_recorded(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST)
    config, ledger, members = await _stopped_run(tmp_path, mock.base_url, "openai")
    # The provider really holds this batch: the same bodies under the same custom ids.
    driven = Driven.start("openai", mock.base_url)
    try:
        driven.endpoint = Endpoint(
            "mock-openai", driven.endpoint.base_url, FAKE_KEY, {"max_tokens": 64}
        )
        driven.items = [BatchItem(c.call_id, body) for c, body in members]
        payload = driven.adapter.payload("et-stopped", driven.items)
        upload = driven.adapter.upload_request(driven.endpoint, "et-stopped", payload)
        file_id = driven.adapter.read_upload(await driven.send(upload))
        created = await driven.send(
            driven.adapter.create_request(driven.endpoint, "et-stopped", payload, str(file_id))
        )
        provider_id = str(driven.adapter.read_created(created))
    finally:
        await driven.transport.close()
    book = ledger.batch_book()
    book.event("et-stopped", "created", provider_id=provider_id)
    first = members[0][0]
    # Its first line was read and recorded before the run stopped.
    ledger.attempt_finished(
        first.call_id,
        1,
        http_status=200,
        error_class=None,
        error_detail=None,
        retry_after_s=None,
        # the answer recorded below is backed by this body (verify checks it)
        response_body=b'{"text": "earlier"}',
        usage=Usage(1, 1),
        latency_ms=1.0,
        request_id=None,
    )
    ledger.outcome(
        first.call_id,
        "ok",
        raw_text="earlier",
        parsed="earlier",
        parse_path="text",  # type: ignore[arg-type]
        reason=None,
        request_hash=request_hash(members[0][1]),
        attempts=1,
        usage=Usage(1, 1),
        latency_ms=1.0,
    )
    await ledger.close()

    assert (await run(config)).complete
    run_dir = tmp_path / "runs" / "stopped"
    rows = {r["call_id"]: r for r in export_rows(run_dir)}
    assert rows[first.call_id]["raw_text"] == "earlier"
    assert {r["status"] for r in rows.values()} == {"ok"}
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    ends = conn.execute(
        "SELECT call_id, count(*) FROM attempts WHERE kind = 'end' GROUP BY call_id"
    ).fetchall()
    conn.close()
    assert dict(ends) == {c.call_id: 1 for c, _ in members}
    assert mock.stats()["batch"]["created"] == 1
    assert verify_run(run_dir).ok


async def test_a_batch_that_cannot_be_followed_stays_open_and_its_calls_wait_for_it(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**{**FAST, "batch_in_progress_s": 0.5})
    config = batch_sweep(
        tmp_path / "c.toml",
        mock.base_url,
        name="held",
        mode="batch",
        kinds=("gemini",),
        benchmark=prompts_benchmark(tmp_path / "chains.jsonl", 3, turns=2),
    )

    async def refuse_polls() -> None:
        async with asyncio.timeout(10):
            while not mock.batches.jobs:  # noqa: ASYNC110 (the mock has no event to wait on)
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        mock.update(api_key="a-rotated-key")

    first, _ = await asyncio.gather(run(config), refuse_polls())
    assert not first.complete
    run_dir = tmp_path / "runs" / "held"
    assert {r["status"] for r in export_rows(run_dir)} == {"unfinished"}
    assert verify_run(run_dir).ok  # the open batch's lines are not "unclosed attempts"

    mock.update(api_key=None)
    assert (await run(config)).complete
    assert {r["status"] for r in export_rows(run_dir)} == {"ok"}
    stats = mock.stats()["batch"]
    assert stats["created"] == 2 and stats["answered_by_body"] == answered_bodies(run_dir)
    assert verify_run(run_dir).ok


async def test_a_model_switched_to_sync_while_its_batch_is_open_is_refused(
    tmp_path: Path, mock_server: Mock
) -> None:
    mock = await mock_server(**FAST)
    config, ledger, _ = await _stopped_run(tmp_path, mock.base_url, "openai")
    ledger.batch_book().event("et-stopped", "creating")
    await ledger.close()
    sync_text = config.read_text().replace('mode = "batch"\n[models.batch]\npoll_s = 0.01\n', "")
    config.write_text(sync_text)
    with pytest.raises(LedgerError, match=r"still open from an earlier session \(et-stopped\)"):
        await run(config)
    assert mock.stats()["total"] == 0
