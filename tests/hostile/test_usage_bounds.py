"""Token usage is whatever a provider says: 2^63 - 1 once made SUM() overflow, so `status`
failed and every `resume` crashed. Values are bounded when recorded (the row says what was
reported) and every aggregate sums bounded values without overflow, also for ledgers an older
release wrote with the raw values."""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from ledger_hostile_kit import (
    append_attempt,
    append_ok,
    offline_cte_sweep,
    prompts_sweep,
    run_tally,
)

from evaltally.config import load_config
from evaltally.ledger import Ledger, verify_run
from evaltally.ledger.usage import MAX_TOKENS, bound_usage
from evaltally.records import PlannedCall, Status, Usage
from evaltally.run.session import run_session
from testkit import FAKE_KEY

HUGE = 2**63 - 1


@pytest.mark.parametrize(
    ("reported", "recorded"),
    [
        (12, 12),
        (HUGE, MAX_TOKENS),
        (2**64, MAX_TOKENS),  # beyond SQLite's INTEGER: it used to fail the whole batch
        (-5, 0),
        (math.inf, MAX_TOKENS),
        (math.nan, 0),
        ("7", 0),
    ],
)
def test_each_usage_field_is_bounded(reported: Any, recorded: int) -> None:
    values, note = bound_usage(Usage(reported, 1, 2, 3))
    assert values == (recorded, 1, 2, 3)
    assert (note is None) is (reported == 12)


async def test_the_ledger_records_bounded_usage_and_says_so(tmp_path: Path) -> None:
    call = PlannedCall("c1", "c1", 0, "m", "b", "i", 0, "p", {})
    usage = Usage(HUGE, 2**64, -5, 12)
    async with await Ledger.open(tmp_path / "run", create=True, command="pytest") as ledger:
        await ledger.reconcile_plan([call])
        ledger.attempt_started("c1", 1, hashlib.sha256(b"{}").hexdigest(), b"{}")
        ledger.attempt_finished(
            "c1", 1, http_status=200, error_class=None, error_detail=None, retry_after_s=None,
            response_body=b'"42"', usage=usage, latency_ms=1.0, request_id=None,
        )  # fmt: skip
        ledger.outcome(
            "c1", Status.PARSE_ERROR, raw_text='"42"', parsed=None, parse_path=None,
            reason="not an object", request_hash=None, attempts=1, usage=usage, latency_ms=1.0,
        )  # fmt: skip
    conn = sqlite3.connect(tmp_path / "run" / "ledger.sqlite")
    attempt = conn.execute(
        "SELECT input_tokens, output_tokens, reasoning_tokens, cached_tokens, error_detail"
        " FROM attempts WHERE kind = 'end'"
    ).fetchone()
    outcome = conn.execute(
        "SELECT input_tokens, output_tokens, reasoning_tokens, cached_tokens, reason FROM outcomes"
    ).fetchone()
    conn.close()
    reported = (
        f"input_tokens={HUGE}, output_tokens={2**64}, reasoning_tokens=-5"  # not cached: 12 is fine
    )
    assert attempt[:4] == outcome[:4] == (MAX_TOKENS, MAX_TOKENS, 0, 12)
    assert attempt[4].endswith(reported)
    assert outcome[4].startswith("not an object; provider reported usage out of range")
    assert verify_run(tmp_path / "run").ok


def _old_release_answers(run_dir: Path) -> list[str]:
    """Record two answers as the previous release did: usage stored exactly as reported (two
    rows of 2^63 - 1 are enough to overflow an integer SUM)."""
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    call_ids = [
        str(c)
        for (c,) in conn.execute(
            "SELECT call_id FROM planned WHERE chain_id IN"
            " (SELECT chain_id FROM planned GROUP BY chain_id HAVING count(*) = 1)"
            " ORDER BY seq LIMIT 2"
        )
    ]
    text = '{"status": "ok"}'
    usage = (HUGE, HUGE, HUGE, 0)
    for call_id in call_ids:
        rhash = append_attempt(conn, call_id, response=text.encode(), usage=usage)
        append_ok(conn, call_id, text, request_hash=rhash, usage=usage)
    conn.commit()
    conn.close()
    return call_ids


def test_a_ledger_holding_2_63_stays_usable(tmp_path: Path) -> None:
    code, _, err = run_tally("run", str(offline_cte_sweep(tmp_path)), "--budget", "0")
    assert code == 3, err  # everything blocked: nothing may be spent
    run_dir = tmp_path / "runs" / "t"
    call_ids = _old_release_answers(run_dir)

    code, out, err = run_tally("status", str(run_dir), "--json")
    assert code == 0, err
    status = orjson.loads(out)
    assert status["input_tokens"] == status["reasoning_tokens"] == 2 * MAX_TOKENS

    code, _, err = run_tally("resume", str(run_dir))
    assert code == 0, err

    export = tmp_path / "export.jsonl"
    code, _, err = run_tally("export", str(run_dir), "-o", str(export))
    assert code == 0, err
    rows = {r["call_id"]: r for r in map(orjson.loads, export.read_bytes().splitlines())}
    assert all(rows[c]["usage"]["input_tokens"] == HUGE for c in call_ids)  # as stored

    code, out, err = run_tally("report", str(run_dir), "--resamples", "10")
    assert code == 0, err
    code, out, err = run_tally("verify", str(run_dir))
    assert code == 0, out + err


@pytest.fixture
async def boastful_provider() -> AsyncIterator[str]:
    """An OpenAI-shaped provider on 127.0.0.1 that reports 2^63 - 1 tokens for every answer."""

    async def answer(request: web.Request) -> web.Response:
        body = {
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}],
            "usage": {"prompt_tokens": HUGE, "completion_tokens": HUGE, "total_tokens": HUGE},
        }
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_a_provider_reporting_2_63_tokens(tmp_path: Path, boastful_provider: str) -> None:
    config = load_config(prompts_sweep(tmp_path, boastful_provider, 3))
    env = {"EVALTALLY_TEST_KEY": FAKE_KEY}
    with (tmp_path / "progress.log").open("w") as progress:
        result = await run_session(config, command="pytest", env=env, progress=progress)
    assert result.complete

    run_dir = tmp_path / "runs" / "t"
    conn = sqlite3.connect(run_dir / "ledger.sqlite")
    stored = conn.execute("SELECT max(input_tokens), max(output_tokens) FROM outcomes").fetchone()
    notes = [r for (r,) in conn.execute("SELECT reason FROM outcomes")]
    conn.close()
    assert stored == (MAX_TOKENS, MAX_TOKENS)
    assert all(n and f"input_tokens={HUGE}" in n for n in notes), notes
    assert verify_run(run_dir).ok
