"""Pure timing logic with an injected clock and sleep: no real waiting."""

from __future__ import annotations

import pytest

from evaltally.config import Limits
from evaltally.records import RateLimitSnapshot
from evaltally.runner.breaker import BreakerState, CircuitBreaker
from evaltally.runner.buckets import TokenBucket
from evaltally.runner.lane import Lane, LaneStopped


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_bucket_paces_to_rate_with_one_second_burst() -> None:
    bucket = TokenBucket.per_minute(600, now=0.0)
    assert bucket.capacity == 10
    for _ in range(10):
        assert bucket.wait_time(1, 0.0) == 0
        bucket.take(1, 0.0)
    assert bucket.wait_time(1, 0.0) == pytest.approx(0.1)
    assert bucket.wait_time(1, 0.1) == pytest.approx(0.0)


def test_oversized_cost_waits_for_full_bucket_then_goes_into_debt() -> None:
    bucket = TokenBucket.per_minute(60, now=0.0)  # 1/s, capacity 1
    assert bucket.wait_time(5, 0.0) == 0
    bucket.take(5, 0.0)
    assert bucket.wait_time(1, 0.0) == pytest.approx(5.0)


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
    t = FakeTime()
    lane = Lane("x", Limits(rpm=6000), clock=t.clock, sleep=t.sleep)
    lane.pause(2.0)
    await lane.acquire(0)
    assert t.now >= 2.0
    assert lane.stats.wait_s == pytest.approx(t.now)


async def test_lane_rpm_pacing_without_real_time() -> None:
    t = FakeTime()
    lane = Lane("x", Limits(rpm=120), clock=t.clock, sleep=t.sleep)
    for _ in range(12):
        await lane.acquire(0)
        lane.release(0, None)
    # 2/s with a burst of 2: the 12th request leaves after 5 s.
    assert t.now == pytest.approx(5.0)


async def test_lane_adopts_advertised_limit_and_remaining() -> None:
    t = FakeTime()
    lane = Lane("x", Limits(), clock=t.clock, sleep=t.sleep)
    lane.observe(RateLimitSnapshot(limit_requests=60, remaining_requests=0, reset_requests_s=3.0))
    assert lane.rpm is not None and lane.rpm.rate_per_s == 1.0
    await lane.acquire(0)
    assert t.now >= 3.0


async def test_stopped_lane_refuses() -> None:
    lane = Lane("x", Limits())
    lane.stop("credentials refused")
    with pytest.raises(LaneStopped, match="credentials refused"):
        await lane.acquire(0)
