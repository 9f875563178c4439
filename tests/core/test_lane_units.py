"""Pure timing logic with an injected clock and sleep: no real waiting."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import pytest

from evaltally.config import Limits
from evaltally.records import RateLimitSnapshot
from evaltally.runner.breaker import BreakerState, CircuitBreaker
from evaltally.runner.clock import VirtualClock
from evaltally.runner.lane import PAUSE_JITTER, Lane, LaneStopped, Ticket
from evaltally.runner.pacing import DECREASE, HEADROOM, SLOW_START_RATE


def test_breaker_opens_probes_and_closes() -> None:
    br = CircuitBreaker(threshold=3, cooldown_s=10)
    for _ in range(3):
        br.failure(0.0)
    assert br.state(1.0) is BreakerState.OPEN
    assert br.wait_time(1.0) == pytest.approx(9.0)
    assert br.wait_time(10.0) == 0  # the probe
    assert br.wait_time(10.0) > 0  # others wait for the probe's verdict
    br.failure(10.5)
    assert br.state(11.0) is BreakerState.OPEN and br.times_opened == 2
    assert br.wait_time(20.5) == 0
    br.success()
    assert br.state(20.6) is BreakerState.CLOSED


async def test_lane_pause_holds_every_call() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(rpm=6000), clock=t.monotonic, sleep=t.sleep)
    lane.pause(2.0)
    await lane.acquire(0)
    assert t.now >= 2.0
    assert lane.stats.wait_s == pytest.approx(t.now)


async def test_lane_rpm_pacing_without_real_time() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(rpm=120), clock=t.monotonic, sleep=t.sleep)
    for _ in range(12):
        lane.release(await lane.acquire(0), None)
    # Just under 2/s, evenly spaced from the first request: the 12th leaves after 11 gaps.
    assert t.now == pytest.approx(11 / (2 * HEADROOM))


async def test_lane_429_pauses_as_asked_with_jitter_and_cuts_rate() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(rpm=6000), clock=t.monotonic, sleep=t.sleep, rng=random.Random(1))
    before = lane.requests.per_minute_rate
    ticket = await lane.acquire(0)
    lane.release(ticket, None)
    lane.refused(ticket, None, 2.0)
    assert 2.0 < lane.pause_until <= 2.0 * (1 + PAUSE_JITTER)
    assert lane.requests.per_minute_rate == pytest.approx((before or 0) * DECREASE)
    await lane.acquire(0)
    assert t.now >= 2.0


async def test_wait_past_the_cap_stops_the_lane_with_the_reason() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(), clock=t.monotonic, sleep=t.sleep)
    ticket = await lane.acquire(0)
    lane.release(ticket, None)
    lane.refused(ticket, None, 999999 * 3600.0)
    assert lane.stop_reason is not None and "quota" in lane.stop_reason
    assert lane.pause_until == 0.0
    with pytest.raises(LaneStopped, match="longer than 600 s"):
        await lane.acquire(0)


def test_reset_header_past_the_cap_never_pauses_the_lane() -> None:
    lane = Lane("x", Limits())
    for reset in (999999 * 3600.0, float("inf"), 2.2e9):
        lane.observe(RateLimitSnapshot(remaining_requests=0, reset_requests_s=reset))
    assert lane.pause_until == 0.0 and lane.stop_reason is None


async def test_a_lane_without_limits_ramps_its_rate_up_and_a_429_ends_the_ramp() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(concurrency=64), clock=t.monotonic, sleep=t.sleep)
    tickets = [await lane.acquire(0) for _ in range(3)]
    assert 0 < tickets[1].sent_at <= 1 / SLOW_START_RATE
    lane.refused(tickets[-1], None, 0.0)
    assert lane.slow_start.done and lane.requests.pacer is not None


async def test_lane_adopts_advertised_limit_and_an_exhausted_limit_holds_one_interval() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(), clock=t.monotonic, sleep=t.sleep)
    lane.observe(RateLimitSnapshot(limit_requests=60, remaining_requests=0, reset_requests_s=30.0))
    assert lane.requests.per_minute_rate == pytest.approx(60 * HEADROOM)
    # Nothing left: the next request waits one interval of the rate, not the 30 s until the
    # limit is back to its initial state.
    await lane.acquire(0)
    assert t.now == pytest.approx(1 / HEADROOM)
    assert lane.pause_until == 0.0


async def test_exhausted_limit_without_a_rate_pauses_until_its_reset() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(), clock=t.monotonic, sleep=t.sleep, rng=random.Random(0))
    lane.observe(RateLimitSnapshot(remaining_requests=0, reset_requests_s=3.0))
    await lane.acquire(0)
    assert 3.0 <= t.now <= 3.0 * (1 + PAUSE_JITTER) + 0.5


async def test_stopped_lane_refuses() -> None:
    lane = Lane("x", Limits())
    lane.stop("credentials refused")
    with pytest.raises(LaneStopped, match="credentials refused"):
        await lane.acquire(0)


async def test_a_lane_without_limits_holds_its_window_until_an_answer() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(concurrency=64), clock=t.monotonic, sleep=t.sleep)
    first = await lane.acquire(0)
    t.now += 0.001
    lane.release(first, None)
    lane.accepted(first)
    tickets = [await lane.acquire(0) for _ in range(12)]
    # With a dozen out, answers take 50 times as long: requests are queueing somewhere.
    t.now += 0.05
    for ticket in tickets[:4]:
        lane.release(ticket, None)
        lane.accepted(ticket)
    limit = lane.window.limit
    assert limit is not None and lane.stats.in_flight > limit
    rest = tickets[4:]
    while lane.stats.in_flight > limit:  # answered, but latency says nothing new
        lane.release(rest.pop(), None)
    blocked = asyncio.create_task(lane.acquire(0))
    await asyncio.sleep(0.01)
    assert not blocked.done()  # the window is full
    lane.release(rest.pop(), None)
    assert isinstance(await asyncio.wait_for(blocked, 1.0), Ticket)


async def test_the_window_reads_latency_from_when_a_request_left() -> None:
    # Each request waits about a millisecond for its start row's commit, then is answered in
    # 1 ms. Read from when it was let through, that wait doubled the latency's floor, and the
    # window let twice as many out before it cut (more in flight at a first 429).
    t = VirtualClock()
    lane = Lane("x", Limits(concurrency=64), clock=t.monotonic, sleep=t.sleep)
    for _ in range(40):
        ticket = replace(await lane.acquire(0), left_at=t.now + 0.001)
        t.now += 0.002
        lane.release(ticket, None)
        lane.accepted(ticket)
    assert lane.window.smoothed == pytest.approx(0.001)


async def test_an_advertised_limit_counts_what_the_slow_start_already_sent() -> None:
    t = VirtualClock()
    lane = Lane("x", Limits(), clock=t.monotonic, sleep=t.sleep)
    sent = [await lane.acquire(0) for _ in range(3)]  # the slow start's first three, in 20 ms
    assert sent[-1].sent_at < 0.02
    lane.observe(RateLimitSnapshot(limit_requests=600), sent_at=0.0)
    # 600/min: the fourth leaves three intervals after the first, not at once.
    fourth = await lane.acquire(0)
    assert fourth.sent_at == pytest.approx(3 / (10 * HEADROOM))
