"""kill -9 a real `tally run` subprocess in batch mode at each point of a batch's life, then
`tally resume`: the same export as the synchronous sweep, and the mock provider's counters show
no call answered twice (every batch the killed run created was found again, not resubmitted)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from batch_kit import CTE_TWO, answered_bodies, batch_sweep, export_rows, run

from evaltally.mockserver import MockConfig, MockServer
from testkit import FAKE_KEY, MockProcess, tally

MOCK = (
    "[mock]\nbatch_validating_s = 0.01\nbatch_in_progress_s = {running}\n"
    "batch_finalizing_s = 0.01\nbatch_latency_s = {latency}\n"
)
Phases = dict[str, set[str]]
"""batch key -> the kinds of its recorded events."""


def _phases(db: Path) -> Phases:
    if not db.exists():
        return {}
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT batch_key, kind FROM batch_events").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return {}
    out: Phases = {}
    for key, kind in rows:
        out.setdefault(key, set()).add(kind)
    return out


def _waiting(kind: str, before: str, models: int = 3) -> Callable[[Phases], bool]:
    """`models` models have a batch that recorded `kind` and not yet `before`."""
    return lambda phases: sum(1 for p in phases.values() if kind in p and before not in p) >= models


POINTS = {
    # (mock: seconds in progress, answer latency), the ledger state to kill at, and how long to
    # wait after it (the creates reach the mock, whose answers stay 1 s late)
    "before_upload": ((0.03, 1.0), _waiting("planned", "uploaded"), 0.0),
    "after_upload_before_create": ((0.03, 2.0), _waiting("creating", "created"), 0.3),
    "while_the_batch_runs": ((3.0, 0.0), _waiting("created", "downloading"), 0.0),
    # (the models' downloads do not overlap: Anthropic and Gemini have no upload step)
    "while_results_download": ((0.03, 1.0), _waiting("downloading", "closed", 1), 0.0),
}


@pytest.fixture(scope="module")
def sync_export(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The synchronous sweep's export (answers depend only on the mock's seed and the body)."""
    tmp = tmp_path_factory.mktemp("sync")

    async def go() -> None:
        async with MockServer(MockConfig()) as srv:
            config = batch_sweep(
                tmp / "s.toml", srv.base_url, name="sync", mode="sync", benchmark=CTE_TWO
            )
            assert (await run(config)).complete

    asyncio.run(go())
    return export_rows(tmp / "runs" / "sync")


def _control(mock: MockProcess, **knobs: Any) -> None:
    request = urllib.request.Request(
        mock.base_url + "/control", data=orjson.dumps(knobs), method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as resp:
        assert resp.status == 200


@pytest.mark.parametrize("point", list(POINTS))
def test_kill_at_each_point_of_a_batch_then_resume_is_exact(
    tmp_path: Path, mock_process: Any, sync_export: list[dict[str, Any]], point: str
) -> None:
    (running, latency), reached, settle = POINTS[point]
    mock_toml = tmp_path / "mock.toml"
    mock_toml.write_text(MOCK.format(running=running, latency=latency))
    mock = mock_process("--config", str(mock_toml))
    config = batch_sweep(
        tmp_path / "b.toml", mock.base_url, name="killed", mode="batch", benchmark=CTE_TWO
    )
    run_dir = tmp_path / "runs" / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evaltally", "run", str(config)],
        env={**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # The three models' batches reach a point together in some round, not always the first: on
    # a loaded 2-core machine that took longer than 60 s once in a full suite.
    deadline = time.monotonic() + 150
    seen = False
    while not seen and proc.poll() is None and time.monotonic() < deadline:
        seen = reached(_phases(run_dir / "ledger.sqlite"))
        time.sleep(settle if seen else 0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert seen, f"the run never reached {point}"

    _control(mock, batch_latency_s=0.0, batch_in_progress_s=0.03)
    resumed = tally("resume", str(run_dir), timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert export_rows(run_dir) == sync_export
    assert mock.stats()["batch"]["answered_by_body"] == answered_bodies(run_dir)
    verified = tally("verify", str(run_dir))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    if point == "after_upload_before_create":
        conn = sqlite3.connect(run_dir / "ledger.sqlite")
        found = conn.execute(
            "SELECT count(*) FROM batch_events WHERE kind = 'created' AND detail LIKE 'found%'"
        ).fetchone()[0]
        conn.close()
        # Each batch the mock created is one batch of the ledger: the ones the killed run
        # never recorded as created were found again, none was created a second time.
        recorded = sum(1 for p in _phases(run_dir / "ledger.sqlite").values() if "created" in p)
        assert found >= 1 and mock.stats()["batch"]["created"] == recorded
