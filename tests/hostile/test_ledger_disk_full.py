"""A full disk while the ledger is written: one line that says so, a process that ends, a writer
whose hash chain never runs ahead of the file, and a run that resumes to a verified ledger.

The end-to-end cases fill a real filesystem (see ledger_hostile_kit.SmallDisk); the in-process
cases give SQLite a page limit (PRAGMA max_page_count), which fails the commit with a genuine
SQLITE_FULL ("database or disk is full") from a real database file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from ledger_hostile_kit import (
    count_rows,
    error_lines,
    finish,
    interrupt_run,
    prompts_sweep,
    run_tally,
    small_disk,
    tally_proc,
)

from evaltally.errors import LedgerWriteError
from evaltally.ledger import Ledger, verify_run
from evaltally.records import PlannedCall, Status, Usage


def assert_one_line_about_the_disk(stderr: str, phrase: str, run_dir: Path) -> None:
    assert "Traceback" not in stderr, stderr
    errors = error_lines(stderr)
    assert len(errors) == 1, stderr
    line = errors[0]
    assert phrase in line and " free" in line, line
    assert line.endswith(f"then `tally resume {run_dir}`"), line


def test_disk_full_while_the_plan_is_written(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    with small_disk(tmp_path / "disk") as disk:
        runs = disk.root / "runs"
        config = prompts_sweep(tmp_path / "cfg", mock.base_url, 1500, runs_dir=runs)
        run_dir = runs / "t"
        disk.leave_free(320_000)  # room for the ledger's tables, not for 1,500 planned calls

        code, _, stderr = finish(tally_proc("run", str(config), **disk.popen_options()))

        assert code == 3, stderr
        assert_one_line_about_the_disk(stderr, disk.full_phrase, run_dir)
        assert mock.stats()["total"] == 0
        # The failed plan left neither rows nor a checkpoint naming rows that never existed.
        code, out, err = run_tally("verify", str(run_dir))
        assert code in (0, 5) and "violation" not in err, out + err

        disk.free()
        code, _, stderr = run_tally("resume", str(run_dir))
        assert code == 0, stderr
        assert mock.stats()["total"] == 1500
        code, out, err = run_tally("verify", str(run_dir))
        assert code == 0, out + err


def test_disk_full_during_the_run_ends_the_process(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--latency-ms", "20")
    with small_disk(tmp_path / "disk") as disk:
        runs = disk.root / "runs"
        config = prompts_sweep(
            tmp_path / "cfg", mock.base_url, 400, runs_dir=runs, limits="concurrency = 4"
        )
        run_dir = runs / "t"
        db = run_dir / "ledger.sqlite"
        code, _, stderr = interrupt_run(  # before the fix it never exited
            "run",
            str(config),
            until=lambda: count_rows(db, "SELECT count(*) FROM outcomes") >= 20,
            what="answers",
            act=lambda proc: disk.fill_now(proc.pid),
        )

        assert code == 3, stderr
        assert_one_line_about_the_disk(stderr, disk.full_phrase, run_dir)
        sent = mock.stats()["total"]
        assert sent < 400, "the disk filled after the run had finished"
        code, _, err = run_tally("verify", str(run_dir))
        assert code == 5 and "violation" not in err, err  # interrupted, not tampered

        disk.free()
        code, _, stderr = run_tally("resume", str(run_dir))
        assert code == 0, stderr
        code, out, err = run_tally("verify", str(run_dir))
        assert code == 0, out + err
        code, out, err = run_tally("status", str(run_dir), "--json")
        assert code == 0 and '"ok": 400' in out, err


# -- the writer, in process, against SQLite's own SQLITE_FULL ---------------------------------


def planned(n: int) -> list[PlannedCall]:
    return [
        PlannedCall(f"call{i:04d}", f"chain{i:04d}", 0, "m", "b", f"item{i}", 0, "p", {"i": i})
        for i in range(n)
    ]


async def cap_pages(ledger: Ledger) -> None:
    """No page beyond those the file has now: the next commit that needs one fails."""
    db = ledger._writer.db
    (pages,) = (await db.query("PRAGMA page_count"))[0]
    await db.execute(f"PRAGMA max_page_count = {pages}")


def writer_state(ledger: Ledger) -> tuple[dict[str, int], dict[str, str], int]:
    w = ledger._writer
    return dict(w.seqs), dict(w.heads), w.ev


async def test_a_failed_commit_leaves_the_writer_as_the_file_is(tmp_path: Path) -> None:
    ledger = await Ledger.open(tmp_path / "run", create=True, command="pytest")
    await ledger.reconcile_plan(planned(50))
    before = writer_state(ledger)
    await cap_pages(ledger)
    for i in range(50):  # incompressible bodies: the batch needs new pages
        body = bytes(range(256)) * 40 + i.to_bytes(4, "big")
        ledger.attempt_started(f"call{i:04d}", 1, "0" * 64, body)
    with pytest.raises(LedgerWriteError, match="the disk is full"):
        await ledger.flush()
    assert writer_state(ledger) == before
    assert not ledger.healthy
    with pytest.raises(LedgerWriteError):
        await ledger.close()  # closes the connection and the lock even so

    report = verify_run(tmp_path / "run")
    assert not report.violations, report.violations
    assert report.verdict == "interrupted"  # the session has no end row: resume closes it
    async with await Ledger.open(tmp_path / "run", create=False, command="resume") as again:
        again.outcome(
            "call0000", Status.BLOCKED, raw_text=None, parsed=None, parse_path=None,
            reason="test", request_hash=None, attempts=0, usage=Usage(), latency_ms=None,
        )  # fmt: skip
    report = verify_run(tmp_path / "run")
    assert report.ok, report.violations + report.interruptions


async def test_a_failed_plan_write_leaves_no_checkpoint_of_missing_rows(tmp_path: Path) -> None:
    ledger = await Ledger.open(tmp_path / "run", create=True, command="pytest")
    before = writer_state(ledger)
    await cap_pages(ledger)
    with pytest.raises(LedgerWriteError, match="could not record the plan: the disk is full"):
        await ledger.reconcile_plan(planned(3000))
    assert writer_state(ledger) == before
    await ledger.close()  # the plan failed, the ledger did not: a clean close

    report = verify_run(tmp_path / "run")
    assert report.ok, report.violations + report.interruptions
    conn = sqlite3.connect(tmp_path / "run" / "ledger.sqlite")
    assert conn.execute("SELECT count(*) FROM planned").fetchone()[0] == 0
    conn.close()
