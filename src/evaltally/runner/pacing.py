"""When a lane's next request may leave: even spacing, an earned burst, learning from 429s.

Pure timing strategies: every method takes `now` and nothing sleeps, so the schedule is tested
with an injected clock (tests/core/test_pacing.py).

Providers enforce a per-minute limit in different ways (token buckets of various sizes, fixed
windows, sliding windows of 1 s to 60 s) and do not say which. A schedule that is safe under all
of them spaces requests evenly a little under the limit (`HEADROOM`), so no window of any length
holds more than its share, and sends a burst only when it has been earned: the allowance starts
at one request and grows while the provider keeps answering without a 429.

A limit nobody told us about (or one tighter than configured or advertised) is found from 429s:
each refusal cuts the rate to what the provider was seen to accept (counted over the whole time
since the lane began, or since its first refusal, plus the wait it asks for: a window's worth,
whatever the window's length; fewer than MIN_COUNT accepted say nothing, and the cut is then a
share of what the lane was sending) and remembers where it was refused; a clean period lets it
climb back by small multiplicative steps no higher than just under that point. A refused step
goes back to the rate that ran clean, and a later 429 at about the rate of that step is the same
limit: the rate goes just under it (HOLD), not a tenth below.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Self

HEADROOM = 0.98
"""Pace this share of a known limit: arrival jitter of a few ms must not put one request too
many into a provider's window (10 per second leaves 20 ms of slack per second)."""

MAX_BURST_S = 1.0 - HEADROOM
"""The earned burst never exceeds the headroom of a one-second window (2 % of the rate per
second, at least one request): after an event-loop stall the lane catches up that much at once,
and a provider counting any one-second window still sees no more than its limit."""

DECREASE = 0.9
"""Without an estimate of what the provider accepts, a 429 cuts the rate to this share of the
rate that was refused. Gentle, because one 429 after a long clean run at a known limit is
usually arrival jitter; a second one within RECOVER_AFTER_S cuts by FAST_DECREASE."""

FAST_DECREASE = 0.5
"""The cut when the last one was less than RECOVER_AFTER_S ago (too soon to measure anything):
the rate is far above the limit (a provider whose large burst made it look fast), so it halves.
No cut of a paced lane goes deeper than this, whatever the estimate: an estimate counts the
time the lane had nothing to send as time the provider refused."""

HOLD = 0.99
"""After a 429 the rate recovers to at most this share of the rate that was refused, so a limit
found once is held instead of being hit again every few seconds."""

RECOVER_AFTER_S = 1.0
"""Clean time (no 429) before each additive step back up."""

RECOVER_STEP = 0.05
MAX_RECOVER_STEP = 0.2
"""Each step goes halfway back to the rate last refused (binary search for the limit), by at
least RECOVER_STEP and at most MAX_RECOVER_STEP of the current rate: a cut that went too deep
(an estimate from a Retry-After in whole seconds, a halving) is undone within a few seconds,
and a step near the refused rate overshoots by a few percent only."""

MAX_PATIENCE_S = 16.0
"""A probe refused within 5 % of where the last one was refused found the same limit: the clean
time before the next step back up doubles (up to this), so a lane that knows its limit stops
paying a 429 every few seconds to confirm it."""

AGAIN = 0.05
"""A refusal within this share of the rate last refused found the same limit again; one within
this share under the rate of the last refused step up is at the limit that step found."""

MIN_SPAN_S = 1.0
"""The first refusal counts everything accepted since the lane began over at least this long:
no provider enforces a window shorter than a second, so that much was allowed per second."""

MIN_COUNT = 5
"""A later refusal estimates from what was accepted since the first (a bucket drained, or a
window full, at both), if that is at least this many; fewer say too little (it then halves,
or cuts by DECREASE)."""

HORIZON_S = 30.0
"""The count restarts at a refusal once it spans this long, so the estimate follows a limit
that changes during a long run."""

MIN_RATE_PER_S = 1.0 / 60.0
"""Never slower than one request (or token) a minute."""

SLOW_START_RATE = 100.0
SLOW_START_STEP_S = 0.025
SLOW_START_STEPS = 12
"""A lane that knows no request limit starts at SLOW_START_RATE requests/s and doubles it every
SLOW_START_STEP_S (for at most SLOW_START_STEPS steps, ~400,000/s, then it is unpaced)."""


