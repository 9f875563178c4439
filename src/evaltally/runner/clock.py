"""Injectable time, so lane logic is tested without real waiting."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

monotonic: Clock = time.monotonic
sleep: Sleep = asyncio.sleep


class VirtualClock:
    """Time that passes only when a task waits: `sleep` returns at once (after letting every
    other ready task run) and moves `monotonic` on by what was asked. Injected into a session
    (run_session's `clock`), a run's retries, 429 pauses, pacing and breaker cool-downs take no
    wall time, so tests check what a run does without waiting for it. Waits of concurrent tasks
    add up, so virtual time runs at least as fast as the waits it stands for."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.now += seconds
        await asyncio.sleep(0)
