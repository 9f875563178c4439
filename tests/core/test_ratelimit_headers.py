"""A lane configured without limits adopts the limits a provider advertises in its headers
(a scripted provider on a virtual clock: the pace is read in virtual time, nothing waits)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_kit import Provider, answer, run

from evaltally.adapters.base import HttpRequest, HttpResponse
from evaltally.runner.clock import VirtualClock
from evaltally.runner.pacing import HEADROOM

RPM, TPM = 600, 200_000


async def test_advertised_limits_pace_the_lane(tmp_path: Path) -> None:
    clock = VirtualClock()
    accepted: list[float] = []

    def script(request: HttpRequest, n: int) -> HttpResponse:
        used = sum(1 for t in accepted if t > clock.now - 60)
        headers = {
            "x-ratelimit-limit-requests": str(RPM),
            "x-ratelimit-remaining-requests": str(max(0, RPM - used - 1)),
            "x-ratelimit-reset-requests": "6s",
            "x-ratelimit-limit-tokens": str(TPM),
            "x-ratelimit-remaining-tokens": str(TPM - 8 * (used + 1)),
            "x-ratelimit-reset-tokens": "1s",
        }
        if used >= RPM:
            return answer(request, 429, **headers)
        accepted.append(clock.now)
        return answer(request, **headers)

    result, _ = await run(tmp_path, Provider(clock, script), 40)
    lane = result.lanes["m1"]
    assert lane.limits.rpm is None and lane.limits.tpm is None
    assert result.complete and lane.stats.ok == 40 and lane.stats.rate_limited == 0
    assert lane.requests.per_minute_rate == pytest.approx(RPM * HEADROOM)
    assert lane.tokens.per_minute_rate == pytest.approx(TPM * HEADROOM)