@dataclass
class Pacer:
    """A continuously refilled allowance of `rate` units/s holding at most `capacity` units.

    It starts with one unit and a capacity of one (requests leave evenly spaced); `grow` raises
    the capacity, which only fills while the lane has nothing to send, so a lane that is always
    busy is never given a burst on top of its rate. A cost above the capacity is admitted once
    the allowance is full and leaves it in debt: an oversized request is slowed, never starved.
    """

    rate: float
    capacity: float = 1.0
    level: float = 1.0
    updated: float = 0.0

    @classmethod
    def start(cls, rate: float, now: float) -> Pacer:
        return cls(rate=max(rate, MIN_RATE_PER_S), updated=now)

    def _refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
            self.updated = now

    def wait_time(self, cost: float, now: float) -> float:
        """Seconds until `cost` may be taken (0: now)."""
        self._refill(now)
        need = min(cost, self.capacity)
        # The tolerance keeps float rounding from asking for a wait too small to move a clock.
        if self.level >= need - 1e-9:
            return 0.0
        return max(0.0, self.updated - now) + (need - self.level) / self.rate

    def full(self, now: float) -> bool:
        """Whether the allowance is full: nothing waits on this pacer (it holds nothing back)."""
        self._refill(now)
        return self.level >= self.capacity - 1e-9

    def take(self, cost: float, now: float) -> None:
        self._refill(now)
        self.level -= cost

    def give_back(self, amount: float) -> None:
        """Return an over-reservation (estimated tokens above what the API reported)."""
        self.level = min(self.capacity, self.level + amount)

    def drain_to(self, remaining: float, now: float, as_of: float | None = None) -> None:
        """The provider said only `remaining` was left `as_of` (when the request it answered
        was sent): never believe we have more than that plus what has refilled since."""
        self._refill(now)
        since = 0.0 if as_of is None else max(0.0, now - as_of) * self.rate
        self.level = min(self.level, remaining + since)

    def replay(self, sent: Iterable[float], now: float) -> None:
        """Requests that left before this pacer existed (times in order) count against it as if
        it had paced them: the next one leaves when their even spacing would let it."""
        due = float("-inf")
        for at in sent:
            due = max(due, at) + 1.0 / self.rate
        self._refill(now)
        self.level = min(self.level, 1.0 - max(0.0, due - now) * self.rate)

    def grow(self, amount: float) -> None:
        self.capacity = min(max(1.0, self.rate * MAX_BURST_S), self.capacity + amount)

    def set_rate(self, rate: float, now: float) -> None:
        self._refill(now)
        self.rate = max(rate, MIN_RATE_PER_S)
        self.capacity = min(self.capacity, max(1.0, self.rate * MAX_BURST_S))
        self.level = min(self.level, self.capacity)

    def refused(self, resume_at: float) -> None:
        """A 429: no burst until earned again, and nothing accrues before `resume_at`."""
        self.capacity = 1.0
        self.level = min(self.level, 0.0)
        self.updated = max(self.updated, resume_at)


