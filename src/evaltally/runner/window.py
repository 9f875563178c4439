"""How many requests a lane that knows no request limit may have in flight.

Pure logic with the time passed in (tests/core/test_window.py), like pacing.py.

A lane that knows no limit finds one by its first 429, and every request in flight at that
moment is refused too. Against a provider with inherent latency (a model answering in 200 ms
or 20 s) the in-flight count is what buys throughput, and nothing is cut. But when answers
slow down *because* more are in flight (the provider, or this machine, is the bottleneck), more
in flight buys nothing and only enlarges that storm: the window then shrinks to what keeps the
latency near its low (never under MIN_WINDOW) and grows again, GROWTH per round trip, while
the latency stays there. Delay-based, as TCP Vegas: the signal is the latency smoothed over
several answers against its lowest recent value, and it counts only when the lane also has
more in flight than when that low was seen (TOLERANCE times both): answers of varying length
(a model's latency is mostly its output's length) move the latency without any queue, and a
lane that keeps the same number in flight cannot be what made it slower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_WINDOW = 4
"""Never fewer in flight than this: a bottlenecked pipeline stays full, and a storm at the
first 429 stays within the ten requests of learning the issue allows."""

TOLERANCE = 2.0
"""The smoothed latency may reach this multiple of its recent low before it counts as risen
(room for a loaded machine's jitter), and only with this multiple as many in flight."""

SMOOTHING = 1.0 / 8.0
"""Weight of each answer in the smoothed latency (as TCP's srtt)."""

GROWTH = 2.0
"""Once latency is back near its low, the window grows by this many per round trip (additive,
as TCP's congestion avoidance: growing by one per answer overshot the bottleneck twofold
before the latency it raised came back, and the window swung between a few and many times
the bottleneck's share)."""

BASE_PERIOD_S = 30.0
"""The low is the lowest smoothed latency of this period and the one before, so it follows a
provider whose latency rose for good (a longer kind of prompt) within one to two periods."""


@dataclass
class InflightWindow:
    limit: float | None = None
    """At most this many in flight; None: unbounded (latency has not risen yet)."""
    smoothed: float | None = None
    low: tuple[float, int] = (math.inf, 0)
    """The lowest smoothed latency of this period, and how many were in flight then."""
    previous_low: tuple[float, int] = (math.inf, 0)
    period_start: float = 0.0
    cut_at: float = -math.inf

    def full(self, in_flight: int) -> bool:
        return self.limit is not None and in_flight >= self.limit

    def answered(self, latency: float, in_flight: int, now: float) -> None:
        """An answer without a 429 took `latency` s; `in_flight` are still out."""
        previous = latency if self.smoothed is None else self.smoothed
        s = previous + (latency - previous) * SMOOTHING
        self.smoothed = s
        if now - self.period_start >= BASE_PERIOD_S:
            self.previous_low, self.low, self.period_start = self.low, (s, in_flight), now
        self.low = min(self.low, (s, in_flight))
        low, low_in_flight = min(self.low, self.previous_low)
        # A round trip too short for the clock to see (a coarse clock, a virtual one) is 0 s:
        # nothing is queueing.
        gradient = low * TOLERANCE / s if s > 0 else 1.0
        if gradient < 1.0 and in_flight + 1 > (low_in_flight + 1) * TOLERANCE:
            # Once per round trip: answers to requests sent before the last cut still show
            # the queue that cut is draining.
            if now - latency >= self.cut_at:
                current = in_flight + 1 if self.limit is None else min(self.limit, in_flight + 1)
                self.limit = max(float(MIN_WINDOW), current * gradient)
                self.cut_at = now
        elif self.limit is not None:
            self.limit += GROWTH / self.limit
