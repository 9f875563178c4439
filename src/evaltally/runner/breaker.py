"""Circuit breaker for an endpoint in an outage. Pure: time comes in as an argument."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


@dataclass
class CircuitBreaker:
    """Opens after `threshold` consecutive failures; after `cooldown_s` lets one probe through
    (half-open); the probe's success closes it, its failure reopens it. While open, the lane
    holds its calls instead of spending their retry budget on a provider that is down."""

    threshold: int
    cooldown_s: float
    failures: int = 0
    opened_at: float | None = None
    probing: bool = False
    times_opened: int = 0

    def state(self, now: float) -> BreakerState:
        if self.opened_at is None:
            return BreakerState.CLOSED
        if now - self.opened_at >= self.cooldown_s:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def wait_time(self, now: float) -> float:
        """Seconds a new attempt must wait; 0 means go (and, half-open, be the probe)."""
        state = self.state(now)
        if state is BreakerState.CLOSED:
            return 0.0
        if state is BreakerState.HALF_OPEN and not self.probing:
            self.probing = True
            return 0.0
        assert self.opened_at is not None
        remaining = self.opened_at + self.cooldown_s - now
        # While a probe is out, poll briefly; its result decides for everyone.
        return remaining if remaining > 0 else min(1.0, self.cooldown_s)

    def success(self) -> None:
        self.failures = 0
        self.opened_at = None
        self.probing = False

    def failure(self, now: float) -> None:
        self.failures += 1
        if self.probing or self.failures >= self.threshold:
            if self.opened_at is None or self.probing:
                self.times_opened += 1
            self.opened_at = now
            self.probing = False
