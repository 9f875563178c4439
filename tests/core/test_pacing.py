"""The pacing schedule with an injected clock: even spacing, earned burst, learning from 429s."""

from __future__ import annotations

import itertools

import pytest

from evaltally.runner.pacing import (
    DECREASE,
    FAST_DECREASE,
    HEADROOM,
    HOLD,
    MAX_BURST_S,
    RECOVER_AFTER_S,
    SLOW_START_RATE,
    SLOW_START_STEP_S,
    AdaptiveRate,
    Pacer,
    SlowStart,
)


def send_times(pacer: Pacer, n: int, cost: float = 1.0, start: float = 0.0) -> list[float]:
    """When n back-to-back requests leave (a lane that always has one waiting)."""
    now, times = start, []
    for _ in range(n):
        now += pacer.wait_time(cost, now)
        pacer.take(cost, now)
        times.append(now)
    return times


def test_requests_leave_evenly_spaced_from_the_first() -> None:
    times = send_times(Pacer.start(10.0, now=0.0), 21)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert times[0] == 0.0
    assert gaps == pytest.approx([0.1] * 20)


@pytest.mark.parametrize("window", [1.0, 10.0, 60.0])
def test_no_window_of_any_length_holds_more_than_its_share(window: float) -> None:
    # A provider allowing `rate x window` in any sliding window never refuses this schedule.
    rate = 600 / 60 * HEADROOM
    times = send_times(Pacer.start(rate, now=0.0), 1500)
    most = max(sum(1 for t in times if start <= t < start + window) for start in times)
    assert most <= 10 * window


def test_burst_is_earned_only_while_idle_and_capped() -> None:
    pacer = Pacer.start(1000.0, now=0.0)
    for _ in range(500):
        pacer.grow(1)
    assert pacer.capacity == pytest.approx(1000.0 * MAX_BURST_S)  # 20: the headroom of 1 s
    # Growing the allowance adds nothing to send now: a busy lane stays evenly spaced.
    pacer.take(1, 0.0)
    assert pacer.wait_time(1, 0.0) == pytest.approx(0.001)
    # After a second idle, the burst leaves at once, then spacing resumes.
    times = send_times(pacer, 21, start=1.0)
    assert times[19] == pytest.approx(1.0)
    assert times[20] == pytest.approx(1.001)


def test_oversized_cost_waits_for_full_allowance_then_goes_into_debt() -> None:
    pacer = Pacer.start(1000.0, now=0.0)  # tokens/s, allowance of one token to start
    assert pacer.wait_time(500, 0.0) == 0.0
    pacer.take(500, 0.0)
    assert pacer.wait_time(500, 0.0) == pytest.approx(0.5)


def test_remaining_counts_from_when_the_request_was_sent() -> None:
    pacer = Pacer(rate=10.0, capacity=2.0, level=2.0, updated=0.0)
    # Sent at 1.0, answered at 1.05 with nothing left: the next may leave at 1.1, not 1.15.
    pacer.drain_to(0, now=1.05, as_of=1.0)
    assert pacer.wait_time(1, 1.05) == pytest.approx(0.05)


def test_refused_drops_burst_and_accrues_nothing_during_the_pause() -> None:
    pacer = Pacer(rate=10.0, capacity=10.0, level=10.0, updated=0.0)
    pacer.refused(resume_at=2.0)
    assert pacer.capacity == 1.0
    assert pacer.wait_time(1, 0.5) == pytest.approx(1.5 + 0.1)


def test_configured_limit_paces_under_it() -> None:
    rate = AdaptiveRate.per_minute(600, now=0.0)
    assert rate.per_minute_rate == pytest.approx(600 * HEADROOM)


def test_unknown_limit_is_unpaced_until_advertised_and_lower_wins() -> None:
    rate = AdaptiveRate.per_minute(None, now=0.0)
    assert rate.pacer is None
    rate.adopt(1200, now=0.0)
    assert rate.per_minute_rate == pytest.approx(1200 * HEADROOM)
    rate.adopt(6000, now=0.0)  # a higher advertisement never raises a known ceiling
    assert rate.per_minute_rate == pytest.approx(1200 * HEADROOM)
    configured = AdaptiveRate.per_minute(600, now=0.0)
    configured.adopt(6000, now=0.0)
    assert configured.per_minute_rate == pytest.approx(600 * HEADROOM)


