"""Injectable time, so lane logic is tested without real waiting."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

monotonic: Clock = time.monotonic
sleep: Sleep = asyncio.sleep
