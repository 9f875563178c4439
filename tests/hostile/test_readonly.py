"""A finished run on storage nobody may write (an archive, a read-only mount): `status`,
`verify` and `export` read it (the WAL index cannot be created there, so the file is opened
immutable); a ledger whose WAL still holds rows is refused with the reason, never shown stale."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from ledger_hostile_kit import error_lines, offline_cte_sweep, read_only_copy, run_tally

from evaltally.ledger import Ledger
from evaltally.records import PlannedCall, Status, Usage


def test_status_verify_export_read_a_finished_run_on_read_only_storage(tmp_path: Path) -> None:
    code, _, err = run_tally("run", str(offline_cte_sweep(tmp_path)))
    assert code == 0, err

    with read_only_copy(tmp_path / "runs" / "t", tmp_path / "ro") as (run_dir, prefix):
        code, out, err = run_tally("status", str(run_dir), "--json", prefix=prefix)
        assert code == 0, err
        assert '"ok": 120' in out

        code, out, err = run_tally("verify", str(run_dir), prefix=prefix)
        assert code == 0, out + err

        export = tmp_path / "export.jsonl"
        code, out, err = run_tally("export", str(run_dir), "-o", str(export), prefix=prefix)
        assert code == 0, err
        assert len(export.read_text().splitlines()) == 120


async def _unfinished_ledger(run_dir: Path, copy_to: Path) -> None:
    """Copy a ledger's files while it is open: its rows are still in the WAL."""
    call = PlannedCall("c1", "c1", 0, "m", "b", "i", 0, "p", {})
    async with await Ledger.open(run_dir, create=True, command="pytest") as ledger:
        await ledger.reconcile_plan([call])
        ledger.outcome(
            "c1", Status.BLOCKED, raw_text=None, parsed=None, parse_path=None, reason="x",
            request_hash=None, attempts=0, usage=Usage(), latency_ms=None,
        )  # fmt: skip
        await ledger.flush()
        for name in ("ledger.sqlite", "ledger.sqlite-wal"):
            await asyncio.to_thread(shutil.copy, run_dir / name, copy_to / name)


def test_a_wal_with_rows_on_read_only_storage_is_refused(tmp_path: Path) -> None:
    (tmp_path / "copied").mkdir()
    asyncio.run(_unfinished_ledger(tmp_path / "live", tmp_path / "copied"))

    with read_only_copy(tmp_path / "copied", tmp_path / "ro") as (run_dir, prefix):
        code, _, err = run_tally("status", str(run_dir), prefix=prefix)

    assert code == 2, err
    (line,) = error_lines(err)
    assert "its directory is not writable and ledger.sqlite-wal still holds rows" in line, line
    assert "copy the run directory to writable storage" in line, line
