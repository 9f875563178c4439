"""One endpoint lane: RPM/TPM buckets, a lane-wide pause, a circuit breaker, and its counters.

Concurrency is the number of workers the scheduler gives the lane; everything that decides
*when* a request may leave is here, shared by every call of the endpoint, so a 429 pauses the
whole lane instead of each request discovering the limit on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaltally.config import Limits
from evaltally.errors import EvaltallyError
from evaltally.records import RateLimitSnapshot
from evaltally.runner import clock as clk
from evaltally.runner.breaker import BreakerState, CircuitBreaker
from evaltally.runner.buckets import TokenBucket

# Waiters re-check at least this often, so a stop or a changed pause is noticed promptly.
MAX_POLL_S = 0.5
# While the lane's first request is out to learn the provider's limits, others re-check this often.
PROBE_POLL_S = 0.02


class LaneStopped(EvaltallyError):
    """The lane was stopped (credentials refused, budget reached); the call is not sent."""


@dataclass
class LaneStats:
    planned: int = 0
    done: int = 0
    ok: int = 0
    parse_error: int = 0
    failed: int = 0
    blocked: int = 0
    in_flight: int = 0
    attempts: int = 0
    retries: int = 0
    rate_limited: int = 0
    wait_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    started: float = field(default_factory=clk.monotonic)


class Lane:
    def __init__(
        self,
        name: str,
        limits: Limits,
        *,
        clock: clk.Clock = clk.monotonic,
        sleep: clk.Sleep = clk.sleep,
    ) -> None:
        self.name = name
        self.limits = limits
        self.clock = clock
        self.sleep = sleep
        now = clock()
        self.rpm = TokenBucket.per_minute(limits.rpm, now) if limits.rpm else None
        self.tpm = TokenBucket.per_minute(limits.tpm, now) if limits.tpm else None
        self.breaker = CircuitBreaker(limits.breaker_threshold, limits.breaker_cooldown_s)
        self.pause_until = 0.0
        # A lane missing a limit sends one request first and waits for its answer: the limits
        # the provider advertises in its headers are adopted from it, instead of the whole
        # concurrency going out blind at once and collecting a 429 for everything past the
        # provider's one-second burst.
        self.probing = limits.rpm is None or limits.tpm is None
        self.stop_reason: str | None = None
        self.stats = LaneStats(started=now)

    @property
    def counts_tokens(self) -> bool:
        """Whether requests need a token estimate: the lane has a TPM bucket, or may adopt one
        from the first response's headers. Lanes without one skip tiktoken entirely."""
        return self.tpm is not None or self.probing

    @property
    def breaker_state(self) -> BreakerState:
        return self.breaker.state(self.clock())

    def _bucket_wait(self, tokens: float, now: float) -> float:
        waits = [self.pause_until - now]
        if self.rpm:
            waits.append(self.rpm.wait_time(1, now))
        if self.tpm:
            waits.append(self.tpm.wait_time(tokens, now))
        return max(waits)

    async def acquire(self, tokens: float) -> None:
        """Wait until a request of `tokens` estimated tokens may be sent, then reserve it."""
        while True:
            if self.stop_reason:
                raise LaneStopped(self.stop_reason)
            now = self.clock()
            wait = self._bucket_wait(tokens, now)
            if wait <= 0 and self.probing and self.stats.in_flight > 0:
                wait = PROBE_POLL_S
            if wait <= 0:
                wait = self.breaker.wait_time(now)
            if wait <= 0:
                if self.rpm:
                    self.rpm.take(1, now)
                if self.tpm:
                    self.tpm.take(tokens, now)
                self.stats.in_flight += 1
                self.stats.attempts += 1
                return
            step = min(wait, MAX_POLL_S)
            self.stats.wait_s += step
            await self.sleep(step)

    def release(
        self, reserved_tokens: float, used_tokens: int | None, *, provider_counted: bool = False
    ) -> None:
        """The request is over. Without the provider's own count of the tokens left
        (`provider_counted`), give back what was reserved above what it used; with it, the
        provider's figure (already applied by observe()) is the truth and nothing is given back
        (OpenAI-style limits charge max_tokens whatever the answer's length)."""
        self.stats.in_flight -= 1
        self.probing = False
        if provider_counted:
            return
        if self.tpm and used_tokens is not None and used_tokens < reserved_tokens:
            self.tpm.give_back(reserved_tokens - used_tokens)

    def pause(self, seconds: float) -> None:
        """Hold every call of this lane for `seconds` (a 429 or Retry-After)."""
        self.pause_until = max(self.pause_until, self.clock() + seconds)

    def observe(self, snapshot: RateLimitSnapshot | None) -> None:
        """Trust the provider's own account of what is left in its window."""
        if snapshot is None:
            return
        now = self.clock()
        # A lane configured without a limit adopts the one the provider advertises (the
        # start-up probe means no other request is out when the first headers arrive).
        if self.rpm is None and snapshot.limit_requests:
            self.rpm = TokenBucket.per_minute(snapshot.limit_requests, now)
        if self.tpm is None and snapshot.limit_tokens:
            self.tpm = TokenBucket.per_minute(snapshot.limit_tokens, now)
        if self.rpm and snapshot.remaining_requests is not None:
            self.rpm.drain_to(snapshot.remaining_requests, now)
        if self.tpm and snapshot.remaining_tokens is not None:
            self.tpm.drain_to(snapshot.remaining_tokens, now)
        if snapshot.remaining_requests == 0 and snapshot.reset_requests_s:
            self.pause(snapshot.reset_requests_s)
        if snapshot.remaining_tokens == 0 and snapshot.reset_tokens_s:
            self.pause(snapshot.reset_tokens_s)

    def success(self) -> None:
        self.breaker.success()

    def failure(self) -> None:
        self.breaker.failure(self.clock())

    def stop(self, reason: str) -> None:
        if not self.stop_reason:
            self.stop_reason = reason
