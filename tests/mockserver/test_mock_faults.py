"""Rate limits and injected faults, observed by a real aiohttp client."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson
import pytest

from evaltally.mockserver import FaultRule, MockConfig, MockServer

AUTH = {"Authorization": "Bearer sk-test"}


def body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


async def call(
    s: aiohttp.ClientSession, srv: MockServer, text: str, **extra: Any
) -> tuple[int, bytes, Any]:
    url = f"{srv.base_url}/v1/chat/completions"
    async with s.post(url, json=body(text, **extra), headers=AUTH) as r:
        return r.status, await r.read(), r.headers


async def test_rpm_bucket_answers_429_with_retry_headers() -> None:
    # 600 rpm = 10/s with a burst of one second's worth (10).
    async with MockServer(MockConfig(rpm=600)) as srv, aiohttp.ClientSession() as s:
        statuses = [(await call(s, srv, f"q{i}"))[0] for i in range(10)]
        assert statuses == [200] * 10
        status, raw, h = await call(s, srv, "over")
        assert status == 429
        assert h["Retry-After"] == "1"  # 0.1 s rounded up to whole seconds
        assert 50 <= int(h["retry-after-ms"]) <= 100
        assert h["x-ratelimit-limit-requests"] == "600"
        assert h["x-ratelimit-remaining-requests"] == "0"
        assert h["x-ratelimit-reset-requests"].endswith("s")
        err = orjson.loads(raw)["error"]
        assert err["code"] == "rate_limit_exceeded" and err["type"] == "requests"
        await asyncio.sleep(int(h["retry-after-ms"]) / 1000 + 0.02)
        assert (await call(s, srv, "over"))[0] == 200
        assert srv.stats()["rate_limited"] == 1


async def test_tpm_bucket_counts_prompt_plus_max_tokens() -> None:
    async with MockServer(MockConfig(tpm=6000)) as srv, aiohttp.ClientSession() as s:
        status, _, h = await call(s, srv, "a", max_tokens=80)
        assert status == 200 and h["x-ratelimit-limit-tokens"] == "6000"
        assert int(h["x-ratelimit-remaining-tokens"]) < 20
        status, raw, h = await call(s, srv, "b", max_tokens=80)
        assert status == 429 and orjson.loads(raw)["error"]["type"] == "tokens"


async def test_ratelimit_headers_toggle() -> None:
    cfg = MockConfig(rpm=6000, ratelimit_headers=False)
    async with MockServer(cfg) as srv, aiohttp.ClientSession() as s:
        _, _, h = await call(s, srv, "a")
        assert "x-ratelimit-limit-requests" not in h
        srv.update(error_429_rate=1.0)
        status, _, h = await call(s, srv, "b")
        assert status == 429 and h["Retry-After"] == "1"
        assert not any(k.lower().startswith("x-ratelimit") for k in h)
        srv.update(ratelimit_headers=True, error_429_rate=0.0)
        _, _, h = await call(s, srv, "a")
        assert h["x-ratelimit-limit-requests"] == "6000"


async def test_request_scope_schedule_in_arrival_order() -> None:
    faults = (FaultRule("429", 2, retry_after=3), FaultRule("500", 1), FaultRule("503", 1))
    async with MockServer(MockConfig(faults=faults)) as srv, aiohttp.ClientSession() as s:
        results = [await call(s, srv, "same") for _ in range(5)]
    assert [r[0] for r in results] == [429, 429, 500, 503, 200]
    assert results[0][2]["Retry-After"] == "3" and results[0][2]["retry-after-ms"] == "3000"
    assert results[3][2]["Retry-After"] == "1"  # 503 carries the default retry_after_s


async def test_body_scope_first_attempt_of_every_body_fails_under_concurrency() -> None:
    cfg = MockConfig.from_mapping({"faults": [{"kind": "429", "scope": "body", "retry_after": 1}]})
    async with MockServer(cfg) as srv, aiohttp.ClientSession() as s:
        texts = [f"item-{i}" for i in range(30)]
        first = await asyncio.gather(*(call(s, srv, t) for t in texts))
        second = await asyncio.gather(*(call(s, srv, t) for t in texts))
        stats = srv.stats()
    assert all(r[0] == 429 and r[2]["Retry-After"] == "1" for r in first)
    assert all(r[0] == 200 for r in second)
    assert sorted(stats["by_body"].values()) == [2] * 30
    assert stats["by_status"] == {"429": 30, "200": 30}


async def test_schedule_match_filters_by_last_user_message() -> None:
    cfg = MockConfig(faults=(FaultRule("500", 5, scope="body", match="poison"),))
    async with MockServer(cfg) as srv, aiohttp.ClientSession() as s:
        assert (await call(s, srv, "fine"))[0] == 200
        assert (await call(s, srv, "this is poison"))[0] == 500


async def test_dropped_connection_is_a_client_connection_error() -> None:
    cfg = MockConfig(faults=(FaultRule("drop", 1),))
    async with MockServer(cfg) as srv, aiohttp.ClientSession() as s:
        with pytest.raises(aiohttp.ClientConnectionError):
            await call(s, srv, "x")
        assert (await call(s, srv, "x"))[0] == 200
        assert srv.stats()["by_status"]["drop"] == 1


async def test_hang_exceeds_client_timeout_and_does_not_block_shutdown() -> None:
    cfg = MockConfig(hang_s=30, faults=(FaultRule("hang", 1),))
    started = time.monotonic()
    async with MockServer(cfg) as srv:
        timeout = aiohttp.ClientTimeout(total=0.3)
        async with aiohttp.ClientSession(timeout=timeout) as s:
            with pytest.raises(asyncio.TimeoutError):
                await call(s, srv, "x")
            assert (await call(s, srv, "x"))[0] == 200
    assert time.monotonic() - started < 3


@pytest.mark.parametrize(
    ("kind", "status", "ctype"),
    [
        ("html", 200, "text/html"),
        ("html_502", 502, "text/html"),
        ("truncated", 200, "application/json"),
    ],
)
async def test_malformed_bodies(kind: str, status: int, ctype: str) -> None:
    cfg = MockConfig(faults=(FaultRule(kind, 1),))
    async with MockServer(cfg) as srv, aiohttp.ClientSession() as s:
        got, raw, h = await call(s, srv, "x")
    assert got == status and h["Content-Type"].startswith(ctype)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)


async def test_anthropic_overloaded_529() -> None:
    cfg = MockConfig(faults=(FaultRule("529", 1),))
    req = {"model": "c", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    async with (
        MockServer(cfg) as srv,
        aiohttp.ClientSession() as s,
        s.post(f"{srv.base_url}/v1/messages", json=req, headers=headers) as r,
    ):
        assert r.status == 529
        err = orjson.loads(await r.read())
        assert err["error"]["type"] == "overloaded_error" and "retry-after" in r.headers


async def failing_bodies(seed: int) -> set[str]:
    cfg = MockConfig(seed=seed, error_500_rate=0.5)
    async with MockServer(cfg) as srv, aiohttp.ClientSession() as s:
        texts = [f"t{i}" for i in range(60)]
        results = await asyncio.gather(*(call(s, srv, t) for t in texts))
    return {t for t, r in zip(texts, results, strict=True) if r[0] == 500}


async def test_random_faults_are_reproducible_per_seed() -> None:
    a, b, c = await failing_bodies(1), await failing_bodies(1), await failing_bodies(2)
    assert a == b
    assert a != c
    assert 15 <= len(a) <= 45


async def test_control_endpoint_starts_and_stops_an_outage() -> None:
    async with MockServer() as srv, aiohttp.ClientSession() as s:
        async with s.post(f"{srv.base_url}/control", json={"error_503_rate": 1.0}) as r:
            assert r.status == 200 and (await r.json())["error_503_rate"] == 1.0
        assert (await call(s, srv, "x"))[0] == 503
        async with s.post(f"{srv.base_url}/control", json={"error-503-rate": 0}) as r:
            assert r.status == 200
        assert (await call(s, srv, "x"))[0] == 200
        async with s.post(f"{srv.base_url}/control", json={"no_such_knob": 1}) as r:
            assert r.status == 400 and "no_such_knob" in (await r.json())["error"]
        async with s.post(f"{srv.base_url}/stats/reset") as r:
            assert r.status == 200
        async with s.get(f"{srv.base_url}/stats") as r:
            assert (await r.json())["total"] == 0
