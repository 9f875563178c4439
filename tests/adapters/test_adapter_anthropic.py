"""Anthropic Messages: request shape and parsing of documented response and error bodies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from adapter_testkit import assert_error, endpoint_factory, response

from evaltally.adapters.anthropic import DEFAULT_MAX_TOKENS, AnthropicAdapter
from evaltally.adapters.base import HttpResponse
from evaltally.adapters.reasoning import Reasoning
from evaltally.records import AttemptError, Completion, ErrorAction, Usage

KEY = "sk-ant-test-0123456789"
MESSAGES = [
    {"role": "system", "content": "Be terse."},
    {"role": "system", "content": "Answer in JSON."},
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": "and 3+3?"},
]


endpoint = endpoint_factory(
    model="claude-haiku-4-5",
    base_url="https://api.anthropic.com",
    api_key=KEY,
    params={"temperature": 0.0, "stop": "END"},
)


def test_request_shape() -> None:
    request = AnthropicAdapter().build_request(endpoint(), MESSAGES)
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert KEY.encode() not in request.body
    body = orjson.loads(request.body)
    assert body == {
        "model": "claude-haiku-4-5",
        "system": "Be terse.\n\nAnswer in JSON.",
        "messages": [m for m in MESSAGES if m["role"] != "system"],
        "max_tokens": DEFAULT_MAX_TOKENS,
        "temperature": 0.0,
        "stop_sequences": ["END"],
    }


def test_max_tokens_from_params() -> None:
    request = AnthropicAdapter().build_request(endpoint(params={"max_tokens": 100}), MESSAGES)
    assert orjson.loads(request.body)["max_tokens"] == 100


def test_no_system_field_without_system_messages() -> None:
    request = AnthropicAdapter().build_request(endpoint(), [{"role": "user", "content": "hi"}])
    assert "system" not in orjson.loads(request.body)


@pytest.mark.parametrize(
    ("reasoning", "thinking"),
    [
        (Reasoning("off"), None),
        (Reasoning("default"), None),
        (Reasoning("on"), {"type": "enabled", "budget_tokens": 2048}),
        (Reasoning("on", budget=5000), {"type": "enabled", "budget_tokens": 5000}),
    ],
)
def test_thinking_switch(reasoning: Reasoning, thinking: dict[str, Any] | None) -> None:
    request = AnthropicAdapter().build_request(endpoint(reasoning=reasoning), MESSAGES)
    assert orjson.loads(request.body).get("thinking") == thinking


MESSAGE_OK = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [
        {"type": "thinking", "thinking": "Three plus three is six.", "signature": "EqQB..."},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va..."},
        {"type": "text", "text": '{"answer": '},
        {"type": "text", "text": "6}"},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 12,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 100,
        "output_tokens": 40,
    },
}


def test_parse_documented_success() -> None:
    result = AnthropicAdapter().parse_response(
        response(MESSAGE_OK, headers={"request-id": "req_018EeWyXxfu5pfWkrYcMdjWG"})
    )
    assert isinstance(result, Completion)
    assert result.text == '{"answer": 6}'
    assert result.finish_reason == "stop"
    assert result.request_id == "req_018EeWyXxfu5pfWkrYcMdjWG"
    assert result.usage.input_tokens == 117
    assert result.usage.cached_tokens == 100
    assert result.usage.output_tokens == 40
    assert result.usage.reasoning_tokens >= 2  # one thinking + one redacted block counted


def test_plain_answer_has_no_reasoning() -> None:
    body = MESSAGE_OK | {
        "content": [{"type": "text", "text": "6"}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    result = AnthropicAdapter().parse_response(response(body))
    assert result == Completion(
        text="6",
        finish_reason="length",
        usage=Usage(input_tokens=3, output_tokens=1),
        request_id="msg_013Zva2CMHLNnXjNJJKqJ2EF",
    )


def test_missing_content_is_bad_body() -> None:
    result = AnthropicAdapter().parse_response(response({"type": "message", "id": "x"}))
    assert isinstance(result, AttemptError)
    assert result.error_class == "bad_body"


@pytest.mark.parametrize(
    ("status", "kind", "action"),
    [
        (400, "invalid_request_error", ErrorAction.FAIL_CALL),
        (401, "authentication_error", ErrorAction.STOP_LANE),
        (403, "permission_error", ErrorAction.STOP_LANE),
        (404, "not_found_error", ErrorAction.STOP_LANE),
        (413, "request_too_large", ErrorAction.FAIL_CALL),
        (429, "rate_limit_error", ErrorAction.RETRY),
        (500, "api_error", ErrorAction.RETRY),
        (529, "overloaded_error", ErrorAction.RETRY),
    ],
)
def test_documented_errors(status: int, kind: str, action: ErrorAction) -> None:
    body = {"type": "error", "error": {"type": kind, "message": "Overloaded"}}
    result = AnthropicAdapter().parse_response(response(body, status, {"retry-after": "3"}))
    assert_error(
        result, action, kind, key_env="ANTHROPIC_API_KEY", status=status, retry_after_s=3.0
    )


def test_rate_limit_headers() -> None:
    reset = (datetime.now(UTC) + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    headers = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "49",
        "anthropic-ratelimit-requests-reset": reset,
        "anthropic-ratelimit-tokens-limit": "100000",
        "anthropic-ratelimit-tokens-remaining": "99000",
        "anthropic-ratelimit-tokens-reset": reset,
    }
    snap = AnthropicAdapter().rate_limits(HttpResponse(200, headers, b"{}"))
    assert snap is not None
    assert (snap.limit_requests, snap.remaining_requests, snap.remaining_tokens) == (50, 49, 99000)
    assert snap.reset_tokens_s is not None and 25 < snap.reset_tokens_s <= 30
