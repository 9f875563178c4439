"""A lane configured without limits adopts the limits a provider advertises in its headers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaltally.config import load_config
from evaltally.run.session import run_session
from evaltally.runner.pacing import HEADROOM
from testkit import FAKE_KEY, write_config, write_items


async def test_advertised_limits_pace_the_lane(tmp_path: Path, mock_server: Any) -> None:
    srv = await mock_server(rpm=600, tpm=200_000, ratelimit_headers=True)
    write_items(tmp_path / "items.jsonl", 40)
    config = load_config(write_config(tmp_path, srv.base_url, limits="concurrency = 4"))
    assert config.models[0].limits.rpm is None and config.models[0].limits.tpm is None
    result = await run_session(config, command="test", env={"EVALTALLY_TEST_KEY": FAKE_KEY})
    lane = result.lanes["m1"]
    assert result.complete and lane.stats.ok == 40
    assert lane.requests.per_minute_rate == pytest.approx(600 * HEADROOM)
    assert lane.tokens.per_minute_rate == pytest.approx(200_000 * HEADROOM)
    assert srv.stats()["rate_limited"] == 0
