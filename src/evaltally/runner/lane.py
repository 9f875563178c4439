"""One endpoint lane: paced requests and tokens, a lane-wide pause, a circuit breaker, counters.

Concurrency is the number of workers the scheduler gives the lane; everything that decides
*when* a request may leave is here, shared by every call of the endpoint, so a limit's 429
pauses the whole lane instead of each request discovering the limit on its own. Sporadic
errors do not: a 5xx or 529 with Retry-After, and a 429 of the provider's capacity rather than
of a limit (runner/refusals.py), hold only their own request's retry (runner/call.py), and
the other requests go on. Workers queue at one gate
(first come, first served): only the worker at its head watches the clock, so a lane of 64
workers paced at 100 requests/s wakes once per request, not 64 times.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

from evaltally.config import Limits
from evaltally.errors import EvaltallyError
from evaltally.records import RateLimitSnapshot
from evaltally.runner import clock as clk
from evaltally.runner.breaker import BreakerState, CircuitBreaker
from evaltally.runner.pacing import DECREASE, AdaptiveRate, SlowStart
from evaltally.runner.refusals import RefusalJudge, Verdict
from evaltally.runner.window import InflightWindow

# The one cap on a wait a provider can ask for (Retry-After, retry-after-ms, rate-limit reset
# headers, a body's retry hint). A longer wait is a quota, not a rate limit: the lane stops and
# says so, and `tally resume` continues later.
MAX_PROVIDER_WAIT_S = 600.0
# A 429 that says nothing about how long to wait still pauses the lane briefly.
DEFAULT_429_PAUSE_S = 1.0
# Waiters re-check at least this often, so a stop or a changed pause is noticed promptly.
MAX_POLL_S = 0.5
# A pause lasts what the provider asked plus up to this share of it (at most 1 s), so the lane's
# retries do not all land at the instant its window reopens.
PAUSE_JITTER = 0.05
# What a lane that knows no request limit remembers of its sends: the last second's, to measure
# the rate a 429 refused and to charge a limit advertised meanwhile with them.
RECENT_SENDS_S = 1.0
# The shortest span a rate of those sends is read over: a lane that sent its whole concurrency
# at once did not send at an unbounded rate.
MIN_SEND_SPAN_S = 0.1


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
    """429s of any kind."""
    capacity_refused: int = 0
    """429s taken as the provider's capacity (retried on their own; no pause, no rate cut)."""
    retry_waiting: int = 0
    """Requests waiting out their own retry wait now (a Retry-After, a backoff)."""
    wait_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    started: float = field(default_factory=clk.monotonic)


@dataclass(frozen=True)
class Ticket:
    """One request let through: when, and what it reserved."""

    sent_at: float
    tokens: float
    left_at: float | None = None
    """When the request left, once its start row was committed (ledger/writer.py): the
    latency the in-flight window reads runs from here, since the commit is this process's
    wait, not the provider's (counted in, it raised the latency's floor and let more out at
    the first 429). The pacing runs from `sent_at`, when the request was let through."""


