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
    MAX_PATIENCE_S,
    MAX_RECOVER_STEP,
    MIN_COUNT,
    RECOVER_AFTER_S,
    RECOVER_STEP,
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


def test_clean_periods_recover_stepwise_up_to_the_hold_only() -> None:
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
    assert len(steps) >= 3  # several steps, each after a clean RECOVER_AFTER_S
    assert len(steps) - 1 <= (30.0 - 1.0) / RECOVER_AFTER_S
    assert all(b <= a * (1 + RECOVER_STEP) + 1e-9 for a, b in itertools.pairwise(steps))


def _held(hold: float, ceiling: float | None = None) -> AdaptiveRate:
    """A dimension paced at the hold a 429 left, clean since 0."""
    rate = AdaptiveRate(ceiling=ceiling, hold=hold, clean_since=0.0)
    rate.pacer = Pacer.start(hold, 0.0)
    return rate


def test_a_lift_climbs_past_the_hold_while_the_pacer_holds_the_lane_back() -> None:
    rate = _held(10.0)
    assert rate.pacer is not None
    now, taken = 0.0, []
    while now < 5.5:  # a lane that always has a request waiting at the pacer
        now += rate.pacer.wait_time(1.0, now)
        rate.pacer.take(1.0, now)
        rate.lift(now)
        taken.append(rate.pacer.rate)
    # One step of MAX_RECOVER_STEP per clean RECOVER_AFTER_S, hold and pacer alike.
    assert sorted(set(taken)) == pytest.approx(
        [10.0 * (1 + MAX_RECOVER_STEP) ** i for i in range(6)]
    )
    assert rate.hold == pytest.approx(rate.pacer.rate)


def test_a_429_after_a_lift_goes_back_to_the_rate_before_it() -> None:
    rate = _held(10.0)
    rate.stepped_from = 2.0  # a step up from 2/s, long before: it says nothing of 12/s
    assert rate.pacer is not None
    rate.pacer.take(1.0, 1.5)
    rate.lift(1.5)
    assert rate.pacer.rate == pytest.approx(12.0)
    rate.refused(now=2.0, sent_at=2.0, resume_at=3.0)
    assert rate.pacer.rate == pytest.approx(10.0)  # the lift was refused: back to what ran clean


def test_no_lift_for_a_pacer_that_holds_nothing_back_nor_above_the_ceiling() -> None:
    idle = _held(10.0)
    idle.lift(5.0)  # its allowance filled while nothing waited
    assert idle.hold == 10.0
    capped = _held(10.0, ceiling=11.0)
    assert capped.pacer is not None
    capped.pacer.take(1.0, 2.0)
    capped.lift(2.0)
    assert capped.hold == capped.pacer.rate == 11.0
    capped.pacer.take(1.0, 4.0)
    capped.lift(4.0)
    assert capped.hold == 11.0


def accept(rate: AdaptiveRate, count: int, start: float, end: float) -> None:
    """`count` answers without a 429, evenly between `start` and `end`."""
    for i in range(count):
        rate.accepted_one(1.0, start + (end - start) * i / max(1, count - 1))


@pytest.mark.parametrize(
    ("accepted", "over_s", "wait_s", "sending", "limit"),
    [
        # A 10 s window of 1,000: 1,000 got through in 2.5 s and the provider asks to wait the
        # 7.5 s until the window reopens: 1,000 per 10 s, not the last second's 400.
        (1000, 2.5, 7.5, 400.0, 100.0),
        # A bucket of 100 refilling at 100/s: 112 in 0.12 s and a wait of 10 ms. No provider
        # enforces a window shorter than a second: 112/s, not 860/s.
        (112, 0.12, 0.01, 2000.0, 112.0),
    ],
)
def test_limit_nobody_told_us_is_what_was_accepted_over_the_window(
    accepted: int, over_s: float, wait_s: float, sending: float, limit: float
) -> None:
    rate = AdaptiveRate.per_minute(None, now=0.0)
    rate.sending_from(0.0)
    accept(rate, accepted, 0.0, over_s)
    assert rate.refused(now=over_s, sent_at=over_s, resume_at=over_s + wait_s, sending=sending)
    assert rate.pacer is not None
    assert rate.pacer.rate == pytest.approx(limit * HEADROOM, rel=0.01)
    # It was refused at the rate it sent: recovery may climb up to just under that, not beyond.
    assert rate.hold == pytest.approx(sending * HOLD)


def test_an_advertised_limit_above_the_enforced_one_is_cut_to_what_was_accepted() -> None:
    # Advertised 12,000/min, enforced 1,000 per 10 s: at 196/s the window is spent after 5.1 s
    # and the provider asks for 4.9 s. The cut goes to 100/s at once (the last second alone,
    # 196 accepted over 1 + 4.9 s, would say 33/s and leave the lane far below for long).
    rate = AdaptiveRate.per_minute(None, now=0.0)
    rate.adopt(12000, now=0.0)
    rate.sending_from(0.0)
    accept(rate, 1000, 0.0, 5.1)
    assert rate.refused(now=5.1, sent_at=5.1, resume_at=10.0)
    assert rate.pacer is not None
    assert rate.pacer.rate == pytest.approx(100 * HEADROOM, rel=0.01)


