"""Provider faults against a real mock server: every call still ends ok within its retry
budget, and the ledger shows every failed attempt."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from evaltally.config import load_config
from evaltally.ledger import unpack_body
from evaltally.mockserver import FaultRule
from evaltally.run.session import run_session
from evaltally.runner.clock import VirtualClock
from testkit import FAKE_KEY, tally, write_config, write_items

ENV = {"EVALTALLY_TEST_KEY": FAKE_KEY}
FAST = (
    "concurrency = 8\nbackoff_initial_s = 0.02\nbackoff_max_s = 0.2\ntimeout_s = 0.5\n"
    "max_attempts = 6\nbreaker_threshold = 1000"
)


def _attempt_errors(run_dir: Path) -> list[str | None]:
    db = sqlite3.connect(run_dir / "ledger.sqlite")
    rows = db.execute("SELECT error_class FROM attempts WHERE kind = 'end'").fetchall()
    return [r[0] for r in rows]


async def test_every_fault_kind_then_success(tmp_path: Path, mock_server: Any) -> None:
    schedule = (
        FaultRule("429", 1, "body", retry_after=0.1),
        FaultRule("503", 1, "body"),
        FaultRule("drop", 1, "body"),
        FaultRule("hang", 1, "body"),
        FaultRule("truncated", 1, "body"),
    )
    srv = await mock_server(faults=schedule, hang_s=3.0, retry_after_s=None)
    write_items(tmp_path / "items.jsonl", 12)
    config = load_config(write_config(tmp_path, srv.base_url, limits=FAST))
    # Backoff, 429 pauses and pacing wait on a virtual clock: what the run does, not how long
    # (the hang still meets the client's real 0.5 s timeout).
    clock = VirtualClock()
    result = await run_session(
        config, command="test", env=ENV, clock=clock.monotonic, sleep=clock.sleep
    )
    assert result.complete
    stats = result.lanes["m1"].stats
    assert (stats.ok, stats.failed) == (12, 0)
    errors = _attempt_errors(config.run_dir)
    assert len(errors) == 12 * 6
    by_class: dict[str | None, int] = {}
    for e in errors:
        by_class[e] = by_class.get(e, 0) + 1
    assert by_class[None] == 12
    assert by_class["http_429"] == 12 and by_class["http_503"] == 12
    assert by_class["timeout"] == 12 and by_class["bad_body"] == 12
    assert (
        sum(
            v
            for k, v in by_class.items()
            if k not in {None, "http_429", "http_503", "timeout", "bad_body"}
        )
        == 12
    )


async def test_429_storm_is_absorbed(tmp_path: Path, mock_server: Any) -> None:
    srv = await mock_server(error_429_rate=0.5, retry_after_s=0.05, seed=11)
    write_items(tmp_path / "items.jsonl", 30)
    limits = FAST.replace("max_attempts = 6", "max_attempts = 12")
    config = load_config(write_config(tmp_path, srv.base_url, limits=limits))
    clock = VirtualClock()
    result = await run_session(
        config, command="test", env=ENV, clock=clock.monotonic, sleep=clock.sleep
    )
    assert result.complete and result.lanes["m1"].stats.ok == 30
    errors = _attempt_errors(config.run_dir)
    n429 = sum(1 for e in errors if e == "http_429")
    assert n429 == srv.stats()["by_status"].get("429", 0) > 5
    assert result.lanes["m1"].stats.rate_limited == n429


async def test_outage_exhausts_retries_then_resume_finishes(
    tmp_path: Path, mock_server: Any
) -> None:
    srv = await mock_server(error_503_rate=1.0, retry_after_s=None)
    write_items(tmp_path / "items.jsonl", 4)
    write_items(tmp_path / "chains.jsonl", 2, turns=3)
    path = write_config(
        tmp_path, srv.base_url, limits=FAST.replace("max_attempts = 6", "max_attempts = 2")
    )
    path.write_text(
        path.read_text()
        + '\n[[benchmarks]]\nkind = "prompts"\nname = "ch"\npath = "chains.jsonl"\n'
    )
    config = load_config(path)
    first = await run_session(config, command="test", env=ENV)
    s = first.lanes["m1"].stats
    assert not first.complete
    assert (s.failed, s.blocked) == (6, 4)  # chains: step 0 failed, steps 1-2 blocked
    srv.update(error_503_rate=0.0)
    second = await run_session(config, command="test", env=ENV)
    assert second.complete and second.lanes["m1"].stats.ok == 10


def test_a_provider_answering_html_fails_the_call_by_name(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process("--fault", "html:100")
    write_items(tmp_path / "items.jsonl", 2)
    limits = FAST.replace("max_attempts = 6", "max_attempts = 2")
    config = write_config(tmp_path, mock.base_url, limits=limits)
    result = tally("run", str(config))
    assert result.returncode == 3
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 2
    assert all("item 'q" in line and "bad_body" in line for line in failed)
    assert "tally resume" in result.stderr
    db = sqlite3.connect(tmp_path / "runs" / "t" / "ledger.sqlite")
    bodies = [
        unpack_body(b)
        for (b,) in db.execute("SELECT response_body FROM attempts WHERE kind = 'end'")
    ]
    assert len(bodies) == 4 and all(b.lstrip().startswith(b"<") for b in bodies)
