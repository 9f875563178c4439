"""How many requests a lane that knows no request limit may have in flight.

Pure logic with the time passed in (tests/core/test_window.py), like pacing.py.

A lane that knows no limit finds one by its first 429, and every request in flight at that
moment is refused too. Against a provider with inherent latency (a model answering in 200 ms
or 20 s) the in-flight count is what buys throughput, and nothing is cut. But when answers
slow down *because* more are in flight (the provider, or this machine, is the bottleneck), more
in flight buys nothing and only enlarges that storm: the window then shrinks to what keeps the
latency near its low (never under MIN_WINDOW) and grows again, one per answer, while the
latency stays there. Delay-based, as TCP Vegas: the signal is the latency smoothed over several
answers against its lowest recent value, so single slow answers (a long completion) do not
count as a queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_WINDOW = 4
"""Never fewer in flight than this: a bottlenecked pipeline stays full, and a storm at the
first 429 stays within the ten requests of learning the issue allows."""

TOLERANCE = 2.0
"""The smoothed latency may reach this multiple of its recent low before it counts as risen
(room for answers of varying length and a loaded machine's jitter)."""

SMOOTHING = 1.0 / 8.0
"""Weight of each answer in the smoothed latency (as TCP's srtt)."""

SHRINK = 7.0 / 8.0
"""A risen latency takes the window to this share of what is in flight, per answer."""

BASE_PERIOD_S = 30.0
"""The low is the lowest smoothed latency of this period and the one before, so it follows a
provider whose latency rose for good (a longer kind of prompt) within one to two periods."""


@dataclass
class InflightWindow:
    limit: float | None = None
    """At most this many in flight; None: unbounded (latency has not risen yet)."""
    smoothed: float | None = None
    low: float = math.inf
    previous_low: float = math.inf
    period_start: float = 0.0

    def full(self, in_flight: int) -> bool:
        return self.limit is not None and in_flight >= self.limit

    def answered(self, latency: float, in_flight: int, now: float) -> None:
        """An answer without a 429 took `latency` s; `in_flight` are still out."""
        s = (
            latency
            if self.smoothed is None
            else self.smoothed + (latency - self.smoothed) * (SMOOTHING)
        )
        self.smoothed = s
        if now - self.period_start >= BASE_PERIOD_S:
            self.previous_low, self.low, self.period_start = self.low, s, now
        self.low = min(self.low, s)
        if s > min(self.low, self.previous_low) * TOLERANCE:
            current = in_flight + 1 if self.limit is None else min(self.limit, in_flight + 1)
            self.limit = max(float(MIN_WINDOW), current * SHRINK)
        elif self.limit is not None:
            self.limit += 1.0