def test_an_estimate_never_cuts_a_paced_lane_below_half() -> None:
    # A lane that had little to send accepted little: that is not the provider's limit.
    rate = AdaptiveRate.per_minute(6000, now=0.0)
    rate.sending_from(0.0)
    accept(rate, 10, 0.0, 9.0)
    assert rate.pacer is not None
    start = rate.pacer.rate
    assert rate.refused(now=10.0, sent_at=10.0, resume_at=10.0)
    assert rate.pacer.rate == pytest.approx(start * FAST_DECREASE)


def test_later_estimates_count_from_the_end_of_the_first_pause() -> None:
    # A bucket that let a burst through: the first estimate is high. Each later 429 estimates
    # from what was accepted since the lane resumed after the first (the bucket empty at both
    # ends), a cut that comes soon after the last going no deeper than half.
    rate = AdaptiveRate.per_minute(None, now=0.0)
    rate.sending_from(0.0)
    accept(rate, 1250, 0.0, 2.5)
    assert rate.refused(now=2.5, sent_at=2.5, resume_at=2.51, sending=600.0)
    assert rate.pacer is not None
    first = rate.pacer.rate
    assert first == pytest.approx(1250 / 2.51 * HEADROOM)
    accept(rate, 10, 2.51, 2.6)
    assert rate.refused(now=2.6, sent_at=2.6, resume_at=2.61)
    assert rate.pacer.rate == pytest.approx(first * FAST_DECREASE)
    accept(rate, 2, 2.61, 2.62)
    assert rate.refused(now=2.63, sent_at=2.63, resume_at=2.64)
    assert rate.pacer.rate == pytest.approx(first * FAST_DECREASE**2)
    accept(rate, 100, 2.64, 3.6)
    assert rate.refused(now=3.6, sent_at=3.6, resume_at=3.61)
    assert rate.pacer.rate == pytest.approx(112 / (3.61 - 2.51) * HEADROOM)


def test_a_probe_refused_where_the_last_was_waits_longer_before_the_next() -> None:
    # Each time the lane climbs back and is refused at about the same rate, the clean time
    # before its first step back up doubles, up to MAX_PATIENCE_S.
    rate = AdaptiveRate.per_minute(6000, now=0.0)
    assert rate.pacer is not None
    first_steps, now = [], 0.0
    for _ in range(5):
        rate.refused(now=now, sent_at=now, resume_at=now)
        cut, low = now, rate.pacer.rate
        while rate.pacer.rate == low and now < cut + 60:
            now += 0.01
            rate.accepted_one(1.0, now)
        first_steps.append(round(now - cut, 1))
        while rate.pacer.rate < (rate.target or 0.0) - 1e-9 and now < cut + 200:
            now += 0.01
            rate.accepted_one(1.0, now)
    assert first_steps == [RECOVER_AFTER_S * 2**i for i in range(4)] + [MAX_PATIENCE_S]


def test_replay_charges_a_new_pacer_with_earlier_sends() -> None:
    # Three requests left within 20 ms before a limit of 10/s was known: the next one leaves
    # when even spacing from the first would have let it, 0.3 s after it.
    pacer = Pacer.start(10.0, now=0.03)
    pacer.replay([0.0, 0.01, 0.02], now=0.03)
    assert pacer.wait_time(1, 0.03) == pytest.approx(0.27)
    quiet = Pacer.start(10.0, now=5.0)
    quiet.replay([0.0, 0.01], now=5.0)  # long ago: nothing to charge
    assert quiet.wait_time(1, 5.0) == 0.0


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


def test_a_refused_step_up_goes_back_to_the_rate_that_was_clean() -> None:
    # What a paced lane got accepted is only what it sent: after a step up is refused, the
    # estimate would read the lane's own rate; the rate before the step is what ran clean.
    rate = AdaptiveRate.per_minute(6000, now=0.0)
    rate.sending_from(0.0)
    assert rate.pacer is not None
    rate.refused(now=0.0, sent_at=0.0, resume_at=0.0)
    clean, now = rate.pacer.rate, 0.0
    while rate.pacer.rate == clean:
        now += 0.01
        rate.accepted_one(1.0, now)
    assert rate.refused(now=now + 0.5, sent_at=now + 0.5, resume_at=now + 0.5)
    assert rate.pacer.rate == pytest.approx(clean)
    # The lane says when that step began: what it sent since then probed the limit.
    assert rate.probed_from == pytest.approx(now)


def test_a_first_429_after_too_few_answers_cuts_what_was_sent_not_the_count() -> None:
    # Two answers and a 429 within 40 ms say nothing of a limit: counted over a second and the
    # 1 s wait, they would set the lane to 2 requests/s (a hundredth of what it was sending).
    rate = AdaptiveRate.per_minute(None, now=0.0)
    rate.sending_from(0.0)
    accept(rate, MIN_COUNT - 1, 0.0, 0.03)
    assert rate.refused(now=0.04, sent_at=0.01, resume_at=1.04, sending=300.0)
    assert rate.pacer is not None
    assert rate.pacer.rate == pytest.approx(300.0 * DECREASE)
    assert rate.probed_from is None
