"""A session keeps the lines of its first failed calls only and counts the rest (issue 30: a
sweep against an endpoint that fails every call held one line per call for the whole run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaltally.config import load_config
from evaltally.run.session import run_session
from evaltally.runner.scheduler import KEPT_FAILURES
from testkit import FAKE_KEY, write_config, write_items

ENV = {"EVALTALLY_TEST_KEY": FAKE_KEY}
ONE_ATTEMPT = "concurrency = 8\ntimeout_s = 2\nmax_attempts = 1\nbreaker_threshold = 1000"


async def test_failed_calls_past_the_kept_lines_are_counted(
    tmp_path: Path, mock_server: Any
) -> None:
    srv = await mock_server(error_503_rate=1.0, retry_after_s=None)
    calls = 3 * KEPT_FAILURES
    write_items(tmp_path / "items.jsonl", calls)
    config = load_config(write_config(tmp_path, srv.base_url, limits=ONE_ATTEMPT))
    result = await run_session(config, command="test", env=ENV)
    assert result.lanes["m1"].stats.failed == calls
    assert result.failed_calls == calls
    assert len(result.failures) == KEPT_FAILURES
    assert all("http_503" in line or "503" in line for line in result.failures), result.failures
