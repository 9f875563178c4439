"""OpenAI chat completions: request bytes/headers/URL and parsing of documented bodies."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest
from adapter_testkit import endpoint_factory
from adapter_testkit import response as json_response

from evaltally.adapters.base import HttpResponse
from evaltally.adapters.openai import OpenAIAdapter
from evaltally.adapters.reasoning import Reasoning
from evaltally.records import AttemptError, Completion, ErrorAction, RateLimitSnapshot, Usage

MESSAGES = [
    {"role": "system", "content": "Answer in JSON."},
    {"role": "user", "content": "2+2?"},
]
KEY = "sk-test-0123456789abcdefghij"


endpoint = endpoint_factory(
    model="gpt-5.4-mini",
    base_url="https://api.openai.com/v1/",
    api_key=KEY,
    params={"temperature": 0.0, "max_tokens": 64, "seed": 7, "stop": ["\n\n"]},
)


def response(body: Any, status: int = 200, **headers: str) -> HttpResponse:
    return json_response(body, status, {k.replace("_", "-"): v for k, v in headers.items()})


def test_request_url_headers_and_body() -> None:
    request = OpenAIAdapter().build_request(endpoint(), MESSAGES)
    assert request.method == "POST"
    assert request.url == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    body = orjson.loads(request.body)
    assert body == {
        "model": "gpt-5.4-mini",
        "messages": MESSAGES,
        "temperature": 0.0,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["\n\n"],
    }


def test_body_is_deterministic_and_key_free() -> None:
    adapter = OpenAIAdapter()
    a = adapter.build_request(endpoint(), MESSAGES)
    b = adapter.build_request(
        endpoint(params={"stop": ["\n\n"], "seed": 7, "max_tokens": 64, "temperature": 0.0}),
        [dict(m) for m in MESSAGES],
    )
    assert hashlib.sha256(a.body).digest() == hashlib.sha256(b.body).digest()
    assert KEY.encode() not in a.body
    assert KEY not in a.url
    assert KEY not in repr(a)


def test_no_key_no_authorization_header() -> None:
    request = OpenAIAdapter().build_request(endpoint(api_key=None), MESSAGES)
    assert "authorization" not in request.headers


def test_params_cannot_override_model_or_messages() -> None:
    request = OpenAIAdapter().build_request(
        endpoint(params={"model": "other", "messages": []}), MESSAGES
    )
    body = orjson.loads(request.body)
    assert body["model"] == "gpt-5.4-mini"
    assert body["messages"] == MESSAGES


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("off", {"reasoning_effort": "none"}),
        ("on", {"reasoning_effort": "medium"}),
        ("default", {}),
    ],
)
def test_reasoning_switch(mode: str, expected: dict[str, Any]) -> None:
    request = OpenAIAdapter().build_request(
        endpoint(params={}, reasoning=Reasoning(mode)), MESSAGES
    )
    body = orjson.loads(request.body)
    assert {k: v for k, v in body.items() if k not in ("model", "messages")} == expected


def test_explicit_param_wins_over_the_switch() -> None:
    request = OpenAIAdapter().build_request(
        endpoint(params={"reasoning_effort": "minimal"}, reasoning=Reasoning("off")), MESSAGES
    )
    assert orjson.loads(request.body)["reasoning_effort"] == "minimal"


OPENAI_OK = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1741569952,
    "model": "gpt-5.4-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"answer": 4}', "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 19,
        "completion_tokens": 210,
        "total_tokens": 229,
        "prompt_tokens_details": {"cached_tokens": 8, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 192, "audio_tokens": 0},
    },
}


def test_parse_documented_success() -> None:
    result = OpenAIAdapter().parse_response(response(OPENAI_OK, x_request_id="req_9"))
    assert result == Completion(
        text='{"answer": 4}',
        finish_reason="stop",
        usage=Usage(input_tokens=19, output_tokens=210, reasoning_tokens=192, cached_tokens=8),
        request_id="req_9",
    )


def test_request_id_falls_back_to_body_id() -> None:
    result = OpenAIAdapter().parse_response(response(OPENAI_OK))
    assert isinstance(result, Completion)
    assert result.request_id == "chatcmpl-abc123"


def test_deepseek_cache_hits_and_reasoning_content() -> None:
    body = {
        "id": "ds-1",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "4",
                    "reasoning_content": "two plus two is four " * 10,
                },
                "finish_reason": "length",
            }
        ],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 70,
            "prompt_cache_hit_tokens": 64,
            "prompt_cache_miss_tokens": 36,
        },
    }
    result = OpenAIAdapter().parse_response(response(body))
    assert isinstance(result, Completion)
    assert result.finish_reason == "length"
    assert result.usage.cached_tokens == 64
    assert result.usage.reasoning_tokens > 0  # reasoning happened although not counted


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "ab"),
        ([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}], "ok"),
    ],
)
def test_content_as_a_list_of_parts(content: Any, text: str) -> None:
    body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    result = OpenAIAdapter().parse_response(response(body))
    assert isinstance(result, Completion)
    assert result.text == text


def test_null_content_without_a_reason_is_a_bad_body_not_an_answer() -> None:
    body = {
        "choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "stop"}]
    }
    result = OpenAIAdapter().parse_response(response(body))
    assert isinstance(result, AttemptError)
    assert result.error_class == "bad_body"
    assert result.action is ErrorAction.RETRY
    assert "content is null" in result.detail


@pytest.mark.parametrize(
    ("message", "finish", "expected"),
    [
        ({"content": None, "refusal": "I can't help with that."}, "stop", "safety:refusal"),
        ({"content": None}, "length", "length"),
        (
            {"content": None, "tool_calls": [{"id": "t1", "type": "function"}]},
            "tool_calls",
            "tool_calls",
        ),
    ],
)
def test_null_content_with_a_reason_is_an_empty_model_outcome(
    message: dict[str, Any], finish: str, expected: str
) -> None:
    body = {"choices": [{"message": {"role": "assistant", **message}, "finish_reason": finish}]}
    result = OpenAIAdapter().parse_response(response(body))
    assert isinstance(result, Completion)
    assert (result.text, result.finish_reason) == ("", expected)


def test_content_filter_is_a_model_outcome() -> None:
    body = {"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]}
    result = OpenAIAdapter().parse_response(response(body))
    assert isinstance(result, Completion)
    assert result.finish_reason == "safety:content_filter"


@pytest.mark.parametrize(
    "raw",
    [
        b"<html><body><h1>502 Bad Gateway</h1></body></html>",
        b'{"id": "x", "choices": [{"message": {"content": "trunc',
        b'{"object": "list", "data": []}',
        b'{"choices": []}',
        b"[1, 2]",
    ],
)
def test_unexpected_200_bodies_are_bad_body(raw: bytes) -> None:
    result = OpenAIAdapter().parse_response(response(raw))
    assert isinstance(result, AttemptError)
    assert (result.action, result.error_class) == (ErrorAction.RETRY, "bad_body")


def test_error_429_with_retry_after_ms() -> None:
    body = {
        "error": {
            "message": "Rate limit reached for gpt-5.4-mini on tokens per min.",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    result = OpenAIAdapter().parse_response(response(body, 429, retry_after_ms="1500"))
    assert isinstance(result, AttemptError)
    assert result.action is ErrorAction.RETRY
    assert result.error_class == "http_429"
    assert result.retry_after_s == 1.5
    assert "rate_limit_exceeded" in result.detail


def test_error_400_context_length_fails_the_call() -> None:
    body = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    result = OpenAIAdapter().parse_response(response(body, 400))
    assert isinstance(result, AttemptError)
    assert result.action is ErrorAction.FAIL_CALL
    assert "[invalid_request_error/context_length_exceeded]" in result.detail


def test_error_401_stops_the_lane_and_names_the_variable() -> None:
    body = {
        "error": {
            "message": "Incorrect API key provided: sk-test-****ghij. You can find your key...",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    result = OpenAIAdapter(key_env="DEEPSEEK_API_KEY").parse_response(response(body, 401))
    assert isinstance(result, AttemptError)
    assert result.action is ErrorAction.STOP_LANE
    assert "DEEPSEEK_API_KEY" in result.detail
    assert "sk-test-****ghij" not in result.detail


def test_error_in_a_200_body_is_classified_by_its_code() -> None:
    body = {"error": {"code": 502, "message": "Upstream provider error"}}
    result = OpenAIAdapter().parse_response(response(body))
    assert isinstance(result, AttemptError)
    assert (result.action, result.error_class, result.status) == (
        ErrorAction.RETRY,
        "provider_502",
        200,
    )


def test_rate_limits_from_headers() -> None:
    headers = {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "59",
        "x-ratelimit-reset-requests": "1s",
    }
    snap = OpenAIAdapter().rate_limits(HttpResponse(200, headers, b"{}"))
    assert snap == RateLimitSnapshot(limit_requests=60, remaining_requests=59, reset_requests_s=1.0)
