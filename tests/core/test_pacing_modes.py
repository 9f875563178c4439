"""A 300-call run against each way a provider enforces its limit (mock in its own process on
127.0.0.1): the run stays within the limit and collects at most 2 responses of 429."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from evaltally.config import load_config
from evaltally.run.session import run_session
from testkit import FAKE_KEY, MockProcess, write_config, write_items

CALLS = 300
RPM = 6000  # 100 per second: each run takes about 3 s


async def run_against(tmp_path: Path, mock: MockProcess, limits: str) -> tuple[int, int]:
    write_items(tmp_path / "items.jsonl", CALLS)
    config = load_config(write_config(tmp_path, mock.base_url, limits=limits))
    result = await run_session(config, command="test", env={"EVALTALLY_TEST_KEY": FAKE_KEY})
    stats = mock.stats()
    assert result.complete and result.lanes["m1"].stats.ok == CALLS
    return stats["by_status"].get("429", 0), stats["total"]


@pytest.mark.parametrize("mode", ["token_bucket", "fixed_window", "sliding_window"])
@pytest.mark.parametrize("headers", ["--ratelimit-headers", "--no-ratelimit-headers"])
async def test_configured_limit_holds_under_every_enforcement(
    tmp_path: Path, mock_process: Callable[..., MockProcess], mode: str, headers: str
) -> None:
    mock = mock_process("--no-auth", "--rpm", str(RPM), "--limit-mode", mode, headers)
    refused, total = await run_against(
        tmp_path, mock, f"concurrency = 32\nrpm = {RPM}\ntpm = 100000000"
    )
    # The mock enforces the limit exactly: every request over it is a 429.
    assert refused <= 2 and total == CALLS + refused


async def test_advertised_higher_than_enforced_keeps_to_the_configured_limit(
    tmp_path: Path, mock_process: Callable[..., MockProcess]
) -> None:
    mock = mock_process(
        "--no-auth", "--rpm", str(RPM), "--limit-mode", "sliding_window", "--advertise-factor", "2"
    )
    refused, _ = await run_against(tmp_path, mock, f"concurrency = 32\nrpm = {RPM}")
    assert refused <= 2


async def test_limit_nobody_told_us_is_learned_from_a_few_429s(
    tmp_path: Path, mock_process: Callable[..., MockProcess]
) -> None:
    # No limit configured, none advertised: the slow start finds it, the lane paces under it.
    # Every request in flight when the limit runs out is refused too, so a small concurrency
    # keeps this about learning (docs/performance.md measures the storm at 64).
    mock = mock_process(
        "--no-auth", "--rpm", "3000", "--limit-mode", "fixed_window", "--no-ratelimit-headers"
    )
    refused, _ = await run_against(tmp_path, mock, "concurrency = 4")
    assert refused <= 10


async def test_rate_learned_under_a_tighter_limit_is_recorded_and_resumed(
    tmp_path: Path, mock_process: Callable[..., MockProcess]
) -> None:
    mock = mock_process(
        "--no-auth", "--rpm", "3000", "--limit-mode", "sliding_window", "--no-ratelimit-headers"
    )
    write_items(tmp_path / "items.jsonl", 200)
    config = load_config(
        write_config(tmp_path, mock.base_url, limits="concurrency = 16\nrpm = 6000")
    )
    env = {"EVALTALLY_TEST_KEY": FAKE_KEY}
    first = await run_session(config, command="test", env=env)
    assert first.complete
    learned = first.lanes["m1"].requests.per_minute_rate
    assert learned is not None and learned < 3600  # near the 3,000 enforced, far under 6,000
    db = sqlite3.connect(f"file:{config.run_dir / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT session, value_json FROM meta WHERE key = 'lane_rate:m1'"
        ).fetchall()
    finally:
        db.close()
    assert len(rows) == 1 and json.loads(rows[0][1]) == {"rpm": round(learned, 3)}
    again = await run_session(config, command="test", env=env)
    assert again.lanes["m1"].requests.per_minute_rate == pytest.approx(learned, abs=0.01)
