"""Token buckets for requests/min and tokens/min. Pure: time comes in as an argument."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TokenBucket:
    """Refills continuously at `rate_per_s` up to `capacity`.

    The capacity is one second's worth by default: providers enforce per-minute limits with a
    short burst allowance, and sending a minute's quota in the first second is what makes
    naive clients collect 429 storms.
    """

    rate_per_s: float
    capacity: float
    level: float
    updated: float

    @classmethod
    def per_minute(cls, per_minute: float, now: float, burst_s: float = 1.0) -> TokenBucket:
        rate = per_minute / 60.0
        capacity = max(1.0, rate * burst_s)
        return cls(rate_per_s=rate, capacity=capacity, level=capacity, updated=now)

    def _refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate_per_s)
            self.updated = now

    def wait_time(self, cost: float, now: float) -> float:
        """Seconds until `cost` can be taken (0 when it can be taken now).

        A cost larger than the capacity is admitted once the bucket is full, leaving it in
        debt, so an oversized request is slowed but never starved."""
        self._refill(now)
        need = min(cost, self.capacity)
        if self.level >= need:
            return 0.0
        return (need - self.level) / self.rate_per_s

    def take(self, cost: float, now: float) -> None:
        self._refill(now)
        self.level -= cost

    def give_back(self, amount: float) -> None:
        """Return an over-reservation (estimated tokens above what the API reported)."""
        self.level = min(self.capacity, self.level + amount)

    def drain_to(self, remaining: float, now: float) -> None:
        """The provider says only `remaining` is left: never believe we have more."""
        self._refill(now)
        self.level = min(self.level, remaining)