def test_a_429_cuts_the_rate_once_per_epoch_and_holds_under_it() -> None:
    rate = AdaptiveRate.per_minute(6000, now=0.0)
    start = rate.pacer.rate if rate.pacer else 0.0
    assert rate.refused(now=1.0, sent_at=0.99, resume_at=1.1)
    assert rate.pacer is not None and rate.pacer.rate == pytest.approx(start * DECREASE)
    assert rate.hold == pytest.approx(start * HOLD)
    # Requests sent before the cut were paced at the old rate: no second cut for them.
    assert not rate.refused(now=1.01, sent_at=0.995, resume_at=1.1)
    assert rate.pacer.rate == pytest.approx(start * DECREASE)


def test_a_429_soon_after_a_cut_halves_the_rate() -> None:
    rate = AdaptiveRate.per_minute(6000, now=0.0)
    assert rate.pacer is not None
    start = rate.pacer.rate
    rate.refused(now=1.0, sent_at=1.0, resume_at=1.0)
    rate.refused(now=1.2, sent_at=1.1, resume_at=1.2)
    assert rate.pacer.rate == pytest.approx(start * DECREASE * FAST_DECREASE)
    rate.refused(now=3.0, sent_at=2.9, resume_at=3.0)
    assert rate.pacer.rate == pytest.approx(start * DECREASE * FAST_DECREASE * DECREASE)


def test_clean_periods_recover_additively_up_to_the_hold_only() -> None:
    rate = AdaptiveRate.per_minute(6000, now=0.0)
    assert rate.pacer is not None
    start = rate.pacer.rate
    rate.refused(now=1.0, sent_at=1.0, resume_at=1.0)
    now, seen = 1.0, []
    while now < 30.0:
        now += 0.01
        rate.accepted_one(1.0, now)
        seen.append(rate.pacer.rate)
    assert seen == sorted(seen)  # climbs, never jumps down without a 429
    assert rate.pacer.rate == pytest.approx(start * HOLD)
    steps = sorted(set(seen))
    assert len(steps) >= 3  # several additive steps, each after a clean RECOVER_AFTER_S
    assert len(steps) - 1 <= (30.0 - 1.0) / RECOVER_AFTER_S


def test_limit_nobody_told_us_is_estimated_from_what_was_accepted() -> None:
    # Unpaced lane; the provider accepted 100 requests in 0.2 s, then asks to wait 0.2 s until
    # its window reopens: 100 per 0.4 s is what it allows, and the lane paces just under that.
    rate = AdaptiveRate.per_minute(None, now=0.0)
    for i in range(100):
        rate.accepted_one(1.0, 0.8 + i * 0.002)
    assert rate.refused(now=1.0, sent_at=1.0, resume_at=1.2)
    assert rate.pacer is not None
    assert rate.pacer.rate == pytest.approx(100 / (0.2 + 0.2) * HEADROOM, rel=0.05)


def test_settled_rate_starts_a_resumed_lane_there() -> None:
    rate = AdaptiveRate.per_minute(6000, now=0.0, start=3000)
    assert rate.per_minute_rate == pytest.approx(3000)
    assert rate.hold == pytest.approx(50.0)


def test_slow_start_ramps_the_rate_up_from_the_first_request() -> None:
    slow = SlowStart()
    now, times = 0.0, []
    while len(times) < 64:
        now += slow.wait_time(len(times), now)
        times.append(now)
    assert times[0] == 0.0
    assert 0 < times[1] <= 1 / SLOW_START_RATE
    # 64 requests out within five doubling steps, the rate doubling step after step.
    assert times[-1] < 5 * SLOW_START_STEP_S
    first_step = sum(1 for t in times if t < SLOW_START_STEP_S)
    second_step = sum(1 for t in times if SLOW_START_STEP_S <= t < 2 * SLOW_START_STEP_S)
    assert second_step >= 2 * (first_step - 1) - 1  # the first request is free
    assert slow.wait_time(10**9, 12 * SLOW_START_STEP_S) == 0.0 and slow.done
    quick = SlowStart()
    quick.finish()
    assert quick.wait_time(10**9, 0.0) == 0.0
