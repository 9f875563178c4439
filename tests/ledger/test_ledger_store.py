"""Ledger store: open, meta, plan reconcile, events and batching, resume queries."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from ledger_testkit import answer, body, calls, new_run

from evaltally.errors import LedgerError, PlanMismatchError
from evaltally.ledger import Ledger, verify_run
from evaltally.ledger import writer as writer_module
from evaltally.ledger.connection import WriteConnection
from evaltally.records import Status


def count(run: Path, table: str) -> int:
    with sqlite3.connect(run / "ledger.sqlite") as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_open_missing_run_names_path_and_command(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match=r"ledger\.sqlite.*tally run"):
        await Ledger.open(tmp_path / "nope", create=False, command="resume")
    assert not (tmp_path / "nope").exists()


async def test_meta_latest_value_wins(tmp_path: Path) -> None:
    async with await Ledger.open(tmp_path / "run", create=True, command="t") as ledger:
        await ledger.set_meta("config", {"a": 1})
        await ledger.set_meta("config", {"a": 2})
        await ledger.set_meta("name", "demo")
        assert await ledger.meta() == {"config": {"a": 2}, "name": "demo"}
    async with await Ledger.open(tmp_path / "run", create=False, command="t") as ledger:
        assert (await ledger.meta())["config"] == {"a": 2}
    assert count(tmp_path / "run", "sessions") == 4  # two sessions: start + end each


async def test_reconcile_identical_extended_and_dropped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    ledger = await new_run(tmp_path, calls(10, 2))
    try:
        delta = await ledger.reconcile_plan(calls(10, 2))
        assert (delta.total, delta.added, delta.already) == (20, 0, 20)
        assert count(run, "planned") == 20
        extended = calls(12, 2) + calls(3, 2, model="m2")
        delta = await ledger.reconcile_plan(iter(extended))  # a generator works too
        assert (delta.total, delta.added, delta.already) == (30, 10, 20)
        assert count(run, "planned") == 30
        with pytest.raises(PlanMismatchError) as err:
            await ledger.reconcile_plan(calls(11, 2))  # drops m2's six calls and chain 11
        msg = str(err.value)
        assert "drops 8 call(s)" in msg and "model=m2" in msg and "item_id=item" in msg
        assert "only grow" in msg
        assert count(run, "planned") == 30  # refused plan changed nothing
        # Plan extension appended in the same transaction as the refusal is rolled back too.
        with pytest.raises(PlanMismatchError):
            await ledger.reconcile_plan(calls(11, 2) + calls(1, 1, model="m9"))
        assert count(run, "planned") == 30
        await ledger.reconcile_plan(extended)  # the ledger is still usable afterwards
    finally:
        await ledger.close()
    assert verify_run(run).ok


async def test_reconcile_refuses_duplicate_ids(tmp_path: Path) -> None:
    plan = calls(3)
    async with await Ledger.open(tmp_path / "run", create=True, command="t") as ledger:
        with pytest.raises(LedgerError, match="more than once"):
            await ledger.reconcile_plan([*plan, plan[0]])
        await ledger.reconcile_plan(plan)
        with pytest.raises(LedgerError, match="more than once"):
            await ledger.reconcile_plan([*plan, plan[1]])
    assert count(tmp_path / "run", "planned") == 3


async def test_many_events_batched_then_flushed(tmp_path: Path) -> None:
    plan = calls(3000)
    async with await new_run(tmp_path, plan) as ledger:
        for c in plan:
            answer(ledger, c.call_id)
        await ledger.flush()
        assert count(tmp_path / "run", "outcomes") == 3000
        assert count(tmp_path / "run", "attempts") == 6000
    report = verify_run(tmp_path / "run")
    assert report.ok, report.violations


async def test_small_batches_commit_on_the_loop_large_ones_on_the_thread_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = calls(400)
    where: list[str] = []
    inline, submit = WriteConnection.inline, WriteConnection.submit

    def on_loop(self: WriteConnection, fn: Any, *args: Any) -> Any:
        where.append("loop")
        return inline(self, fn, *args)

    def on_thread(self: WriteConnection, fn: Any, args: tuple[Any, ...], done: Any) -> None:
        if fn is writer_module.commit_rows:
            where.append("thread")
        submit(self, fn, args, done)

    monkeypatch.setattr(WriteConnection, "inline", on_loop)
    monkeypatch.setattr(WriteConnection, "submit", on_thread)
    async with await new_run(tmp_path, plan) as ledger:
        for c in plan[:100]:  # 300 rows: over INLINE_ROWS
            answer(ledger, c.call_id)
        await ledger.flush()
        for c in plan[100:]:
            answer(ledger, c.call_id)
            await ledger.flush()
    assert where == ["thread"] + ["loop"] * 300
    with sqlite3.connect(tmp_path / "run" / "ledger.sqlite") as conn:
        order = [r[0] for r in conn.execute("SELECT call_id FROM outcomes ORDER BY seq")]
    assert order == [c.call_id for c in plan]
    assert verify_run(tmp_path / "run").ok


async def test_the_wal_is_checkpointed_on_the_thread_while_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "CHECKPOINT_ROWS", 300)
    plan = calls(200)
    path = tmp_path / "run" / "ledger.sqlite"
    async with await new_run(tmp_path, plan) as ledger:
        await ledger.flush()
        before = path.stat().st_size
        for c in plan:
            answer(ledger, c.call_id)
            await ledger.flush()
        await ledger.meta()  # a job on the thread after the checkpoint: it has ended
        # The rows reached the database file itself, not only the WAL, before the run closed.
        assert path.stat().st_size > before
    assert verify_run(tmp_path / "run").ok


async def test_events_after_close_are_refused(tmp_path: Path) -> None:
    ledger = await new_run(tmp_path, calls(1))
    await ledger.close()
    raw, h = body("x")
    with pytest.raises(LedgerError, match="closed"):
        ledger.attempt_started("m1-b1-0000-0", 1, h, raw)


async def test_unserializable_parsed_answer_fails_in_the_caller(tmp_path: Path) -> None:
    async with await new_run(tmp_path, calls(1)) as ledger:
        with pytest.raises(LedgerError, match="not JSON-serializable"):
            ledger.outcome(
                "m1-b1-0000-0", Status.OK, raw_text="x", parsed=object(), parse_path=None,
                reason=None, request_hash=None, attempts=0, usage=None, latency_ms=None,
            )  # fmt: skip


async def test_mark_interrupted_closes_open_attempts_once(tmp_path: Path) -> None:
    plan = calls(3)
    async with await new_run(tmp_path, plan) as ledger:
        answer(ledger, plan[0].call_id)
        assert ledger.open_attempts == 0
        for c in plan[1:]:
            raw, h = body(c.call_id)
            ledger.attempt_started(c.call_id, 1, h, raw)
        # What the end of a session reads to know whether anything it started is still open.
        assert ledger.open_attempts == 2
        await ledger.flush()
    assert not verify_run(tmp_path / "run").ok  # two attempts without an end
    async with await Ledger.open(tmp_path / "run", create=False, command="resume") as ledger:
        assert ledger.open_attempts == 0  # an earlier session's open attempts: only a search
        assert await ledger.mark_interrupted() == 2
        assert await ledger.mark_interrupted() == 0
        chains = await ledger.pending_chains()
        assert {c.chain_id: c.attempts_so_far for c in chains} == {
            plan[1].chain_id: {plan[1].call_id: 1},
            plan[2].chain_id: {plan[2].call_id: 1},
        }
    report = verify_run(tmp_path / "run")
    assert report.ok, report.violations


async def test_pending_chains_with_mixed_outcomes(tmp_path: Path) -> None:
    plan = calls(5, 3)
    by_chain = {c.chain_id: [] for c in plan}
    for c in plan:
        by_chain[c.chain_id].append(c.call_id)
    a, b, c, d, e = (by_chain[k] for k in sorted(by_chain))
    async with await new_run(tmp_path, plan) as ledger:
        for cid in a:  # chain a: all ok -> done
            answer(ledger, cid)
        answer(ledger, b[0])  # chain b: ok, failed after 3 attempts, blocked
        answer(ledger, b[1], Status.FAILED, attempt=3, http=503)
        ledger.outcome(
            b[2], Status.BLOCKED, raw_text=None, parsed=None, parse_path=None,
            reason="earlier call failed", request_hash=None, attempts=0, usage=None,
            latency_ms=None,
        )  # fmt: skip
        answer(ledger, d[0], Status.PARSE_ERROR)  # chain d: parse_error is final
        answer(ledger, d[1])
        answer(ledger, e[0], Status.FAILED)  # chain e: failed, then ok on a later attempt
        answer(ledger, e[0], Status.OK, attempt=2)
        chains = await ledger.pending_chains()
    got = {ch.chain_id: ch for ch in chains}
    assert sorted(got) == sorted([b[0][:-2], c[0][:-2], d[0][:-2], e[0][:-2]])
    pb = got[b[0][:-2]]
    assert [x.call_id for x in pb.calls] == b and [x.step for x in pb.calls] == [0, 1, 2]
    assert list(pb.recorded) == [0]
    assert pb.recorded[0].status is Status.OK and pb.recorded[0].parsed == 42
    assert pb.recorded[0].raw_text == "42" and pb.recorded[0].request_hash == body(b[0])[1]
    assert pb.attempts_so_far == {b[1]: 3}
    assert pb.remaining == 2
    assert got[c[0][:-2]].recorded == {} and got[c[0][:-2]].calls[0].spec == {
        "item": "item2",
        "step": 0,
    }
    pd = got[d[0][:-2]]
    assert pd.recorded[0].status is Status.PARSE_ERROR and sorted(pd.recorded) == [0, 1]
    pe = got[e[0][:-2]]
    assert sorted(pe.recorded) == [0] and pe.attempts_so_far == {}


async def test_a_disk_failure_reaches_the_runner_and_the_lock_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = calls(2)
    ledger = await new_run(tmp_path, plan)

    def broken(*args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    # What runs every batch's transaction, on the event loop or on the connection's thread.
    monkeypatch.setattr(writer_module, "commit_rows", broken)
    answer(ledger, plan[0].call_id)
    with pytest.raises(
        LedgerError, match=r"ledger\.sqlite: could not record events: write error: disk I/O"
    ):
        await ledger.flush()
    with pytest.raises(LedgerError, match="disk I/O"):
        answer(ledger, plan[1].call_id)
    with pytest.raises(LedgerError):
        await ledger.close()
    monkeypatch.undo()
    async with await Ledger.open(tmp_path / "run", create=False, command="resume") as again:
        assert len(await again.pending_chains()) == 2
    assert verify_run(tmp_path / "run").ok