@dataclass
class AdaptiveRate:
    """One dimension of a lane (requests or tokens): its pacer and what it learned.

    `ceiling` is the known limit (configured, or advertised by the provider, whichever is
    lower) times HEADROOM; `hold` is just under the rate a 429 last refused. The pacer never
    runs above either. Rates are per second.
    """

    ceiling: float | None = None
    hold: float | None = None
    pacer: Pacer | None = None
    learned: bool = False
    """Whether the rate came from the provider (advertised, or found by 429s)."""
    cut_at: float = float("-inf")
    clean_since: float = 0.0
    counting_since: float | None = None
    """Start of the span whose accepted requests (or tokens), `counted`, estimate the limit at
    the next 429: the lane's first send, then its first refusal (see HORIZON_S)."""
    counted: float = 0.0
    cuts: int = 0
    refused_rate: float | None = None
    stepped_from: float | None = None
    """The rate before the last step up since the last cut (it ran clean there)."""
    stepped_at: float = float("-inf")
    """When the last step up was made."""
    probed_from: float | None = None
    """When the last cut was the limit a step up found: when what answered it began to be sent
    (the step, or the refused request at that limit); None for a cut of any other kind."""
    probe_refused: float | None = None
    """The rate of the last refused step up: about where the limit is."""
    patience: float = RECOVER_AFTER_S

    @classmethod
    def per_minute(cls, limit: float | None, now: float, start: float | None = None) -> Self:
        """A dimension with a configured `limit` (per minute, or None) that resumes at `start`
        (per minute: the rate an earlier session settled on), if given."""
        rate = cls(ceiling=limit / 60.0 * HEADROOM if limit else None, clean_since=now)
        if start:
            rate.hold = start / 60.0
            rate.learned = True
        target = rate.target
        if target is not None:
            rate.pacer = Pacer.start(target, now)
        return rate

    @property
    def target(self) -> float | None:
        known = [r for r in (self.ceiling, self.hold) if r is not None]
        return min(known) if known else None

    @property
    def per_minute_rate(self) -> float | None:
        """The rate the pacer runs at now, per minute (None: unpaced)."""
        return self.pacer.rate * 60.0 if self.pacer else None

    def adopt(self, limit_per_min: float, now: float) -> None:
        """The provider advertises `limit_per_min`: a ceiling unless one lower is known."""
        ceiling = limit_per_min / 60.0 * HEADROOM
        if self.ceiling is not None and self.ceiling <= ceiling:
            return
        self.ceiling = ceiling
        self.learned = True
        target = self.target
        assert target is not None
        if self.pacer is None:
            self.pacer = Pacer.start(target, now)
        elif self.pacer.rate > target:
            self.pacer.set_rate(target, now)

    def sending_from(self, now: float) -> None:
        """The lane sent its first request: the span of the first estimate starts here."""
        if self.counting_since is None:
            self.counting_since = now

    def accepted_one(self, cost: float, now: float) -> None:
        """The provider answered without a 429: earn burst, and recover after a clean period."""
        self.counted += cost
        pacer, target = self.pacer, self.target
        if pacer is None or target is None:
            return
        pacer.grow(cost)
        if pacer.rate < target and now - self.clean_since >= self.patience:
            step = min(
                max((target - pacer.rate) / 2, RECOVER_STEP * pacer.rate),
                MAX_RECOVER_STEP * pacer.rate,
            )
            self._step(pacer, min(target, pacer.rate + step), now)

    def _step(self, pacer: Pacer, rate: float, now: float) -> None:
        """Step the rate up to `rate` after a clean period, remembering the rate it left (a
        limit's 429 at the new rate goes back there)."""
        self.stepped_from, self.stepped_at = pacer.rate, now
        pacer.set_rate(rate, now)
        self.clean_since = now

    def lift(self, now: float) -> None:
        """The lane's 429s were found to be the provider's capacity, not this rate's: the hold
        that earlier ones set is no limit. While the pacer is what holds the lane back, each
        clean patience raises it by MAX_RECOVER_STEP (above the hold, up to the ceiling), so
        the lane climbs back to what it sent before until a limit answers (the refusal test's
        relapse). Without this a lane cut by a run of 429s amid capacity refusals stayed at
        the rate of that cut for good (docs/performance.md). Each raise is a step up like
        accepted_one's (`_step`): a limit's 429 at it goes back to the rate before it, not to
        one a step long before had left (a lane at 585/s under a 500/s limit was cut to 21/s)."""
        pacer, hold = self.pacer, self.hold
        if pacer is None or hold is None or pacer.full(now):
            return
        top = hold * (1 + MAX_RECOVER_STEP)
        if self.ceiling is not None:
            top = min(top, self.ceiling)
        if (
            pacer.rate >= hold * (1 - 1e-9)
            and top > hold
            and now - self.clean_since >= self.patience
        ):
            self.hold = top
            self._step(pacer, top, now)

    def refused(
        self,
        now: float,
        sent_at: float,
        resume_at: float,
        sending: float | None = None,
        accepted: float | None = None,
    ) -> bool:
        """A 429 for a request sent at `sent_at`; the lane resumes at `resume_at`; an unpaced
        lane was sending about `sending` per second (its slow start, or what it measured).
        `accepted`: what the provider accepted per second of what was sent just before, if
        the caller measured it; it then stands for this dimension's own count.
        Returns whether the rate was cut (requests sent before the last cut were paced at the
        old rate and teach nothing new)."""
        self.clean_since = resume_at
        if self.pacer is not None:
            self.pacer.refused(resume_at)
        if sent_at < self.cut_at:
            return False
        seen = self._estimate(now, resume_at)
        if accepted is not None:
            seen = accepted
        self.probed_from = None
        if self.pacer is not None:
            current = self.pacer.rate
            soon = self.cut_recently(now)
            if self.stepped_from is not None and not soon:
                # A step up was refused after a clean period: back to the rate that was clean
                # (what was accepted meanwhile is only what the lane sent, below the limit).
                new = min(self.stepped_from, current * HOLD)
                self.probed_from, self.probe_refused = self.stepped_at, current
            elif self._at_probed_limit(current) and not soon:
                # At the limit a refused step found (arrival jitter puts one request too many
                # into its window now and then): just under this rate, not a tenth below it.
                new = current * HOLD
                self.probed_from = sent_at
            elif seen is None:
                new = current * (FAST_DECREASE if soon else DECREASE)
            else:
                deepest = FAST_DECREASE if soon or self.cuts == 0 else DECREASE
                new = max(current * deepest, min(seen * HEADROOM, current * HOLD))
        else:
            # Unpaced: what the provider was seen to accept is the best estimate of its limit,
            # and it refused what the lane was sending.
            known = [r for r in (seen and seen * HEADROOM, sending and sending * DECREASE) if r]
            if not known:
                return False
            new = min(known)
            current = max(sending or 0.0, new / HEADROOM)
        self.cut_at = now
        self.cuts += 1
        self.stepped_from = None
        again = self.refused_rate is not None and abs(current / self.refused_rate - 1) <= AGAIN
        self.patience = min(2 * self.patience, MAX_PATIENCE_S) if again else RECOVER_AFTER_S
        self.refused_rate = current
        self.learned = True
        self.hold = min(self.hold or current, current * HOLD)
        if self.pacer is None:
            self.pacer = Pacer.start(new, resume_at)
        else:
            self.pacer.set_rate(new, resume_at)
        return True

    def limit_found(
        self, now: float, sent_at: float, sending: float | None, accepted: float | None
    ) -> bool:
        """A limit found among capacity refusals at `now` (the lane goes on without a pause):
        cut as for its 429 (`refused`), hold the rate cut to, and wait twice as long before the
        next step up. A limit's excess share under what finds it goes unseen there, so
        stepping halfway back to the refused rate, as under a limit, sat above it (429s went
        from 500 to up to 1,900 on 12,000 calls). Returns whether the rate was cut."""
        patience = self.patience
        if not self.refused(now, sent_at, now, sending, accepted):
            return False
        assert self.pacer is not None
        self.hold = min(self.hold or self.pacer.rate, self.pacer.rate)
        self.patience = min(2 * patience, MAX_PATIENCE_S)
        return True

    def cut_recently(self, now: float) -> bool:
        """Whether the last cut was under RECOVER_AFTER_S ago: too soon to have measured
        anything at the rate it set (the lane was still far above the limit)."""
        return now - self.cut_at < RECOVER_AFTER_S

    def _at_probed_limit(self, rate: float) -> bool:
        """Whether `rate` is within AGAIN under (or above) the rate of the last refused step."""
        return self.probe_refused is not None and rate >= self.probe_refused * (1 - AGAIN)

    def _estimate(self, now: float, resume_at: float) -> float | None:
        """What the provider accepted per second over the span being counted, the wait it
        asks for included (the rest of its window, or the refill of its bucket). The span
        restarts when the lane resumes after its first refusal (the wait that refusal asked
        for was spent on what came before: counted in, a sliding window's rate looks halved),
        and at any refusal once it reaches HORIZON_S."""
        since, counted = self.counting_since, self.counted
        if since is None:
            return None
        span = now - since + max(0.0, resume_at - now)
        if self.cuts == 0 or span >= HORIZON_S:
            self.counting_since, self.counted = resume_at, 0.0
        if self.cuts == 0:
            return counted / max(span, MIN_SPAN_S) if counted >= MIN_COUNT else None
        return counted / span if counted >= MIN_COUNT and span > 0 else None


