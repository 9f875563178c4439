"""Every wait a provider can ask for has one cap (issue 8, item 11), against a raw HTTP server
on 127.0.0.1 that answers with whatever headers and bodies a test scripts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from evaltally.config import load_config
from evaltally.run.session import SessionResult, run_session
from testkit import FAKE_KEY, write_config, write_items

Reply = tuple[int, dict[str, str], dict[str, Any]]
OK_BODY = {
    "id": "x",
    "choices": [{"message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1},
}
LIMITS = "concurrency = 2\nbackoff_initial_s = 0.01\nbackoff_max_s = 0.05\nmax_attempts = 3"


@pytest.fixture
async def scripted() -> AsyncIterator[Callable[[Callable[[int], Reply]], Any]]:
    """Start a server whose n-th request (from 0) gets `script(n)`; yields its base URL."""
    runners: list[web.AppRunner] = []

    async def start(script: Callable[[int], Reply]) -> str:
        seen = [0]

        async def handle(request: web.Request) -> web.Response:
            await request.read()
            status, headers, body = script(seen[0])
            seen[0] += 1
            return web.Response(status=status, headers=headers, body=orjson.dumps(body))

        app = web.Application()
        app.router.add_post("/v1/chat/completions", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()


async def run(tmp_path: Path, base_url: str, calls: int = 4) -> SessionResult:
    write_items(tmp_path / "items.jsonl", calls)
    config = load_config(write_config(tmp_path, base_url, limits=LIMITS))
    return await run_session(config, command="test", env={"EVALTALLY_TEST_KEY": FAKE_KEY})


@pytest.mark.parametrize("reset", ["999999h", "inf", "2099-01-01T00:00:00Z"])
async def test_reset_past_the_cap_on_a_success_never_pauses_the_lane(
    tmp_path: Path, scripted: Any, reset: str
) -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": reset,
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": reset,
    }
    result = await run(tmp_path, await scripted(lambda n: (200, headers, OK_BODY)))
    lane = result.lanes["m1"]
    assert result.complete and lane.stats.ok == 4 and lane.stop_reason is None
    assert lane.pause_until == 0.0


async def test_capped_retry_after_wins_over_a_reset_past_the_cap(
    tmp_path: Path, scripted: Any
) -> None:
    limited = {
        "retry-after-ms": "20",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "999999h",
    }

    def script(n: int) -> Reply:
        return (429, limited, {"error": {"type": "requests"}}) if n == 0 else (200, {}, OK_BODY)

    result = await run(tmp_path, await scripted(script), calls=1)
    lane = result.lanes["m1"]
    assert result.complete and lane.stats.rate_limited == 1 and lane.stop_reason is None


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (429, {"retry-after": "86400"}),
        (429, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "999999h"}),
        # A sporadic error's wait holds only its request, but not past the cap either.
        (503, {"retry-after": "86400"}),
        (429, {"retry-after": "86400", "x-ratelimit-remaining-requests": "9"}),
    ],
)
async def test_wait_past_the_cap_stops_the_lane_and_the_run_ends(
    tmp_path: Path, scripted: Any, status: int, headers: dict[str, str]
) -> None:
    result = await run(tmp_path, await scripted(lambda n: (status, headers, {})), calls=4)
    lane = result.lanes["m1"]
    assert not result.complete
    assert lane.stop_reason is not None and "quota" in lane.stop_reason
    assert lane.stats.failed + lane.stats.blocked == 4 and lane.stats.ok == 0
    assert lane.stats.attempts <= 2  # the two workers' first requests, nothing after the stop
    assert any("longer than 600 s" in line for line in result.failures)


async def test_insufficient_quota_429_stops_the_lane(tmp_path: Path, scripted: Any) -> None:
    body = {
        "error": {
            "message": "You exceeded your current quota",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    result = await run(
        tmp_path, await scripted(lambda n: (429, {"retry-after": "1"}, body)), calls=4
    )
    lane = result.lanes["m1"]
    assert not result.complete and lane.stats.ok == 0 and lane.stats.attempts <= 2
    assert lane.stop_reason is not None and "quota is used up" in lane.stop_reason
