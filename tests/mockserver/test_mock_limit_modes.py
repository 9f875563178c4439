"""The mock's enforcement modes, driven by an injected clock: what each admits and refuses."""

from __future__ import annotations

import pytest

from evaltally.errors import ConfigError
from evaltally.mockserver import MockConfig
from evaltally.mockserver.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def admitted(lim: RateLimiter, clock: Clock, times: list[float]) -> list[bool]:
    out = []
    for t in times:
        clock.now = t
        out.append(lim.admit(0).limited_by is None)
    return out


def test_token_bucket_window_sets_the_burst() -> None:
    clock = Clock()
    lim = RateLimiter(600, None, clock=clock, window_s=10.0)  # 10/s, burst 100
    assert admitted(lim, clock, [0.0] * 101) == [True] * 100 + [False]
    assert lim.admit(0).retry_after_s == pytest.approx(0.1)


def test_fixed_window_restarts_at_each_boundary() -> None:
    clock = Clock()
    lim = RateLimiter(600, None, clock=clock, mode="fixed_window", window_s=1.0)  # 10 per s
    assert admitted(lim, clock, [0.95] * 11) == [True] * 10 + [False]
    refused = lim.admit(0)
    assert refused.retry_after_s == pytest.approx(0.05) and refused.rpm_remaining == 0
    # A fixed window lets 10 at the end of one window and 10 at the start of the next.
    assert admitted(lim, clock, [1.0] * 11) == [True] * 10 + [False]


def test_sliding_window_counts_any_window_of_its_length() -> None:
    clock = Clock()
    lim = RateLimiter(600, None, clock=clock, mode="sliding_window", window_s=1.0)
    assert admitted(lim, clock, [0.95] * 10 + [1.0, 1.9]) == [True] * 10 + [False, False]
    clock.now = 1.9
    assert lim.admit(0).retry_after_s == pytest.approx(0.05)
    assert admitted(lim, clock, [1.96]) == [True]


@pytest.mark.parametrize("mode", ["token_bucket", "fixed_window", "sliding_window"])
def test_every_mode_refuses_oversized_token_requests_only_until_the_limit_is_whole(
    mode: str,
) -> None:
    clock = Clock()
    lim = RateLimiter(None, 600, clock=clock, mode=mode, window_s=1.0)  # 10 tokens per s
    assert lim.admit(1000).limited_by is None  # charged the whole allowance
    refused = lim.admit(1000)
    assert refused.limited_by == "tokens" and 0 < refused.retry_after_s <= 1.0


def test_advertised_limit_is_higher_than_enforced() -> None:
    clock = Clock()
    lim = RateLimiter(600, None, clock=clock, advertise_factor=2.0)
    snap = lim.admit(0)
    assert snap.rpm == 1200 and snap.rpm_remaining == 18  # 9 left, claimed twice over
    assert admitted(lim, clock, [0.0] * 10) == [True] * 9 + [False]


def test_mode_knobs_are_validated() -> None:
    with pytest.raises(ConfigError, match="limit_mode"):
        MockConfig(limit_mode="leaky")
    with pytest.raises(ConfigError, match="limit_window_s"):
        MockConfig(limit_window_s=0)
    cfg = MockConfig.from_mapping({"limit-mode": "sliding_window", "limit-window-s": 10})
    assert cfg.limit_mode == "sliding_window" and cfg.limit_window_s == 10.0
