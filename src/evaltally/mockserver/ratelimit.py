"""Request and token buckets, enforced the way hosted providers do it.

Each bucket refills continuously at limit/60 per second up to its capacity (the burst). A request
is admitted only if BOTH buckets hold enough; otherwise nothing is taken and the caller gets the
wait until both would, which becomes Retry-After. Time comes from a monotonic clock passed in,
so tests can drive the buckets without sleeping.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


class Bucket:
    """A continuously refilled token bucket."""

    __slots__ = ("capacity", "level", "limit", "rate", "stamp")

    def __init__(self, limit_per_min: int, burst: int | None, now: float) -> None:
        self.limit = limit_per_min
        self.rate = limit_per_min / 60.0
        # Default burst: one second's worth, at least one unit, as the brief of realism asks.
        self.capacity = float(burst if burst is not None else max(1, math.floor(self.rate)))
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait_for(self, cost: float) -> float:
        """Seconds until `cost` units are available (0 if they are now). Call refill() first."""
        # A request larger than the whole bucket is charged the full bucket instead of being
        # refused forever, so a client that honours Retry-After always makes progress.
        need = min(cost, self.capacity) - self.level
        return 0.0 if need <= 1e-9 else need / self.rate

    def take(self, cost: float) -> None:
        self.level -= min(cost, self.capacity)

    def reset_after(self) -> float:
        """Seconds until the bucket is full again (OpenAI's and Anthropic's 'reset')."""
        return max(0.0, (self.capacity - self.level) / self.rate)


@dataclass(frozen=True)
class LimitSnapshot:
    """What the rate-limit headers report after a decision."""

    rpm: int | None
    rpm_remaining: int
    rpm_reset_s: float
    tpm: int | None
    tpm_remaining: int
    tpm_reset_s: float
    retry_after_s: float  # > 0 only when the request was refused
    limited_by: str | None = None  # "requests" or "tokens": the bucket with the longer wait


class RateLimiter:
    """The request bucket and the token bucket of one mock server."""

    def __init__(
        self,
        rpm: int | None,
        tpm: int | None,
        rpm_burst: int | None = None,
        tpm_burst: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        now = clock()
        self.requests = Bucket(rpm, rpm_burst, now) if rpm else None
        self.tokens = Bucket(tpm, tpm_burst, now) if tpm else None

    @property
    def active(self) -> bool:
        return self.requests is not None or self.tokens is not None

    def admit(self, token_cost: int) -> LimitSnapshot:
        """Charge one request and `token_cost` tokens, or refuse with the wait (retry_after_s)."""
        now = self._clock()
        wait, limited_by = 0.0, None
        for name, bucket, cost in (
            ("requests", self.requests, 1.0),
            ("tokens", self.tokens, float(token_cost)),
        ):
            if bucket is not None:
                bucket.refill(now)
                w = bucket.wait_for(cost)
                if w > wait:
                    wait, limited_by = w, name
        if limited_by is None:
            if self.requests is not None:
                self.requests.take(1.0)
            if self.tokens is not None:
                self.tokens.take(float(token_cost))
        return self.snapshot(wait, limited_by)

    def snapshot(self, retry_after_s: float = 0.0, limited_by: str | None = None) -> LimitSnapshot:
        r, t = self.requests, self.tokens
        if r is not None or t is not None:
            now = self._clock()
            for b in (r, t):
                if b is not None:
                    b.refill(now)
        return LimitSnapshot(
            rpm=r.limit if r else None,
            rpm_remaining=max(0, math.floor(r.level)) if r else 0,
            rpm_reset_s=r.reset_after() if r else 0.0,
            tpm=t.limit if t else None,
            tpm_remaining=max(0, math.floor(t.level)) if t else 0,
            tpm_reset_s=t.reset_after() if t else 0.0,
            retry_after_s=retry_after_s,
            limited_by=limited_by,
        )


def retry_after_header(seconds: float) -> str:
    """RFC 9110 delta-seconds: a non-negative integer, rounded up so clients never come early."""
    return str(max(0, math.ceil(seconds - 1e-9)))


def retry_after_ms_header(seconds: float) -> str:
    return str(max(0, math.ceil(seconds * 1000 - 1e-6)))


def openai_duration(seconds: float) -> str:
    """Go-style duration as in OpenAI's x-ratelimit-reset-*: '12ms', '6s', '1.5s', '1m0s'."""
    if seconds < 1.0:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    if seconds < 60.0:
        return f"{_trim(seconds)}s"
    hours, rest = divmod(seconds, 3600.0)
    minutes, secs = divmod(rest, 60.0)
    head = f"{int(hours)}h" if hours else ""
    return f"{head}{int(minutes)}m{_trim(secs)}s"


def _trim(seconds: float) -> str:
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return text or "0"
