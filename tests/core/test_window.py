"""The in-flight window of a lane that knows no request limit, with the time passed in."""

from __future__ import annotations

import random

import pytest

from evaltally.runner.window import BASE_PERIOD_S, MIN_WINDOW, InflightWindow


def drive(window: InflightWindow, answers: int, latency_of: object, start: float = 0.0) -> float:
    """`answers` answers, each while as many are in flight as the window allows (64 at most);
    `latency_of(in_flight)` gives each one's latency. Returns the time of the last."""
    now = start
    for _ in range(answers):
        in_flight = 64 if window.limit is None else min(64, int(window.limit))
        latency = latency_of(in_flight)  # type: ignore[operator]
        now += latency / in_flight
        window.answered(latency, in_flight - 1, now)
    return now


def test_latency_that_does_not_rise_leaves_the_window_open() -> None:
    # A provider answering in 200 ms whatever the load: all 64 stay in flight.
    window = InflightWindow()
    drive(window, 2000, lambda n: 0.2)
    assert window.limit is None and not window.full(63)


@pytest.mark.parametrize("spread", ["uniform", "lognormal"])
def test_varying_answer_lengths_are_not_a_queue(spread: str) -> None:
    # Completions of 0.5 s to 3 s, or heavy-tailed (sigma 1.5: one in 20 takes 12 times the
    # median), in random order: the latency of a model, not of a queue.
    rng = random.Random(7)
    window = InflightWindow()
    if spread == "uniform":
        drive(window, 3000, lambda n: rng.uniform(0.5, 3.0))
    else:
        drive(window, 3000, lambda n: rng.lognormvariate(0.0, 1.5))
    assert window.limit is None or window.limit >= 64


def test_latency_rising_with_what_is_in_flight_shrinks_the_window() -> None:
    # A bottleneck serving one request per ms: latency = 1 ms per request in flight. More in
    # flight buys nothing, so the window comes down to a few (and never under MIN_WINDOW).
    window = InflightWindow()
    window.answered(0.001, 0, 0.0)
    drive(window, 500, lambda n: 0.001 * n)
    assert window.limit is not None and MIN_WINDOW <= window.limit <= 2 * MIN_WINDOW
    assert window.full(int(window.limit)) and not window.full(MIN_WINDOW - 1)


def test_the_window_grows_back_once_latency_stops_rising() -> None:
    window = InflightWindow()
    window.answered(0.001, 0, 0.0)
    now = drive(window, 300, lambda n: 0.001 * n)
    small = window.limit
    assert small is not None
    # The provider now answers in 1 ms however many are in flight: GROWTH more per round trip
    # (per `limit` answers), not one per answer.
    drive(window, 100, lambda n: 0.001, start=now)
    assert window.limit is not None and small + 10 <= window.limit < small + 50


def test_the_low_follows_a_latency_that_rose_for_good() -> None:
    window = InflightWindow()
    now = drive(window, 200, lambda n: 0.05)
    # Prompts of another kind: every answer now takes 1 s. The window may shrink at first,
    # but within two periods of the low the new latency is the norm and the window reopens.
    now = drive(window, 200, lambda n: 1.0, start=now)
    while now < 3 * BASE_PERIOD_S:
        now = drive(window, 50, lambda n: 1.0, start=now)
    drive(window, 64, lambda n: 1.0, start=now)
    assert window.limit is None or window.limit >= 64


def test_answers_quicker_than_the_clock_can_see_are_not_a_queue() -> None:
    window = InflightWindow()
    for i in range(50):
        window.answered(0.0, 8, float(i))  # a coarse or virtual clock: 0 s round trips
    assert window.limit is None
