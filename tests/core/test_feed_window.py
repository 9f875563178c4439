"""The scheduler's feed: batches placed longest first, never more than a window held."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from evaltally.ledger import PendingChain
from evaltally.records import PlannedCall
from evaltally.runner.feed import Feed, window_order


def chain(n: int, steps: int) -> PendingChain:
    cid = f"c{n:04d}"
    calls = [
        PlannedCall(f"{cid}-{s}", cid, s, "m1", "b1", f"item{n}", 0, "p", {}) for s in range(steps)
    ]
    return PendingChain(chain_id=cid, calls=calls, recorded={})


BATCHES = [[chain(10 * b + i, (b + i) % 4 + 1) for i in range(8)] for b in range(12)]
LOW_WATER = 15


async def test_feed_holds_a_bounded_window_and_places_each_batch_longest_first() -> None:
    held_when_read: list[int] = []
    most_held = 0
    placed: asyncio.Queue[PendingChain] = asyncio.Queue()

    async def source() -> AsyncGenerator[list[PendingChain]]:
        for batch in BATCHES:
            held_when_read.append(feed.held)
            yield batch

    def place(c: PendingChain) -> None:
        nonlocal most_held
        most_held = max(most_held, feed.held)
        placed.put_nowait(c)

    feed = Feed(source(), place, LOW_WATER)
    order: list[str] = []

    async def consume() -> None:
        while not feed.finished:
            c = await placed.get()
            await asyncio.sleep(0)  # the chain runs a while; the feed must wait for room
            order.append(c.chain_id)
            feed.release(c)

    await asyncio.gather(feed.run(), consume())
    expected = [c.chain_id for batch in BATCHES for c in window_order(batch)]
    assert order == expected  # every chain once, each batch longest first, batches in order
    assert [len(c.calls) for c in window_order(BATCHES[0])] == [4, 4, 3, 3, 2, 2, 1, 1]
    assert 0 < max(held_when_read) <= LOW_WATER  # the consumer lagged; the feed waited
    largest = max(sum(len(c.calls) for c in batch) for batch in BATCHES)
    assert most_held <= LOW_WATER + largest
    assert feed.held == 0 and feed.finished
