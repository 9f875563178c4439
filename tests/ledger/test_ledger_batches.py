"""The batch tables: an open batch's lines survive a resume untouched, `verify` checks the
batch invariants, and status shows batches and rounds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ledger_testkit import answer_in_batch, body, calls, finish, new_run

from evaltally.ledger import Ledger, run_status, verify_run
from evaltally.ledger.schema import MIGRATIONS


async def test_open_batch_lines_are_not_interrupted_and_resume_reads_them(tmp_path: Path) -> None:
    plan = calls(3)
    ids = [c.call_id for c in plan]
    async with await new_run(tmp_path, plan) as ledger:
        book = ledger.batch_book()
        book.planned("b1", "m1", 1, "openai", [(c, 1) for c in ids], b"x")
        for c in ids:
            raw, h = body(c)
            ledger.attempt_started(c, 1, h, raw)
        book.event("b1", "created", provider_id="batch_1")
        finish(ledger, ids[0])
        await ledger.flush()
    # A new session: the batch is still open, so its two unread lines are not interrupted.
    async with await Ledger.open(tmp_path / "run", create=False, command="resume") as ledger:
        assert await ledger.mark_interrupted() == 0
        (open_batch,) = await ledger.batch_book().open_batches("m1")
        assert open_batch.provider_id == "batch_1" and open_batch.ended == {ids[0]}
        assert [c for c, _, _ in open_batch.members] == ids
    report = verify_run(tmp_path / "run")
    assert report.ok, report.violations
    assert run_status(tmp_path / "run").batches[0]["state"] == "planned"


async def test_verify_names_a_call_sent_in_a_second_batch_while_the_first_was_open(
    tmp_path: Path,
) -> None:
    plan = calls(2)
    ids = [c.call_id for c in plan]
    async with await new_run(tmp_path, plan) as ledger:
        book = ledger.batch_book()
        book.planned("first", "m1", 1, "openai", [(ids[0], 1)], b"x")
        raw, h = body(ids[0])
        ledger.attempt_started(ids[0], 1, h, raw)
        answer_in_batch(ledger, ids, key="second")
        await ledger.flush()
    problems = verify_run(tmp_path / "run").violations
    assert any("put in batch second while batch first" in p for p in problems), problems


async def test_verify_names_a_closed_batch_with_an_unread_line(tmp_path: Path) -> None:
    plan = calls(1)
    (call_id,) = [c.call_id for c in plan]
    async with await new_run(tmp_path, plan) as ledger:
        book = ledger.batch_book()
        book.planned("b1", "m1", 1, "openai", [(call_id, 1)], b"x")
        raw, h = body(call_id)
        ledger.attempt_started(call_id, 1, h, raw)
        book.event("b1", "closed", state="completed")
        await ledger.flush()
    problems = verify_run(tmp_path / "run").violations
    assert any("batch b1 is closed" in p for p in problems), problems


async def test_status_shows_rounds_with_the_share_answered(tmp_path: Path) -> None:
    plan = calls(4)
    ids = [c.call_id for c in plan]
    async with await new_run(tmp_path, plan) as ledger:
        answer_in_batch(ledger, ids[:3], key="r1")
        await ledger.flush()
    st = run_status(tmp_path / "run")
    (rnd,) = st.rounds
    assert (rnd["model"], rnd["round"], rnd["requests"], rnd["answered"]) == ("m1", 1, 3, 3)
    assert rnd["answered_share"] == 1.0 and not rnd["open"]
    assert st.batches[0]["provider_id"] == "batch_test" and st.batches[0]["closed"]


async def test_a_new_ledger_records_the_batch_submissions_migration(tmp_path: Path) -> None:
    async with await new_run(tmp_path, calls(1)):
        pass
    db = tmp_path / "run" / "ledger.sqlite"
    conn = sqlite3.connect(db)
    rows = list(conn.execute("SELECT version, name FROM migrations ORDER BY version"))
    conn.close()
    assert rows == [(m.version, m.name) for m in MIGRATIONS]
    assert rows[-1] == (3, "batch submissions")
