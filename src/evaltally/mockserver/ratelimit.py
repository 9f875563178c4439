"""Request and token limits, enforced the three ways hosted providers do it.

- `token_bucket` (the default): refills continuously at limit/60 per second up to a capacity
  (the burst; `limit_window_s` worth of the rate, one second by default).
- `fixed_window`: at most limit x window/60 per window, windows aligned to the server's start;
  the count restarts at each boundary.
- `sliding_window`: at most limit x window/60 in ANY window of that length (a request log).

A request is admitted only if every limit holds enough; otherwise nothing is taken and the
caller gets the wait until all would, which becomes Retry-After. `advertise_factor` > 1 makes
the headers claim a higher limit (and more remaining) than is enforced, as some gateways do.
Time comes from a monotonic clock passed in, so tests drive the limits without sleeping.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

MODES = ("token_bucket", "fixed_window", "sliding_window")


class Limit(Protocol):
    """One enforced limit (requests or tokens per minute). Call `advance(now)` first."""

    limit: int

    def advance(self, now: float) -> None: ...

    def wait_for(self, cost: float) -> float:
        """Seconds until `cost` units are available (0 if they are now)."""
        ...

    def take(self, cost: float) -> None: ...

    def remaining(self) -> float: ...

    def reset_after(self) -> float:
        """Seconds until the limit is back to its initial state (OpenAI's and Anthropic's
        'reset')."""
        ...


class Bucket:
    """A continuously refilled token bucket."""

    __slots__ = ("capacity", "level", "limit", "now", "rate", "stamp")

    def __init__(self, limit_per_min: int, capacity: float, now: float) -> None:
        self.limit = limit_per_min
        self.rate = limit_per_min / 60.0
        self.capacity = capacity
        self.level = capacity
        self.stamp = now

    def advance(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def wait_for(self, cost: float) -> float:
        # A request larger than the whole bucket is charged the full bucket instead of being
        # refused forever, so a client that honours Retry-After always makes progress.
        need = min(cost, self.capacity) - self.level
        return 0.0 if need <= 1e-9 else need / self.rate

    def take(self, cost: float) -> None:
        self.level -= min(cost, self.capacity)

    def remaining(self) -> float:
        return self.level

    def reset_after(self) -> float:
        return max(0.0, (self.capacity - self.level) / self.rate)


class _Window:
    """What both window modes share: a window's worth of the per-minute limit, and a clock."""

    __slots__ = ("_now", "allowance", "limit", "window")

    def __init__(self, limit_per_min: int, window_s: float, now: float) -> None:
        self.limit = limit_per_min
        self.window = window_s
        self.allowance = max(1.0, math.floor(limit_per_min * window_s / 60.0))
        self._now = now


class FixedWindow(_Window):
    """At most `allowance` units per window; windows follow each other from the start."""

    __slots__ = ("start", "used")

    def __init__(self, limit_per_min: int, window_s: float, now: float) -> None:
        super().__init__(limit_per_min, window_s, now)
        self.start = now
        self.used = 0.0

    def advance(self, now: float) -> None:
        if now >= self.start + self.window:
            self.start += math.floor((now - self.start) / self.window) * self.window
            self.used = 0.0
        self._now = now

    def wait_for(self, cost: float) -> float:
        if self.used + min(cost, self.allowance) <= self.allowance + 1e-9:
            return 0.0
        return max(0.0, self.start + self.window - self._now)

    def take(self, cost: float) -> None:
        self.used += min(cost, self.allowance)

    def remaining(self) -> float:
        return max(0.0, self.allowance - self.used)

    def reset_after(self) -> float:
        return max(0.0, self.start + self.window - self._now) if self.used else 0.0


class SlidingWindow(_Window):
    """At most `allowance` units in any window of `window_s` (a log of what was admitted)."""

    __slots__ = ("log", "total")

    def __init__(self, limit_per_min: int, window_s: float, now: float) -> None:
        super().__init__(limit_per_min, window_s, now)
        self.log: deque[tuple[float, float]] = deque()
        self.total = 0.0

    def advance(self, now: float) -> None:
        self._now = now
        while self.log and self.log[0][0] <= now - self.window:
            self.total -= self.log.popleft()[1]

    def wait_for(self, cost: float) -> float:
        excess = self.total + min(cost, self.allowance) - self.allowance
        if excess <= 1e-9:
            return 0.0
        for at, units in self.log:
            excess -= units
            if excess <= 1e-9:
                return max(0.0, at + self.window - self._now)
        return self.window

    def take(self, cost: float) -> None:
        units = min(cost, self.allowance)
        self.log.append((self._now, units))
        self.total += units

    def remaining(self) -> float:
        return max(0.0, self.allowance - self.total)

    def reset_after(self) -> float:
        return max(0.0, self.log[-1][0] + self.window - self._now) if self.log else 0.0


def make_limit(
    mode: str, limit_per_min: int, window_s: float, burst: int | None, now: float
) -> Limit:
    if mode == "fixed_window":
        return FixedWindow(limit_per_min, window_s, now)
    if mode == "sliding_window":
        return SlidingWindow(limit_per_min, window_s, now)
    # Default burst: the window's worth of the rate (one second), at least one unit.
    capacity = burst if burst is not None else max(1, math.floor(limit_per_min * window_s / 60))
    return Bucket(limit_per_min, float(capacity), now)


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
    limited_by: str | None = None  # "requests" or "tokens": the limit with the longer wait


class RateLimiter:
    """The request limit and the token limit of one mock server."""

    def __init__(
        self,
        rpm: int | None,
        tpm: int | None,
        rpm_burst: int | None = None,
        tpm_burst: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        mode: str = "token_bucket",
        window_s: float = 1.0,
        advertise_factor: float = 1.0,
    ) -> None:
        self._clock = clock
        self.advertise = advertise_factor
        now = clock()
        self.requests = make_limit(mode, rpm, window_s, rpm_burst, now) if rpm else None
        self.tokens = make_limit(mode, tpm, window_s, tpm_burst, now) if tpm else None

    @property
    def active(self) -> bool:
        return self.requests is not None or self.tokens is not None

    def admit(self, token_cost: int) -> LimitSnapshot:
        """Charge one request and `token_cost` tokens, or refuse with the wait (retry_after_s)."""
        now = self._clock()
        wait, limited_by = 0.0, None
        for name, limit, cost in (
            ("requests", self.requests, 1.0),
            ("tokens", self.tokens, float(token_cost)),
        ):
            if limit is not None:
                limit.advance(now)
                w = limit.wait_for(cost)
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
        now = self._clock()
        for limit in (r, t):
            if limit is not None:
                limit.advance(now)
        return LimitSnapshot(
            rpm=self._advertised(r.limit) if r else None,
            rpm_remaining=self._advertised(r.remaining()) if r else 0,
            rpm_reset_s=r.reset_after() if r else 0.0,
            tpm=self._advertised(t.limit) if t else None,
            tpm_remaining=self._advertised(t.remaining()) if t else 0,
            tpm_reset_s=t.reset_after() if t else 0.0,
            retry_after_s=retry_after_s,
            limited_by=limited_by,
        )

    def _advertised(self, value: float) -> int:
        return max(0, math.floor(value * self.advertise))


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
