"""The first attempt runs outside tenacity; a retryable failure hands the call to the retry
machinery. Against a real mock server: the attempts recorded, their numbers, the retries
counter, the give-up reason and the outcome are what one retry loop over every attempt gives."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from evaltally.config import SweepConfig, load_config
from evaltally.mockserver import FaultRule
from evaltally.run.session import SessionResult, run_session
from testkit import FAKE_KEY, write_config, write_items

ENV = {"EVALTALLY_TEST_KEY": FAKE_KEY}
LIMITS = (
    "concurrency = 4\nbackoff_initial_s = 0.01\nbackoff_max_s = 0.05\ntimeout_s = 5\n"
    "max_attempts = {n}\nbreaker_threshold = 1000"
)


def _history(run_dir: Path) -> dict[str, list[tuple[int, str, int | None, str | None]]]:
    """call id -> its attempt rows in ledger order: (attempt, kind, http status, error class)."""
    db = sqlite3.connect(run_dir / "ledger.sqlite")
    out: dict[str, list[tuple[int, str, int | None, str | None]]] = {}
    rows = db.execute(
        "SELECT call_id, attempt, kind, http_status, error_class FROM attempts ORDER BY seq"
    )
    for call_id, attempt, kind, status, error in rows:
        out.setdefault(call_id, []).append((attempt, kind, status, error))
    return out


def _outcomes(run_dir: Path) -> list[tuple[str, int, str | None]]:
    db = sqlite3.connect(run_dir / "ledger.sqlite")
    return db.execute("SELECT status, attempts, reason FROM outcomes ORDER BY seq").fetchall()


async def _run(
    tmp_path: Path, mock_server: Any, faults: tuple[FaultRule, ...], items: int, max_attempts: int
) -> tuple[Any, SweepConfig, SessionResult]:
    srv = await mock_server(faults=faults, retry_after_s=None)
    write_items(tmp_path / "items.jsonl", items)
    limits = LIMITS.format(n=max_attempts)
    config = load_config(write_config(tmp_path, srv.base_url, limits=limits))
    return srv, config, await run_session(config, command="test", env=ENV)


async def test_failures_then_an_answer_record_every_attempt(
    tmp_path: Path, mock_server: Any
) -> None:
    # Attempt 1 of every body -> 503, attempt 2 -> 429, attempt 3 -> the answer.
    faults = (FaultRule("503", 1, "body"), FaultRule("429", 1, "body", retry_after=0.01))
    srv, config, result = await _run(tmp_path, mock_server, faults, 5, 6)
    stats = result.lanes["m1"].stats
    assert result.complete and (stats.ok, stats.attempts, stats.retries) == (5, 15, 10)
    history = _history(config.run_dir)
    assert len(history) == 5
    for rows in history.values():
        assert rows == [
            (1, "start", None, None),
            (1, "end", 503, "http_503"),
            (2, "start", None, None),
            (2, "end", 429, "http_429"),
            (3, "start", None, None),
            (3, "end", 200, None),
        ]
    assert _outcomes(config.run_dir) == [("ok", 3, None)] * 5
    assert srv.stats()["total"] == 15


async def test_an_answer_at_once_records_one_attempt(tmp_path: Path, mock_server: Any) -> None:
    _, config, result = await _run(tmp_path, mock_server, (), 3, 6)
    assert result.complete and result.lanes["m1"].stats.retries == 0
    for rows in _history(config.run_dir).values():
        assert rows == [(1, "start", None, None), (1, "end", 200, None)]
    assert _outcomes(config.run_dir) == [("ok", 1, None)] * 3


async def test_one_attempt_allowed_gives_up_after_the_first_failure(
    tmp_path: Path, mock_server: Any
) -> None:
    srv, config, result = await _run(tmp_path, mock_server, (FaultRule("503", 1, "body"),), 2, 1)
    stats = result.lanes["m1"].stats
    assert (stats.failed, stats.attempts, stats.retries) == (2, 2, 0)
    for rows in _history(config.run_dir).values():
        assert rows == [(1, "start", None, None), (1, "end", 503, "http_503")]
    for status, attempts, reason in _outcomes(config.run_dir):
        assert (status, attempts) == ("failed", 1)
        assert reason is not None and reason.startswith("gave up after 1 attempts; last: http_503")
    assert srv.stats()["total"] == 2


async def test_retries_stop_at_max_attempts_then_resume_numbers_on(
    tmp_path: Path, mock_server: Any
) -> None:
    _, config, first = await _run(tmp_path, mock_server, (FaultRule("503", 3, "body"),), 1, 2)
    assert first.lanes["m1"].stats.failed == 1 and first.lanes["m1"].stats.retries == 1
    (reason,) = [r for s, _, r in _outcomes(config.run_dir) if s == "failed"]
    assert reason is not None and reason.startswith("gave up after 2 attempts; last: http_503")
    # The body's third attempt still fails, its fourth is answered: resume continues the
    # numbering (3, 4) and its first attempt of the session fails over to the retry path.
    second = await run_session(config, command="test", env=ENV)
    assert second.complete and second.lanes["m1"].stats.retries == 1
    (rows,) = _history(config.run_dir).values()
    assert [(a, k, s) for a, k, s, _ in rows if k == "end"] == [
        (1, "end", 503),
        (2, "end", 503),
        (3, "end", 503),
        (4, "end", 200),
    ]
    assert _outcomes(config.run_dir)[-1] == ("ok", 2, None)