class Lane:
    def __init__(
        self,
        name: str,
        limits: Limits,
        *,
        clock: clk.Clock = clk.monotonic,
        sleep: clk.Sleep = clk.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.limits = limits
        self.clock = clock
        self.sleep = sleep
        self._rng = rng or random.Random()
        now = clock()
        self.requests = AdaptiveRate.per_minute(limits.rpm, now)
        self.tokens = AdaptiveRate.per_minute(limits.tpm, now)
        # A lane that knows no request limit ramps its rate up over a few tens of ms instead of
        # sending its whole concurrency blind; a limit advertised in the first answers is
        # adopted meanwhile.
        self.slow_start = SlowStart()
        if self.requests.pacer is not None:
            self.slow_start.finish()
        # While no request limit is known, the in-flight count is held down once latency shows
        # the requests queueing (runner/window.py), so the first 429 finds few in flight.
        self.window = InflightWindow()
        self._answered = asyncio.Event()
        self._recent_sends: deque[float] = deque()
        self.breaker = CircuitBreaker(limits.breaker_threshold, limits.breaker_cooldown_s)
        self.refusals = RefusalJudge()
        self._rate_before_test: AdaptiveRate | None = None
        self._sending_at_test: float | None = None
        """What a lane that knew no limit was sending (per s) when its tested cut was made."""
        self.pause_until = 0.0
        self.stop_reason: str | None = None
        self.advertised: RateLimitSnapshot | None = None
        """The provider's latest rate-limit headers, for `settled()` and `tally status`."""
        self.advertised_at: float | None = None
        """When they came (wall time: the export's run metadata says when a limit was seen)."""
        self.stats = LaneStats(started=now)
        self.sending = 0
        """Tickets out (requests sent or about to be, not yet released): at most `concurrency`.
        Not `stats.in_flight`, which also counts the members of a provider batch in flight."""
        self._gate = asyncio.Lock()

    def resume_from(self, settled: dict[str, Any]) -> None:
        """Start where an earlier session of this run settled (see `settled()`)."""
        now = self.clock()
        rpm, tpm = settled.get("rpm"), settled.get("tpm")
        if isinstance(rpm, int | float) and rpm > 0:
            self.requests = AdaptiveRate.per_minute(self.limits.rpm, now, start=rpm)
            self.slow_start.finish()
        if isinstance(tpm, int | float) and tpm > 0:
            self.tokens = AdaptiveRate.per_minute(self.limits.tpm, now, start=tpm)

    def settled(self) -> dict[str, Any] | None:
        """The rates (per minute) this lane learned from the provider, to record in the ledger
        for the next session (and `tally status` to show), with the limits the provider last
        advertised as `advertised: {requests|tokens: [limit, window_s]}` (read from the
        headers `advertised_headers` names, at `advertised_at`); None when it learned and was
        told nothing beyond its configuration."""
        out: dict[str, Any] = {}
        for key, dim in (("rpm", self.requests), ("tpm", self.tokens)):
            rate = dim.per_minute_rate
            if rate is not None and dim.learned:
                out[key] = round(rate, 3)
        told = self.advertised
        if told is not None:
            shown = {
                what: [limit, window]
                for what, limit, window in (
                    ("requests", told.limit_requests, told.window_requests_s),
                    ("tokens", told.limit_tokens, told.window_tokens_s),
                )
                if limit
            }
            out["advertised"] = shown
            out["advertised_headers"] = {
                what: header
                for what, header in (
                    ("requests", told.header_requests),
                    ("tokens", told.header_tokens),
                )
                if header and what in shown
            }
            out["advertised_at"] = self.advertised_at
        return out or None

    @property
    def counts_tokens(self) -> bool:
        """Whether requests need a token estimate: only a lane pacing tokens. Lanes without
        one skip tiktoken entirely."""
        return self.tokens.pacer is not None

    @property
    def breaker_state(self) -> BreakerState:
        return self.breaker.state(self.clock())

    def _wait(self, tokens: float, now: float) -> float:
        waits = [self.pause_until - now, self.slow_start.wait_time(self.stats.attempts, now)]
        if self.requests.pacer:
            waits.append(self.requests.pacer.wait_time(1, now))
        if self.tokens.pacer:
            waits.append(self.tokens.pacer.wait_time(tokens, now))
        return max(waits)

    async def acquire(self, tokens: float) -> Ticket:
        """Wait until a request of `tokens` estimated tokens may be sent, then reserve it."""
        if not self._gate.locked():
            # Nobody is waiting out an interval: a request that may leave now leaves without
            # queueing. Queued, it would pass the gate one worker per event-loop turn, and at
            # 0 ms latency the queue never drains: one send per turn for the whole run.
            ticket, _ = self._admit(tokens)
            if ticket is not None:
                return ticket
        async with self._gate:
            while True:
                ticket, wait = self._admit(tokens)
                if ticket is not None:
                    return ticket
                if wait <= 0:  # free to leave but for the in-flight limit: the next answer
                    await self._next_answer()
                    continue
                step = min(wait, MAX_POLL_S)
                self.stats.wait_s += step
                await self.sleep(step)

    def _admit(self, tokens: float) -> tuple[Ticket | None, float]:
        """A ticket if a request of `tokens` may leave now (reserved), else how long to wait
        (0: until an answer frees a place under the in-flight limit or window)."""
        if self.stop_reason:
            raise LaneStopped(self.stop_reason)
        now = self.clock()
        if self.refusals.siblings_from is not None and now >= self.pause_until:
            self._conclude(self.refusals.resumed())
        wait = self._wait(tokens, now)
        if wait <= 0 and self.sending >= self.limits.concurrency:
            # The scheduler may drive more chains than `concurrency` (a call waiting out its own
            # retry lends its slot), so the in-flight limit is kept here. Checked before the
            # breaker, whose half-open answer makes the caller its probe.
            return None, 0.0
        if wait <= 0:
            wait = self.breaker.wait_time(now)
        if wait > 0:
            return None, wait
        if self.requests.pacer:
            self.requests.pacer.take(1, now)
        elif self.window.full(self.stats.in_flight):
            return None, 0.0
        else:
            self._recent_sends.append(now)
            while self._recent_sends[0] <= now - RECENT_SENDS_S:
                self._recent_sends.popleft()
        if self.tokens.pacer:
            self.tokens.pacer.take(tokens, now)
        if not self.stats.attempts:
            self.requests.sending_from(now)
            self.tokens.sending_from(now)
        self.stats.in_flight += 1
        self.stats.attempts += 1
        self.sending += 1
        return Ticket(now, tokens), 0.0

    async def _next_answer(self) -> None:
        """Wait until a request of this lane is answered, or the lane is stopped (a full window
        means requests are in flight, and each ends by its answer or its timeout)."""
        self._answered.clear()
        await self._answered.wait()

    def release(
        self, ticket: Ticket, used_tokens: int | None, *, provider_counted: bool = False
    ) -> None:
        """The request is over. Without the provider's own count of the tokens left
        (`provider_counted`), give back what was reserved above what it used; with it, the
        provider's figure (already applied by observe()) is the truth and nothing is given back
        (OpenAI-style limits charge max_tokens whatever the answer's length)."""
        self.stats.in_flight -= 1
        self.sending -= 1
        self._answered.set()
        if provider_counted or self.tokens.pacer is None or used_tokens is None:
            return
        if used_tokens < ticket.tokens:
            self.tokens.pacer.give_back(ticket.tokens - used_tokens)

    def accepted(self, ticket: Ticket) -> None:
        """The provider answered without a 429 (whatever the answer): burst is earned."""
        now = self.clock()
        if self.requests.pacer is None:
            left = ticket.sent_at if ticket.left_at is None else ticket.left_at
            self.window.answered(now - left, self.stats.in_flight, now)
        if self.refusals.capacity:
            self.requests.lift(now)
        self.requests.accepted_one(1.0, now)
        self.tokens.accepted_one(max(1.0, ticket.tokens), now)
        self._conclude(self.refusals.answered(ticket.sent_at, refused=False))

    def refused(
        self,
        ticket: Ticket,
        snapshot: RateLimitSnapshot | None,
        wait_s: float | None,
        *,
        capacity: bool = False,
    ) -> bool:
        """A 429 for the request of `ticket`. A limit's: pause the lane as long as the provider
        asked (or stop it when that is past the cap), cut the rate of the limit it hit, and
        return True. The provider's capacity (it said so: `capacity`; or the lane found that
        its 429s keep their share whatever its rate, unless these headers show a limit run
        out): leave the lane alone and return False, the request waits on its own."""
        self.stats.rate_limited += 1
        now = self.clock()
        limit_said = snapshot is not None and 0 in (
            snapshot.remaining_requests,
            snapshot.remaining_tokens,
        )
        judged = self.refusals.capacity or self.refusals.scattered
        if capacity or (judged and not limit_said):
            verdict = self.refusals.answered(ticket.sent_at, refused=True)
            if verdict is Verdict.LIMIT and not capacity:
                self._limit_found(ticket.sent_at, now)
            else:
                self.stats.capacity_refused += 1
                self._conclude(verdict)
            return False
        self.pause(DEFAULT_429_PAUSE_S if wait_s is None else wait_s)
        if self.stop_reason:
            return True
        ramp = self.slow_start.rate(now)
        if ramp is None and self.requests.pacer is None and self._recent_sends:
            ramp = len(self._recent_sends) / RECENT_SENDS_S
        self.slow_start.finish()
        resume_at = max(now, self.pause_until)
        # Headers say which limit ran out; without them, the request rate is the one to cut
        # (fewer requests also means fewer tokens).
        tokens_hit = snapshot is not None and snapshot.remaining_tokens == 0
        before = None if self.refusals.testing or tokens_hit else deepcopy(self.requests)
        if not tokens_hit or (snapshot is not None and snapshot.remaining_requests == 0):
            soon = self.requests.cut_recently(now)
            cut = self.requests.refused(now, ticket.sent_at, resume_at, ramp)
            unpaced = before is not None and before.pacer is None
            if (
                cut
                and before is not None
                and self.refusals.cut(resume_at, ticket.sent_at if unpaced else None)
            ):
                self._rate_before_test, self._sending_at_test = before, ramp
            elif cut and self.requests.probed_from is not None and self.requests.ceiling is None:
                # Read as capacity, a probe's 429s would undo the cut: harmless for a lane that
                # knows its limit (back to 98 % of it), a storm for one that does not (unpaced).
                self.refusals.probed(self.requests.probed_from, now)
            elif cut and soon:
                self.refusals.recut(resume_at)
        if tokens_hit:
            self.tokens.refused(now, ticket.sent_at, resume_at)
        self._conclude(self.refusals.answered(ticket.sent_at, refused=True))
        return True

    def _limit_found(self, sent_at: float, now: float) -> None:
        """In capacity mode the share of 429s climbed well above the capacity share: a limit
        answers at this rate. The lane cuts as for a limit's 429 and stays in capacity mode.
        It does not pause: each 429's own wait holds its request, as in capacity mode, and
        the cut slows the lane. Leaving capacity mode instead made every capacity 429 after
        it pause the lane and cut again: a 500/s limit with 3 % of capacity 429s ran at
        20-180/s (docs/performance.md)."""
        self.slow_start.finish()
        rate = self.requests
        if rate.pacer is not None:
            sending: float | None = rate.pacer.rate
        elif self._recent_sends:
            # Unpaced since the verdict, often a fraction of a second: what it sent over the
            # time it took (over a whole second, 1,560/s read as 156/s).
            span = max(now - self._recent_sends[0], MIN_SEND_SPAN_S)
            sending = len(self._recent_sends) / span
        else:
            sending = None
        # What the provider accepted is the share of the window that found the limit: the
        # lane's count of it since its test began holds the pauses of the test's 429s (a
        # 500/s limit read as 176/s, and the climb back took 14 s).
        n, refused = self.refusals.window()
        accepted = None if sending is None else sending * (n - refused) / n
        if rate.limit_found(now, sent_at, sending, accepted):
            self.refusals.limit_cut(now)

    def _conclude(self, verdict: Verdict | None) -> None:
        """Act on what the refusal test concluded. Capacity (the 429s kept their share after
        the rate was cut): back to the rate the lane ran at before the cut (it probes up from
        there, as after any cut). A scattered first refusal of a lane that knew no limit: the
        test goes on at a shallow cut of what the lane was sending, not at the deep one."""
        if verdict is Verdict.CAPACITY:
            before, self._rate_before_test = self._rate_before_test, None
            if before is not None:
                # The count of what the provider accepted goes on: the copy stopped at the cut,
                # and the next limit's estimate, over the span since it began, read the
                # answers of the whole test as missing (a 1 s window whose headers claim twice
                # its limit: cut to 64/s, two thirds of it, for seconds).
                before.counting_since = self.requests.counting_since
                before.counted = self.requests.counted
                self.requests = before
        elif verdict is Verdict.SCATTERED and self._sending_at_test and self.requests.pacer:
            shallow = self._sending_at_test * DECREASE
            if shallow > self.requests.pacer.rate:
                self.requests.pacer.set_rate(shallow, self.clock())

    def retry_wait(self, seconds: float) -> float:
        """How long one request waits before its own retry when the provider asked `seconds`:
        that, plus a little jitter (as a pause), so retries do not land all at once."""
        return seconds + self._rng.uniform(0.0, min(1.0, seconds * PAUSE_JITTER))

    def wait_cause(self) -> str:
        """Why the lane's requests wait now, in words (progress, `tally status`, the view)."""
        if self.stop_reason:
            return "stopped"
        now = self.clock()
        breaker = self.breaker.state(now)
        if breaker is BreakerState.OPEN:
            assert self.breaker.opened_at is not None
            left = self.breaker.opened_at + self.breaker.cooldown_s - now
            return f"circuit open (outage; next probe in {left:.0f} s)"
        if breaker is BreakerState.HALF_OPEN:
            return "circuit half-open (outage; a probe is out)"
        if self.pause_until > now:
            return f"paused (rate limit; {self.pause_until - now:.1f} s left)"
        notes = []
        if self.stats.retry_waiting:
            notes.append(f"{self.stats.retry_waiting} waiting out their own Retry-After/backoff")
        rate = self.requests.per_minute_rate
        if rate is not None and self.requests.learned:
            notes.append(f"learned rate {rate:,.0f}/min")
        if self.refusals.capacity:
            notes.append("429s taken as provider capacity")
        return "running" + (f" ({'; '.join(notes)})" if notes else "")

    def pause(self, seconds: float) -> None:
        """Hold every call of this lane for the `seconds` the provider asked, plus a little
        jitter; a wait past the cap stops the lane instead, naming it."""
        if seconds > MAX_PROVIDER_WAIT_S:
            self.stop(
                f"{self.name}: the provider asked to wait {_duration(seconds)}, longer than "
                f"{_duration(MAX_PROVIDER_WAIT_S)}: a quota (daily or monthly) rather than a "
                "rate limit; `tally resume` the run once it has reset"
            )
            return
        if seconds <= 0:
            return
        jitter = self._rng.uniform(0.0, min(1.0, seconds * PAUSE_JITTER))
        self.pause_until = max(self.pause_until, self.clock() + seconds + jitter)

    def observe(
        self,
        snapshot: RateLimitSnapshot | None,
        *,
        schedule: bool = True,
        sent_at: float | None = None,
    ) -> None:
        """Trust the provider's own account of its limits and of what is left in its window.

        What was left when the request was sent (`sent_at`) caps the pacer's allowance, so an
        exhausted limit holds the next request until one interval after that send. The reset
        time is not a schedule: OpenAI and Anthropic report when the limit is back to its
        *initial* state (a whole window, a full bucket), and pausing for it on every exhausted
        limit halved the throughput against a sliding window. Only a limit the lane cannot
        pace (no rate known) pauses until its reset; a 429 passes `schedule=False`, because its
        own wait (Retry-After first) is what `refused` pauses for."""
        if snapshot is None:
            return
        if snapshot.limit_requests or snapshot.limit_tokens:
            self.advertised = snapshot
            self.advertised_at = time.time()
        now = self.clock()
        # A limit over a window longer than a minute (a daily quota) is no pace.
        rpm = snapshot.per_minute(snapshot.limit_requests, snapshot.window_requests_s)
        tpm = snapshot.per_minute(snapshot.limit_tokens, snapshot.window_tokens_s)
        if rpm:
            unpaced = self.requests.pacer is None
            self.requests.adopt(rpm, now)
            self.slow_start.finish()
            if unpaced and self.requests.pacer is not None:
                # What the slow start sent before the limit was known counts against it.
                self.requests.pacer.replay(self._recent_sends, now)
        if tpm:
            self.tokens.adopt(tpm, now)
        for dim, remaining, reset in (
            (self.requests, snapshot.remaining_requests, snapshot.reset_requests_s),
            (self.tokens, snapshot.remaining_tokens, snapshot.reset_tokens_s),
        ):
            if remaining is None:
                continue
            if dim.pacer is not None:
                dim.pacer.drain_to(remaining, now, as_of=sent_at)
            # A reset past the cap is not a schedule anyone can keep (a bogus header, or a
            # quota whose 429 will say so); it never pauses the lane on its own.
            elif schedule and remaining == 0 and reset and reset <= MAX_PROVIDER_WAIT_S:
                self.pause(reset)

    def success(self) -> None:
        self.breaker.success()

    def failure(self) -> None:
        self.breaker.failure(self.clock())

    def stop(self, reason: str) -> None:
        if not self.stop_reason:
            self.stop_reason = reason
        self._answered.set()


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "forever"
    if seconds >= 86400:
        return f"{seconds / 86400:,.0f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds:,.0f} s"
