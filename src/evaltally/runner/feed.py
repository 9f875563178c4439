"""Keep the scheduler's lane queues supplied from the pending stream, holding a bounded window.

The ledger reads pending chains in batches (ledger/pending.py). The feed places each batch's
chains longest first (most remaining calls, then chain id), then waits until the chains it has
placed and not yet seen finish add up to at most `low_water` planned calls before it reads the
next batch. So memory holds about two batches of chains however large the sweep is, and the
critical-path order (longest chains first) holds within each batch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable

from evaltally.ledger import PendingChain


def window_order(batch: list[PendingChain]) -> list[PendingChain]:
    """The order chains of one batch are started in: most remaining calls first."""
    return sorted(batch, key=lambda c: (-c.remaining, c.chain_id))


class Feed:
    def __init__(
        self,
        source: AsyncGenerator[list[PendingChain]],
        place: Callable[[PendingChain], None],
        low_water: int,
    ) -> None:
        self.source = source
        self.place = place
        self.low_water = low_water
        self.held = 0
        """Planned calls of the chains placed and not yet released."""
        self.open = 0
        """Chains placed and not yet released."""
        self.done = False
        """Every batch has been placed."""
        self._room = asyncio.Event()

    async def run(self) -> None:
        async with contextlib.aclosing(self.source):
            async for batch in self.source:
                for chain in window_order(batch):
                    self.held += len(chain.calls)
                    self.open += 1
                    self.place(chain)
                while self.held > self.low_water:
                    self._room.clear()
                    await self._room.wait()
        self.done = True

    def release(self, chain: PendingChain) -> None:
        """`chain` has ended: its memory is free for the next batch."""
        self.held -= len(chain.calls)
        self.open -= 1
        if self.held <= self.low_water:
            self._room.set()

    @property
    def finished(self) -> bool:
        """Every chain has been read, placed and released."""
        return self.done and self.open == 0
