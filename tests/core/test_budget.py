"""--budget stops sending new calls once the priced spend is reached; resume continues."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from testkit import tally, write_config, write_items


def test_budget_blocks_the_rest_and_resume_with_more_budget_finishes(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process()
    write_items(tmp_path / "items.jsonl", 10)
    # A price so high that every call costs about a dollar.
    extra = "price = { input_per_mtok = 100000.0, output_per_mtok = 100000.0 }\n"
    config = write_config(tmp_path, mock.base_url, extra_model=extra, limits="concurrency = 1")
    run_dir = tmp_path / "runs" / "t"

    first = tally("run", str(config), "--budget", "3")
    assert first.returncode == 3, first.stderr
    sent = mock.stats()["total"]
    assert 1 <= sent < 10
    db = sqlite3.connect(run_dir / "ledger.sqlite")
    reasons = [r for (r,) in db.execute("SELECT reason FROM outcomes WHERE status = 'blocked'")]
    assert len(reasons) == 10 - sent
    assert all("budget of $3.00 reached" in r for r in reasons)

    still_short = tally("resume", str(run_dir), "--budget", "3")
    assert still_short.returncode == 3 and mock.stats()["total"] == sent
    second = tally("resume", str(run_dir), "--budget", "1000")
    assert second.returncode == 0, second.stderr
    assert mock.stats()["total"] == 10
