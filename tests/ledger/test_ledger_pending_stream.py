"""The pending stream: bounded batches over the ledger, every pending chain exactly once."""

from __future__ import annotations

from pathlib import Path

from ledger_testkit import answer, calls, new_run

from evaltally.ledger import Ledger, PendingCount
from evaltally.records import PlannedCall, Status


def ragged_plan() -> list[PlannedCall]:
    """40 chains of 1 to 7 steps (chain 0039 has 7), plus one chain of 25 steps: longer than
    a page at the batch size the tests use."""
    plan = [c for n in range(40) for c in calls(40, n % 7 + 1) if c.chain_id.endswith(f"{n:04d}")]
    return plan + calls(1, 25, model="m0")


async def test_every_pending_chain_once_in_chain_id_order_across_batches(tmp_path: Path) -> None:
    plan = ragged_plan()
    steps: dict[str, list[PlannedCall]] = {}
    for c in plan:
        steps.setdefault(c.chain_id, []).append(c)
    done = {cid for i, cid in enumerate(sorted(steps)) if i % 5 == 1}  # every fifth chain
    async with await new_run(tmp_path, plan) as ledger:
        for cid in done:
            for c in steps[cid]:
                answer(ledger, c.call_id)
        partly = sorted(cid for cid in steps if cid not in done and len(steps[cid]) > 2)
        for cid in partly:
            answer(ledger, steps[cid][0].call_id)
            answer(ledger, steps[cid][1].call_id, Status.FAILED, attempt=2, http=503)
        batches = [batch async for batch in ledger.pending_batches(batch_calls=6)]
        counts = await ledger.pending_counts()
        everything = await ledger.pending_chains()
    got = [chain.chain_id for batch in batches for chain in batch]
    expected = sorted(cid for cid in steps if cid not in done)
    assert got == expected  # exactly once each, in chain_id order across batch boundaries
    assert len(batches) > 10
    for batch in batches:
        size = sum(len(c.calls) for c in batch)
        assert size < 6 + max(6, *(len(c.calls) for c in batch))
    assert [c.chain_id for c in everything] == expected
    by_id = {chain.chain_id: chain for batch in batches for chain in batch}
    long = by_id["m0-b1-0000"]  # the first chain, read alone
    assert [c.step for c in long.calls] == list(range(25)) and "m0-b1-0000" in partly
    for cid in partly:
        chain = by_id[cid]
        assert [c.call_id for c in chain.calls] == [c.call_id for c in steps[cid]]
        assert list(chain.recorded) == [0] and chain.recorded[0].parsed == 42
        assert chain.attempts_so_far == {steps[cid][1].call_id: 2}
    pending_calls = sum(len(steps[cid]) for cid in expected) - len(partly)  # step 0 is answered
    assert counts["m1"].calls + counts["m0"].calls == pending_calls
    assert counts["m0"] == PendingCount(calls=24, chains=1)
    assert counts["m1"].chains == len(expected) - 1


async def test_closing_the_stream_early_releases_it(tmp_path: Path) -> None:
    async with await new_run(tmp_path, calls(30, 2)) as ledger:
        stream = ledger.pending_batches(batch_calls=4)
        first = await anext(stream)
        await stream.aclose()
        assert [c.chain_id for c in first] == [f"m1-b1-{i:04d}" for i in range(2)]
    async with await Ledger.open(tmp_path / "run", create=False, command="resume") as again:
        assert len(await again.pending_chains()) == 30
