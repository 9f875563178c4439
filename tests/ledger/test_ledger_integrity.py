"""Append-only enforcement, tamper detection by `verify`, and refusal of bad files."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from ledger_testkit import answer, answer_in_batch, body, calls, new_run

from evaltally.errors import LedgerError
from evaltally.ledger import Ledger, export_run, run_status, verify_run
from evaltally.ledger.schema import LEDGER_TABLES
from evaltally.records import Status


async def finished_run(tmp_path: Path) -> Path:
    plan = calls(4, 2)
    async with await new_run(tmp_path, plan) as ledger:
        await ledger.set_meta("config", {"name": "t"})
        for c in plan[:6]:
            answer(ledger, c.call_id)
        ledger.verification(plan[0].call_id, "passed", detail=None, reason=None, verifier="t")
        answer_in_batch(ledger, [c.call_id for c in plan[6:]])
        await ledger.flush()
    return tmp_path / "run"


def raw(run: Path) -> sqlite3.Connection:
    return sqlite3.connect(run / "ledger.sqlite", isolation_level=None)


def messages(run: Path) -> list[str]:
    return verify_run(run).violations


@pytest.mark.parametrize("table", LEDGER_TABLES)
async def test_update_and_delete_are_refused_by_the_database(tmp_path: Path, table: str) -> None:
    run = await finished_run(tmp_path)
    conn = raw(run)
    key = "version" if table == "migrations" else "seq"
    with pytest.raises(sqlite3.DatabaseError, match="append-only: UPDATE refused"):
        conn.execute(f"UPDATE {table} SET {key} = {key} + 1000")
    with pytest.raises(sqlite3.DatabaseError, match="append-only: DELETE refused"):
        conn.execute(f"DELETE FROM {table}")
    conn.close()
    assert verify_run(run).ok


async def test_verify_passes_a_clean_run(tmp_path: Path) -> None:
    report = verify_run(await finished_run(tmp_path))
    assert report.ok, report.violations
    assert report.live is None and any("newest checkpoint" in n for n in report.notes)


async def test_verify_catches_an_edited_row(tmp_path: Path) -> None:
    run = await finished_run(tmp_path)
    conn = raw(run)
    conn.execute("DROP TRIGGER outcomes_no_update")
    call_id = conn.execute("SELECT call_id FROM outcomes WHERE seq = 3").fetchone()[0]
    conn.execute("UPDATE outcomes SET raw_text = '41', parsed_json = '41' WHERE seq = 3")
    conn.close()
    found = messages(run)
    assert any("trigger outcomes_no_update is missing" in m for m in found)
    assert (
        f"outcomes seq 3 (call {call_id[:8]}…): row_hash does not match its content — "
        "the row was edited"
    ) in "\n".join(found)


async def test_verify_catches_a_rehashed_edit_at_the_next_row(tmp_path: Path) -> None:
    from evaltally.ledger.chain import row_hash
    from evaltally.ledger.schema import BLOB_POSITIONS, HASHED_COLUMNS

    run = await finished_run(tmp_path)
    conn = raw(run)
    conn.execute("DROP TRIGGER outcomes_no_update")
    conn.execute("UPDATE outcomes SET raw_text = 'forged' WHERE seq = 2")
    cols = ", ".join(HASHED_COLUMNS["outcomes"])
    values = conn.execute(f"SELECT {cols} FROM outcomes WHERE seq = 2").fetchone()
    prev = conn.execute("SELECT row_hash FROM outcomes WHERE seq = 1").fetchone()[0]
    forged = row_hash(prev, values, BLOB_POSITIONS["outcomes"])
    conn.execute("UPDATE outcomes SET row_hash = ? WHERE seq = 2", (forged,))
    conn.close()
    found = messages(run)
    chain = [m for m in found if "row_hash" in m]
    assert any("outcomes seq 3" in m for m in chain), found
    assert not any("outcomes seq 2 " in m for m in chain), found
    # The edited text itself is caught by the answer cross-check, not the chain.
    assert any(m.startswith("outcomes seq 2 ") and "raw_text is not" in m for m in found)


async def test_verify_catches_a_deleted_row(tmp_path: Path) -> None:
    run = await finished_run(tmp_path)
    conn = raw(run)
    conn.execute("DROP TRIGGER attempts_no_delete")
    conn.execute("DELETE FROM attempts WHERE seq = 4")
    conn.close()
    found = messages(run)
    assert "attempts: seq 4 missing before seq 5 — row(s) were deleted" in "\n".join(found)


async def test_verify_catches_deleted_newest_rows_down_to_the_checkpoint(tmp_path: Path) -> None:
    run = await finished_run(tmp_path)
    conn = raw(run)
    conn.execute("DROP TRIGGER outcomes_no_delete")
    conn.execute("DELETE FROM outcomes WHERE seq = (SELECT max(seq) FROM outcomes)")
    conn.execute("DROP TRIGGER planned_no_delete")
    conn.execute("DELETE FROM planned WHERE seq = (SELECT max(seq) FROM planned)")
    conn.close()
    found = "\n".join(messages(run))
    assert "outcomes: checkpoint" in found and "the newest rows were deleted" in found
    assert "plan fingerprint records 8 calls" in found and "planned holds 7" in found


async def test_verify_checks_references_finals_and_request_hashes(tmp_path: Path) -> None:
    plan = calls(3)
    run = tmp_path / "run"
    async with await new_run(tmp_path, plan) as ledger:
        answer(ledger, plan[0].call_id)
        raw_body, h = body(plan[0].call_id)
        ledger.attempt_started(plan[0].call_id, 2, h, raw_body)  # re-sent after a final answer
        ledger.attempt_finished(
            plan[0].call_id, 2, http_status=200, error_class=None, error_detail=None,
            retry_after_s=None, response_body=b"{}", usage=None, latency_ms=1.0,
            request_id=None,
        )  # fmt: skip
        answer(ledger, "never-planned")
        ledger.attempt_started(plan[1].call_id, 1, "0" * 64, b"{}")  # hash of another body
        ledger.attempt_finished(
            plan[1].call_id, 1, http_status=500, error_class="http_500", error_detail="x",
            retry_after_s=2, response_body=None, usage=None, latency_ms=3, request_id=None,
        )  # fmt: skip
        ledger.outcome(
            plan[2].call_id, Status.OK, raw_text="1", parsed=1, parse_path="json", reason=None,
            request_hash="f" * 64, attempts=0, usage=None, latency_ms=None,
        )  # fmt: skip
    found = "\n".join(messages(run))
    assert "attempt started after the call's final outcome" in found
    assert "refers to a call that was never planned" in found
    assert "request_hash is not the sha256 of the recorded request body" in found
    assert "request_hash matches no recorded request body of this call" in found


async def test_verify_reports_a_live_run_instead_of_open_attempts(tmp_path: Path) -> None:
    plan = calls(1)
    async with await new_run(tmp_path, plan) as ledger:
        raw_body, h = body(plan[0].call_id)
        ledger.attempt_started(plan[0].call_id, 1, h, raw_body)
        await ledger.flush()
        report = verify_run(tmp_path / "run")
        assert report.ok and report.live is not None and "pid" in report.live
        assert any("the run is live" in n for n in report.notes)
        ledger.attempt_finished(
            plan[0].call_id, 1, http_status=200, error_class=None, error_detail=None,
            retry_after_s=None, response_body=b"{}", usage=None, latency_ms=1.0,
            request_id=None,
        )  # fmt: skip
    assert verify_run(tmp_path / "run").ok


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_file_that_is_not_sqlite_is_refused_and_left_intact(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    bad = run / "ledger.sqlite"
    bad.write_bytes(b"not a database at all\n" * 50)
    before = digest(bad)
    with pytest.raises(LedgerError, match=r"ledger\.sqlite is not an SQLite database"):
        await Ledger.open(run, create=False, command="resume")
    with pytest.raises(LedgerError, match="not an SQLite database"):
        await Ledger.open(run, create=True, command="run")
    for read in (run_status, verify_run):
        with pytest.raises(LedgerError, match=str(bad)):
            read(run)
    with pytest.raises(LedgerError, match=str(bad)):
        export_run(run, tmp_path / "out.jsonl")
    assert digest(bad) == before and sorted(p.name for p in run.iterdir()) == [
        ".lock",
        "ledger.sqlite",
    ]


async def test_a_truncated_ledger_is_refused_and_left_intact(tmp_path: Path) -> None:
    plan = calls(2000)
    async with await new_run(tmp_path, plan) as ledger:
        for c in plan[:500]:
            answer(ledger, c.call_id)
    path = tmp_path / "run" / "ledger.sqlite"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before = digest(path)
    with pytest.raises(LedgerError, match=rf"{path} is truncated"):
        await Ledger.open(tmp_path / "run", create=False, command="resume")
    with pytest.raises(LedgerError, match="truncated"):
        verify_run(tmp_path / "run")
    assert digest(path) == before


async def test_an_sqlite_file_that_is_not_a_ledger_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with sqlite3.connect(run / "ledger.sqlite") as conn:
        conn.execute("CREATE TABLE notes (x)")
    conn.close()
    with pytest.raises(LedgerError, match="not an evaltally ledger"):
        await Ledger.open(run, create=False, command="resume")
    with pytest.raises(LedgerError, match="not an evaltally ledger"):
        run_status(run)
