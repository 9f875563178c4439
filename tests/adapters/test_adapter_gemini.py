"""Gemini generateContent: request shape, safety outcomes, usage, error bodies."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from adapter_testkit import assert_error, endpoint_factory, response

from evaltally.adapters.base import HttpResponse
from evaltally.adapters.gemini import GeminiAdapter
from evaltally.adapters.reasoning import Reasoning
from evaltally.records import AttemptError, Completion, ErrorAction, Usage

KEY = "AIzaSyTEST-0123456789abcdefghijklmno"
MESSAGES = [
    {"role": "system", "content": "Answer in JSON."},
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": "3+3?"},
]


endpoint = endpoint_factory(
    model="gemini-3.5-flash",
    base_url="https://generativelanguage.googleapis.com",
    api_key=KEY,
    params={"temperature": 0.0, "max_tokens": 256, "top_p": 0.9, "stop": "END"},
)


def test_request_shape_and_key_in_header_only() -> None:
    request = GeminiAdapter().build_request(endpoint(), MESSAGES)
    assert request.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-3.5-flash:generateContent"
    )
    assert "key=" not in request.url
    assert request.headers["x-goog-api-key"] == KEY
    assert KEY.encode() not in request.body
    assert orjson.loads(request.body) == {
        "systemInstruction": {"parts": [{"text": "Answer in JSON."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "2+2?"}]},
            {"role": "model", "parts": [{"text": "4"}]},
            {"role": "user", "parts": [{"text": "3+3?"}]},
        ],
        "generationConfig": {
            "temperature": 0.0,
            "maxOutputTokens": 256,
            "topP": 0.9,
            "stopSequences": ["END"],
        },
    }


def test_models_prefix_is_not_doubled() -> None:
    request = GeminiAdapter().build_request(endpoint(model="models/gemini-x"), MESSAGES)
    assert request.url.endswith("/v1beta/models/gemini-x:generateContent")


@pytest.mark.parametrize(
    ("reasoning", "thinking"),
    [
        (Reasoning("off"), {"thinkingBudget": 0}),
        (Reasoning("on"), {"thinkingBudget": -1}),
        (Reasoning("on", budget=512), {"thinkingBudget": 512}),
        (Reasoning("on", effort="low"), {"thinkingLevel": "low"}),
        (Reasoning("default"), None),
    ],
)
def test_thinking_config(reasoning: Reasoning, thinking: dict[str, Any] | None) -> None:
    request = GeminiAdapter().build_request(endpoint(params={}, reasoning=reasoning), MESSAGES)
    config = orjson.loads(request.body).get("generationConfig", {})
    assert config.get("thinkingConfig") == thinking


OK = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {"text": "Let me add these.", "thought": True},
                    {"text": '{"answer": 6}'},
                ],
                "role": "model",
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 20,
        "candidatesTokenCount": 6,
        "thoughtsTokenCount": 120,
        "cachedContentTokenCount": 8,
        "totalTokenCount": 146,
    },
    "modelVersion": "gemini-3.5-flash",
    "responseId": "resp-abc",
}


def test_parse_success_skips_thoughts_and_counts_them() -> None:
    assert GeminiAdapter().parse_response(response(OK)) == Completion(
        text='{"answer": 6}',
        finish_reason="stop",
        usage=Usage(input_tokens=20, output_tokens=126, reasoning_tokens=120, cached_tokens=8),
        request_id="resp-abc",
    )


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT"])
def test_safety_finish_is_a_model_outcome(reason: str) -> None:
    body = {
        "candidates": [
            {
                "content": {"parts": [{"text": "partial"}], "role": "model"},
                "finishReason": reason,
                "safetyRatings": [
                    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}
                ],
            }
        ],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1},
    }
    result = GeminiAdapter().parse_response(response(body))
    assert isinstance(result, Completion)
    assert result.text == ""
    assert result.finish_reason == f"safety:{reason}"
    assert result.usage.input_tokens == 9


def test_blocked_prompt_is_a_model_outcome() -> None:
    body = {
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
    }
    result = GeminiAdapter().parse_response(response(body))
    assert isinstance(result, Completion)
    assert (result.text, result.finish_reason) == ("", "safety:prompt:SAFETY")


def test_max_tokens_with_only_thoughts_is_an_empty_answer() -> None:
    body = {
        "candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 5, "thoughtsTokenCount": 256},
    }
    result = GeminiAdapter().parse_response(response(body))
    assert isinstance(result, Completion)
    assert (result.text, result.finish_reason) == ("", "length")
    assert result.usage.reasoning_tokens == 256


@pytest.mark.parametrize("body", [{}, {"candidates": []}, {"candidates": [{"index": 0}]}])
def test_shapeless_200_is_bad_body(body: dict[str, Any]) -> None:
    result = GeminiAdapter().parse_response(response(body))
    assert isinstance(result, AttemptError)
    assert result.error_class == "bad_body"


@pytest.mark.parametrize(
    ("code", "status", "action"),
    [
        (429, "RESOURCE_EXHAUSTED", ErrorAction.RETRY),
        (503, "UNAVAILABLE", ErrorAction.RETRY),
        (400, "INVALID_ARGUMENT", ErrorAction.FAIL_CALL),
        (403, "PERMISSION_DENIED", ErrorAction.STOP_LANE),
    ],
)
def test_documented_errors(code: int, status: str, action: ErrorAction) -> None:
    body = {
        "error": {
            "code": code,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": status,
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}],
        }
    }
    result = GeminiAdapter().parse_response(response(body, code))
    assert_error(result, action, status, key_env="GEMINI_API_KEY", retry_after_s=12.0)


def test_no_rate_limit_headers() -> None:
    assert GeminiAdapter().rate_limits(HttpResponse(200, {}, b"{}")) is None


def test_invalid_key_400_stops_the_lane() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        }
    }
    result = GeminiAdapter().parse_response(response(body, 400))
    assert isinstance(result, AttemptError)
    assert (result.action, result.error_class) == (ErrorAction.STOP_LANE, "http_400")
    assert "GEMINI_API_KEY" in result.detail
