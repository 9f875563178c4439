"""Every dialect end to end over real sockets on 127.0.0.1: our HttpRequest sent with aiohttp
to the mock provider (evaltally.mockserver), its real response parsed by our adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
import pytest

from evaltally.adapters import http_adapter, prepare_attempt
from evaltally.adapters.base import Endpoint, HttpAdapter, HttpRequest, HttpResponse
from evaltally.adapters.bedrock import BedrockAdapter
from evaltally.mockserver import FaultRule, MockConfig, MockServer
from evaltally.records import AttemptError, Completion, ErrorAction

KEY = "mock-key-0001"
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": KEY,
    "AWS_SECRET_ACCESS_KEY": "mock-secret",
    "AWS_REGION": "us-east-1",
}
ANSWER = '{"answer": 4}'
MESSAGES = [
    {"role": "system", "content": "Answer in JSON."},
    {"role": "user", "content": "What is 2+2?"},
]
# (dialect, model, path after the mock's root URL)
DIALECTS = [
    ("openai", "gpt-mock", "/v1"),
    ("anthropic", "claude-mock", ""),
    ("gemini", "gemini-mock", ""),
    ("bedrock", "anthropic.claude-mock-v1:0", ""),
]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout) as s:
        yield s


async def send(session: aiohttp.ClientSession, request: HttpRequest) -> HttpResponse:
    async with session.request(
        request.method, request.url, data=request.body, headers=dict(request.headers)
    ) as r:
        body = await r.read()
        return HttpResponse(r.status, {k.lower(): v for k, v in r.headers.items()}, body)


def make(dialect: str) -> HttpAdapter:
    if dialect == "bedrock":
        return BedrockAdapter(env=AWS_ENV)
    return http_adapter(dialect)


async def call(
    session: aiohttp.ClientSession,
    server: MockServer,
    dialect: str,
    model: str,
    path: str,
    *,
    key: str = KEY,
    params: dict[str, Any] | None = None,
    messages: Sequence[dict[str, str]] = MESSAGES,
) -> tuple[HttpAdapter, HttpResponse]:
    adapter = make(dialect)
    endpoint = Endpoint(
        model=model,
        base_url=server.base_url + path,
        api_key=None if dialect == "bedrock" else key,
        params=params if params is not None else {"max_tokens": 400, "temperature": 0.0},
    )
    request = prepare_attempt(adapter, adapter.build_request(endpoint, messages))
    return adapter, await send(session, request)


@pytest.mark.parametrize(("dialect", "model", "path"), DIALECTS)
async def test_success_with_usage_and_reasoning(
    session: aiohttp.ClientSession, dialect: str, model: str, path: str
) -> None:
    config = MockConfig(
        default_answer=ANSWER, reasoning_tokens=50, cached_tokens=4, api_key=KEY, rpm=600
    )
    async with MockServer(config) as server:
        adapter, response = await call(session, server, dialect, model, path)
    assert response.status == 200, response.body[:300]
    result = adapter.parse_response(response)
    assert isinstance(result, Completion), result
    assert result.text == ANSWER
    assert result.finish_reason == "stop"
    assert result.request_id
    usage = result.usage
    assert usage.input_tokens > 0
    assert usage.output_tokens >= 50  # output includes reasoning in every dialect
    assert usage.cached_tokens == 4
    if dialect in ("openai", "gemini"):
        assert usage.reasoning_tokens == 50  # counted by the provider
    else:
        assert usage.reasoning_tokens > 0  # estimated from the thinking block


@pytest.mark.parametrize(("dialect", "model", "path"), DIALECTS)
async def test_scheduled_429_is_retried_after_the_advertised_wait(
    session: aiohttp.ClientSession, dialect: str, model: str, path: str
) -> None:
    config = MockConfig(faults=(FaultRule(kind="429", count=1, retry_after=2.0),))
    async with MockServer(config) as server:
        adapter, first = await call(session, server, dialect, model, path)
        _, second = await call(session, server, dialect, model, path)
    error = adapter.parse_response(first)
    assert isinstance(error, AttemptError), error
    assert (error.action, error.error_class) == (ErrorAction.RETRY, "http_429")
    assert error.retry_after_s == pytest.approx(2.0)
    assert isinstance(adapter.parse_response(second), Completion)


@pytest.mark.parametrize(("dialect", "model", "path"), DIALECTS)
@pytest.mark.parametrize(("kind", "action"), [("503", "retry"), ("400", "fail_call")])
async def test_server_errors_classified(
    session: aiohttp.ClientSession, dialect: str, model: str, path: str, kind: str, action: str
) -> None:
    async with MockServer(MockConfig(faults=(FaultRule(kind=kind),))) as server:
        adapter, response = await call(session, server, dialect, model, path)
    error = adapter.parse_response(response)
    assert isinstance(error, AttemptError), error
    assert error.action == action
    assert error.error_class == f"http_{kind}"


@pytest.mark.parametrize(("dialect", "model", "path"), DIALECTS)
async def test_wrong_key_stops_the_lane(
    session: aiohttp.ClientSession, dialect: str, model: str, path: str
) -> None:
    config = MockConfig(api_key="the-right-key")
    async with MockServer(config) as server:
        adapter, response = await call(session, server, dialect, model, path, key="wrong-key")
    error = adapter.parse_response(response)
    assert isinstance(error, AttemptError), error
    assert error.action is ErrorAction.STOP_LANE
    assert "wrong-key" not in error.detail


@pytest.mark.parametrize(("dialect", "model", "path"), DIALECTS)
@pytest.mark.parametrize("kind", ["html", "truncated"])
async def test_malformed_200_is_bad_body(
    session: aiohttp.ClientSession, dialect: str, model: str, path: str, kind: str
) -> None:
    async with MockServer(MockConfig(faults=(FaultRule(kind=kind),))) as server:
        adapter, response = await call(session, server, dialect, model, path)
    error = adapter.parse_response(response)
    assert isinstance(error, AttemptError), error
    assert (error.action, error.error_class) == (ErrorAction.RETRY, "bad_body")


@pytest.mark.parametrize(("dialect", "model", "path"), DIALECTS)
async def test_safety_stop_is_a_completion(
    session: aiohttp.ClientSession, dialect: str, model: str, path: str
) -> None:
    async with MockServer(MockConfig(faults=(FaultRule(kind="safety"),))) as server:
        adapter, response = await call(session, server, dialect, model, path)
    result = adapter.parse_response(response)
    assert isinstance(result, Completion), result
    assert result.text == ""
    assert result.finish_reason is not None and result.finish_reason.startswith("safety:")


async def test_gemini_blocked_prompt(session: aiohttp.ClientSession) -> None:
    async with MockServer(MockConfig(faults=(FaultRule(kind="blocked"),))) as server:
        adapter, response = await call(session, server, "gemini", "gemini-mock", "")
    result = adapter.parse_response(response)
    assert isinstance(result, Completion), result
    assert result.finish_reason == "safety:prompt:SAFETY"


@pytest.mark.parametrize(("dialect", "path"), [("openai", "/v1"), ("anthropic", "")])
async def test_rate_limit_headers_are_read(
    session: aiohttp.ClientSession, dialect: str, path: str
) -> None:
    async with MockServer(MockConfig(rpm=600, tpm=100_000)) as server:
        adapter, response = await call(session, server, dialect, "m", path)
    snapshot = adapter.rate_limits(response)
    assert snapshot is not None
    assert snapshot.limit_requests == 600
    assert snapshot.limit_tokens == 100_000
    assert snapshot.remaining_requests is not None and snapshot.remaining_requests < 600
    assert snapshot.reset_requests_s is not None and snapshot.reset_requests_s >= 0


async def test_max_tokens_eaten_by_reasoning_reads_as_length(
    session: aiohttp.ClientSession,
) -> None:
    async with MockServer(MockConfig(reasoning_tokens=500)) as server:
        adapter, response = await call(
            session, server, "gemini", "gemini-mock", "", params={"max_tokens": 100}
        )
    result = adapter.parse_response(response)
    assert isinstance(result, Completion), result
    assert (result.text, result.finish_reason, result.usage.reasoning_tokens) == ("", "length", 100)


async def test_same_call_same_body_bytes_on_the_wire(session: aiohttp.ClientSession) -> None:
    async with MockServer(MockConfig()) as server:
        for _ in range(2):
            await call(session, server, "bedrock", "anthropic.claude-mock-v1:0", "")
        by_body = server.stats()["by_body"]
    assert list(by_body.values()) == [2]
