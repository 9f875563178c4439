"""The lane's gate: a request that must wait queues (first come, first served, the head
watching the clock); a request free to leave while nobody waits out an interval leaves at
once, without queueing behind workers the gate is still waking one loop turn at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from evaltally.config import Limits
from evaltally.runner.lane import Lane, Ticket


class HeldTime:
    """A clock whose sleeps last until the test lets them end."""

    def __init__(self) -> None:
        self.now = 0.0
        self.go = asyncio.Event()

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        await self.go.wait()
        self.now += seconds


def _unpaced(t: HeldTime) -> Lane:
    lane = Lane("x", Limits(), clock=t.clock, sleep=t.sleep)
    lane.slow_start.finish()
    return lane


def _step(coro: Coroutine[Any, Any, Ticket]) -> Ticket | None:
    """Run `coro` until it first suspends: its ticket if it never did."""
    try:
        coro.send(None)
    except StopIteration as done:
        ticket: Ticket = done.value
        return ticket
    coro.close()
    return None


async def test_a_request_free_to_leave_passes_workers_the_gate_is_still_waking() -> None:
    t = HeldTime()
    lane = _unpaced(t)
    lane.pause(1.0)
    order: list[str] = []

    async def worker(name: str) -> None:
        await lane.acquire(0)
        order.append(name)

    head = asyncio.create_task(worker("head"))
    await asyncio.sleep(0)  # the head holds the gate, sleeping out the pause
    queued = [asyncio.create_task(worker(f"q{i}")) for i in range(3)]
    await asyncio.sleep(0)
    assert order == [] and lane._gate.locked()
    assert _step(lane.acquire(0)) is None  # the head waits out an interval: newcomers queue
    t.go.set()
    await asyncio.sleep(0)  # the head's turn: it leaves and hands the gate to q0, still asleep
    assert order == ["head"] and not lane._gate.locked()
    # The queued workers are let through one loop turn each; a newcomer free to leave does
    # not wait behind them.
    assert _step(lane.acquire(0)) is not None
    await asyncio.gather(head, *queued)
    assert order == ["head", "q0", "q1", "q2"]  # the queue kept its order


async def test_paced_requests_still_leave_in_arrival_order() -> None:
    t = HeldTime()
    t.go.set()
    lane = Lane("x", Limits(rpm=60), clock=t.clock, sleep=t.sleep)
    order: list[int] = []

    async def worker(i: int) -> None:
        lane.release(await lane.acquire(0), None)
        order.append(i)

    await asyncio.gather(*(worker(i) for i in range(6)))
    assert order == list(range(6))
    assert lane.stats.attempts == 6 and lane.stats.in_flight == 0