@dataclass
class SlowStart:
    """The send rate of a lane that knows no request limit yet: SLOW_START_RATE at first,
    doubling every SLOW_START_STEP_S, until `finish()` (a limit became known, or a 429 came).

    A ramp in rate, not in requests in flight: at 0 ms latency an in-flight cap limits nothing,
    while a rate ramp leaves few requests out when the first 429 arrives; at 200 ms latency a
    concurrency of 64 is reached in about 90 ms instead of one full latency.
    """

    started: float | None = None
    done: bool = False

    def _allowed(self, elapsed: float) -> float:
        """Requests that may have left `elapsed` seconds after the first (the first is free)."""
        scale = SLOW_START_RATE * SLOW_START_STEP_S / math.log(2)
        return 1.0 + scale * (math.pow(2.0, elapsed / SLOW_START_STEP_S) - 1.0)

    def wait_time(self, sent: int, now: float) -> float:
        """Seconds until one more request may leave, `sent` having left so far (0: now)."""
        if self.done:
            return 0.0
        if self.started is None:
            self.started = now
        elapsed = now - self.started
        if elapsed >= SLOW_START_STEP_S * SLOW_START_STEPS:
            self.done = True
            return 0.0
        if sent < self._allowed(elapsed):
            return 0.0
        scale = SLOW_START_RATE * SLOW_START_STEP_S / math.log(2)
        due = SLOW_START_STEP_S * math.log2((sent + 1 - 1.0) / scale + 1.0)
        return max(1e-6, due - elapsed)

    def rate(self, now: float) -> float | None:
        """The ramp's rate now (None once it is over: the lane is unpaced)."""
        if self.done or self.started is None:
            return None if self.done else SLOW_START_RATE
        return SLOW_START_RATE * math.pow(2.0, (now - self.started) / SLOW_START_STEP_S)

    def finish(self) -> None:
        self.done = True
