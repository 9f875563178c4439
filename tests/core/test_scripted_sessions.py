"""Whole sessions through a scripted transport on a virtual clock (the tier that never waits,
docs/testing.md): retries with backoff, 429 pauses honouring Retry-After, lane stops on 401/403,
the breaker opening and closing (pacing by advertised limits: test_ratelimit_headers.py). The
provider is a function of the request; each test reads what the run did from the lane, the
ledger and the virtual times at which requests were sent, and takes milliseconds of wall time
however long the waits it stands for."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest
from scripted_kit import Provider, answer, attempt_errors, run

from evaltally.adapters.base import HttpRequest, HttpResponse
from evaltally.runner.breaker import BreakerState
from evaltally.runner.clock import VirtualClock
from evaltally.runner.transport import TransportFailure
from testkit import FAKE_KEY


async def test_failures_are_retried_with_growing_backoff_until_an_answer(tmp_path: Path) -> None:
    def script(request: HttpRequest, n: int) -> HttpResponse:
        if n == 1:
            raise TransportFailure("connection", "connection dropped: reset by peer")
        return answer(request, 503) if n <= 3 else answer(request)

    provider = Provider(VirtualClock(), script)
    result, run_dir = await run(tmp_path, provider, 3)
    assert result.complete and result.lanes["m1"].stats.ok == 3
    assert attempt_errors(run_dir) == Counter({None: 3, "http_503": 6, "connection": 3})
    for q in provider.seen:
        sent = provider.times(q)
        gaps = [b - a for a, b in itertools.pairwise(sent)]
        assert len(gaps) == 3 and all(0 < g <= 30 for g in gaps)
        assert sum(gaps) >= 2  # at least the initial backoff, waited on the virtual clock


async def test_a_429_pauses_until_its_retry_after(tmp_path: Path) -> None:
    def script(request: HttpRequest, n: int) -> HttpResponse:
        return answer(request, 429, **{"retry-after": "17"}) if n == 1 else answer(request)

    provider = Provider(VirtualClock(), script)
    result, run_dir = await run(tmp_path, provider, 4)
    stats = result.lanes["m1"].stats
    assert result.complete and stats.ok == 4 and stats.rate_limited == 4
    for q in provider.seen:
        first, second = provider.times(q)
        assert second - first >= 17
    assert attempt_errors(run_dir) == Counter({None: 4, "http_429": 4})


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_stops_the_lane_after_one_request(tmp_path: Path, status: int) -> None:
    provider = Provider(VirtualClock(), lambda request, n: answer(request, status))
    result, run_dir = await run(tmp_path, provider, 6, concurrency=1)
    lane = result.lanes["m1"]
    assert len(provider.log) == 1
    assert lane.stop_reason is not None and "EVALTALLY_TEST_KEY" in lane.stop_reason
    assert FAKE_KEY not in lane.stop_reason
    assert (lane.stats.failed, lane.stats.blocked) == (1, 5)
    assert not result.complete
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert FAKE_KEY.encode() not in path.read_bytes(), path


async def test_the_breaker_opens_in_an_outage_and_a_probe_closes_it(tmp_path: Path) -> None:
    clock = VirtualClock()
    # The outage is the first nine requests, counted rather than timed: virtual time moves on
    # whenever every task waits, and a task waiting for its rows' commit (real time, record
    # before send) lets the others' backoff sleeps end at once, so a timed outage could pass
    # before the breaker has seen its third failure.
    outage = 9

    def script(request: HttpRequest, n: int) -> HttpResponse:
        return answer(request, 503) if len(provider.log) <= outage else answer(request)

    provider = Provider(clock, script)
    result, _ = await run(
        tmp_path,
        provider,
        8,
        breaker_threshold=3,
        breaker_cooldown_s=40,
        max_attempts=50,
        backoff_max_s=5,
    )
    lane = result.lanes["m1"]
    assert result.complete and lane.stats.ok == 8
    assert lane.breaker.times_opened >= 2  # opened, a probe failed, reopened
    assert lane.breaker_state is BreakerState.CLOSED
    # While open the lane holds its calls: after the first wave only one probe per cool-down
    # leaves, so the failed probe and the one that closes the breaker each waited it out (8
    # calls backing off alone, at most 5 s, would have sent all nine in a few seconds).
    sent = [t for t, _ in provider.log]
    gaps = [b - a for a, b in itertools.pairwise(sent[: outage + 1])]
    assert sum(gap >= 40 for gap in gaps) >= 2
