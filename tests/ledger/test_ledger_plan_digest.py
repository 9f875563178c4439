"""record_plan: a resume whose plan is the one recorded last is checked by its digest alone; any
other plan is reconciled call by call, and a changed one is refused exactly as before. What
remains per model is the plan's recorded totals less what the outcomes show done."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from ledger_testkit import answer, calls, new_run

from evaltally.errors import PlanMismatchError
from evaltally.ledger import Ledger, PendingCount, PlanDelta, plan_fingerprint, verify_run
from evaltally.ledger.pending import count_pending
from evaltally.ledger.plan import planned_row
from evaltally.records import PlannedCall, PlannedRow, Status


class Planner:
    """A replayable plan that counts how often it was produced."""

    def __init__(self, plan: list[PlannedCall]) -> None:
        self.plan = plan
        self.passes = 0

    def __call__(self) -> Iterable[PlannedRow]:
        self.passes += 1
        return map(planned_row, self.plan)


def plan_entries(run: Path) -> int:
    with sqlite3.connect(run / "ledger.sqlite") as conn:
        return int(conn.execute("SELECT count(*) FROM meta WHERE key = 'plan'").fetchone()[0])


def planned(run: Path) -> int:
    with sqlite3.connect(run / "ledger.sqlite") as conn:
        return int(conn.execute("SELECT count(*) FROM planned").fetchone()[0])


async def record(run: Path, plan: list[PlannedCall]) -> tuple[PlanDelta, int]:
    """One session recording `plan`: its delta and how many passes over the plan it took."""
    planner = Planner(plan)
    async with await Ledger.open(run, create=True, command="resume") as ledger:
        delta = await ledger.record_plan(planner)
    return delta, planner.passes


def base() -> list[PlannedCall]:
    return calls(20, 3) + calls(5, 2, model="m2")


async def test_an_unchanged_plan_is_checked_by_its_digest(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert await record(run, base()) == (PlanDelta(70, 70, 0), 1)
    assert await record(run, base()) == (PlanDelta(70, 0, 70), 1)
    assert plan_entries(run) == 1  # the entry the first reconcile wrote still describes it
    grown = base() + calls(2, 1, model="m3")
    # A larger plan stops the digest pass and is reconciled call by call.
    assert await record(run, grown) == (PlanDelta(72, 2, 70), 2)
    assert await record(run, grown) == (PlanDelta(72, 0, 72), 1)
    assert plan_entries(run) == 2
    assert verify_run(run).ok


async def test_a_changed_plan_of_the_same_size_is_still_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    await record(run, base())
    changed = base()
    changed[7] = dataclasses.replace(changed[7], call_id="edited-item")
    with pytest.raises(PlanMismatchError, match=r"drops 1 call\(s\)"):
        await record(run, changed)
    assert planned(run) == 70 and plan_entries(run) == 1
    # The same calls in another order: reconciled call by call (nothing added), then known.
    reordered = base()[::-1]
    assert await record(run, reordered) == (PlanDelta(70, 0, 70), 2)
    assert await record(run, reordered) == (PlanDelta(70, 0, 70), 1)
    assert verify_run(run).ok


async def test_a_plan_recorded_by_the_previous_release_resumes(tmp_path: Path) -> None:
    """The previous release's `plan` entry holds only calls and fingerprint: counts come from
    the planned table, and the next resume reconciles call by call once, then records the
    digest and totals."""
    run = tmp_path / "run"
    plan = base()
    async with await new_run(tmp_path, plan) as ledger:
        for call in plan[:9]:
            answer(ledger, call.call_id)
        previous = {"calls": 70, "fingerprint": plan_fingerprint(c.call_id for c in plan)}
        await ledger.set_meta("plan", previous)
        counts = await ledger.pending_counts()
    assert counts == count_pending(run / "ledger.sqlite", None)
    assert counts["m1"].calls == 60 - 9 and counts["m1"].chains == 20 - 3
    assert verify_run(run).ok
    assert await record(run, plan) == (PlanDelta(70, 0, 70), 1)
    assert plan_entries(run) == 3
    assert await record(run, plan) == (PlanDelta(70, 0, 70), 1)
    assert plan_entries(run) == 3
    async with await Ledger.open(run, create=False, command="resume") as ledger:
        assert await ledger.pending_counts() == counts


def judged_chains(n: int) -> list[PlannedCall]:
    """Chains of four steps whose models alternate: a subject answers, a judge reads it."""
    return [
        PlannedCall(
            f"j{c:03d}-{s}", f"j{c:03d}", s, ("subj", "judge")[s % 2], "b", f"i{c}", 0, "p", {}
        )
        for c in range(n)
        for s in range(4)
    ]


async def test_pending_counts_from_totals_equal_a_full_count(tmp_path: Path) -> None:
    plan = judged_chains(12) + calls(6, 2)
    by_chain: dict[str, list[PlannedCall]] = {}
    for call in plan:
        by_chain.setdefault(call.chain_id, []).append(call)
    chains = list(by_chain.values())
    progress: list[tuple[list[PlannedCall], Callable[[Ledger, PlannedCall], None]]] = [
        (chains[0], lambda lg, c: answer(lg, c.call_id)),  # whole chain done
        (chains[1][:1], lambda lg, c: answer(lg, c.call_id)),  # the subject's first step
        (chains[2][:2], lambda lg, c: answer(lg, c.call_id, Status.PARSE_ERROR)),
        (chains[3][:3], lambda lg, c: answer(lg, c.call_id, Status.FAILED)),  # not final
        (chains[4][::2], lambda lg, c: answer(lg, c.call_id)),  # every subject step
        (chains[12], lambda lg, c: answer(lg, c.call_id)),
        (chains[13][:1], lambda lg, c: answer(lg, c.call_id)),
    ]
    async with await new_run(tmp_path, plan) as ledger:
        assert await ledger.pending_counts() == count_pending(ledger.path, None)
        for steps, record_answer in progress:
            for call in steps:
                record_answer(ledger, call)
        answer(ledger, chains[0][0].call_id, attempt=2)  # a second final outcome counts once
        counts = await ledger.pending_counts()
        assert counts == count_pending(ledger.path, None)
        final = {c.call_id for steps, _ in progress[:3] + progress[4:] for c in steps}
        for call in plan:  # all but chain 5: past a third of the plan, every call is checked
            if call.call_id not in final and call.chain_id != "j005":
                answer(ledger, call.call_id)
        last = await ledger.pending_counts()
    assert last == {"subj": PendingCount(2, 1), "judge": PendingCount(2, 1)}
    assert counts["subj"].calls == 24 - 2 - 1 - 1 - 2 and counts["subj"].chains == 12 - 2
    assert counts["judge"].calls == 24 - 2 - 1 and counts["judge"].chains == 12 - 1
    assert counts["m1"].calls == 12 - 2 - 1 and counts["m1"].chains == 6 - 1
