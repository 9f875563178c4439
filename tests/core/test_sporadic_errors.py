"""A sporadic error holds its own request, not the lane (issue 29), against the real mock
provider on 127.0.0.1: while one request waits out its Retry-After, the others are sent.
Facts come from the ledger (which attempts started when), never from how long the run took."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evaltally.config import load_config
from evaltally.mockserver import FaultRule
from evaltally.run.session import run_session
from testkit import FAKE_KEY, write_config, write_items

ENV = {"EVALTALLY_TEST_KEY": FAKE_KEY}
LIMITS = "concurrency = 4\nbackoff_initial_s = 0.01\nbackoff_max_s = 0.05\nmax_attempts = 3"
CALLS = 40
RETRY_AFTER_S = 1.0


def _failed_then_retried(run_dir: Path, status: int) -> tuple[float, float, int]:
    """For the one attempt answered `status`: when it ended, when its call's retry started,
    and how many attempts of other calls started during its Retry-After."""
    db = sqlite3.connect(run_dir / "ledger.sqlite")
    try:
        call_id, attempt, ended = db.execute(
            "SELECT call_id, attempt, at FROM attempts WHERE kind = 'end' AND http_status = ?",
            (status,),
        ).fetchone()
        (retried,) = db.execute(
            "SELECT at FROM attempts WHERE kind = 'start' AND call_id = ? AND attempt = ?",
            (call_id, attempt + 1),
        ).fetchone()
        (others,) = db.execute(
            "SELECT count(*) FROM attempts WHERE kind = 'start' AND call_id != ?"
            " AND at > ? AND at < ?",
            (call_id, ended, ended + RETRY_AFTER_S),
        ).fetchone()
    finally:
        db.close()
    return float(ended), float(retried), int(others)


@pytest.mark.parametrize(
    ("kind", "knobs"),
    [
        ("503", {}),
        ("529", {}),
        # A 429 whose headers show requests left in the window: the provider's capacity.
        ("429", {"rpm": 1_000_000}),
    ],
)
async def test_a_retry_after_holds_only_its_own_request(
    tmp_path: Path, mock_server: Any, kind: str, knobs: dict[str, Any]
) -> None:
    srv = await mock_server(
        faults=(FaultRule(kind, 1, "request", retry_after=RETRY_AFTER_S),), **knobs
    )
    write_items(tmp_path / "items.jsonl", CALLS)
    config = load_config(write_config(tmp_path, srv.base_url, limits=LIMITS))
    result = await run_session(config, command="test", env=ENV)
    lane = result.lanes["m1"]
    assert result.complete and lane.stats.ok == CALLS
    ended, retried, others = _failed_then_retried(config.run_dir, int(kind))
    assert retried >= ended + RETRY_AFTER_S  # the provider's wait, honored for that request
    assert others >= 1  # ... while the lane went on (before: paused, nothing sent)
    assert lane.pause_until == 0.0 and lane.stats.retries == 1


async def test_with_one_slot_the_lane_goes_on_while_its_call_waits(
    tmp_path: Path, mock_server: Any
) -> None:
    # Concurrency 1: the call waiting out its Retry-After lends its slot, so the other calls
    # are sent meanwhile (before, nothing was until its retry), still one request at a time.
    srv = await mock_server(faults=(FaultRule("503", 1, "request", retry_after=RETRY_AFTER_S),))
    write_items(tmp_path / "items.jsonl", CALLS)
    limits = LIMITS.replace("concurrency = 4", "concurrency = 1")
    config = load_config(write_config(tmp_path, srv.base_url, limits=limits))
    result = await run_session(config, command="test", env=ENV)
    assert result.complete and result.lanes["m1"].stats.ok == CALLS
    ended, retried, others = _failed_then_retried(config.run_dir, 503)
    assert retried >= ended + RETRY_AFTER_S
    assert others >= 1
    assert srv.stats()["max_in_flight"] == 1
