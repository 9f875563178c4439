"""Bedrock Converse: signed requests, re-signing per attempt, credentials, parsing, errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from adapter_testkit import assert_error, endpoint_factory

from evaltally.adapters import http_adapter, prepare_attempt
from evaltally.adapters.base import Endpoint, HttpResponse
from evaltally.adapters.bedrock import BedrockAdapter
from evaltally.adapters.reasoning import Reasoning
from evaltally.errors import CredentialError
from evaltally.records import AttemptError, Completion, ErrorAction, Usage

ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-west-2",
}
MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"
MESSAGES = [
    {"role": "system", "content": "Answer in JSON."},
    {"role": "user", "content": "2+2?"},
]


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def adapter(env: dict[str, str] | None = None, clock: Clock | None = None) -> BedrockAdapter:
    return BedrockAdapter(env=ENV if env is None else env, clock=clock or Clock())


endpoint = endpoint_factory(
    model=MODEL,
    base_url="",
    params={"max_tokens": 128, "temperature": 0.0, "top_k": 5, "stop": ["END"]},
)


def test_request_url_body_and_signature() -> None:
    request = adapter().build_request(endpoint(), MESSAGES)
    assert request.url == (
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/"
        "anthropic.claude-haiku-4-5-20251001-v1%3A0/converse"
    )
    assert orjson.loads(request.body) == {
        "messages": [{"role": "user", "content": [{"text": "2+2?"}]}],
        "system": [{"text": "Answer in JSON."}],
        "inferenceConfig": {"maxTokens": 128, "temperature": 0.0, "stopSequences": ["END"]},
        "additionalModelRequestFields": {"top_k": 5},
    }
    auth = request.headers["authorization"]
    assert auth.startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261129/us-west-2/bedrock/aws4_request"
    )
    assert request.headers["x-amz-date"] == "20261129T120000Z"
    assert request.headers["host"] == "bedrock-runtime.us-west-2.amazonaws.com"
    assert ENV["AWS_SECRET_ACCESS_KEY"] not in repr(request)
    assert ENV["AWS_SECRET_ACCESS_KEY"].encode() not in request.body


def test_session_token_is_sent_and_signed() -> None:
    request = adapter(ENV | {"AWS_SESSION_TOKEN": "tok"}).build_request(endpoint(), MESSAGES)
    assert request.headers["x-amz-security-token"] == "tok"
    assert "x-amz-security-token" in request.headers["authorization"]


def test_prepare_attempt_resigns_with_a_fresh_date_and_same_body() -> None:
    clock = Clock()
    bedrock = adapter(clock=clock)
    first = bedrock.build_request(endpoint(), MESSAGES)
    clock.now += timedelta(minutes=9)
    second = prepare_attempt(bedrock, first)
    assert second.body == first.body
    assert second.url == first.url
    assert second.headers["x-amz-date"] == "20261129T120900Z"
    assert second.headers["authorization"] != first.headers["authorization"]
    assert "/us-west-2/bedrock/" in second.headers["authorization"]


def test_prepare_attempt_is_identity_for_unsigned_adapters() -> None:
    openai = http_adapter("openai")
    request = openai.build_request(
        Endpoint(model="m", base_url="http://x/v1", api_key="k"), MESSAGES
    )
    assert prepare_attempt(openai, request) is request


def test_region_from_extra_wins() -> None:
    request = adapter().build_request(endpoint(region="eu-central-1"), MESSAGES)
    assert "bedrock-runtime.eu-central-1.amazonaws.com" in request.url


def test_base_url_override_for_a_local_mock() -> None:
    request = adapter().build_request(endpoint(base_url="http://127.0.0.1:9999"), MESSAGES)
    assert request.url.startswith("http://127.0.0.1:9999/model/")
    assert request.headers["host"] == "127.0.0.1:9999"


@pytest.mark.parametrize(
    ("drop", "named"),
    [
        ("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID"),
        ("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"),
        ("AWS_REGION", "AWS_REGION"),
    ],
)
def test_missing_variable_is_named(drop: str, named: str) -> None:
    env = {k: v for k, v in ENV.items() if k != drop}
    with pytest.raises(CredentialError, match=named) as info:
        adapter(env).build_request(endpoint(), MESSAGES)
    assert ENV["AWS_SECRET_ACCESS_KEY"] not in str(info.value)


def test_default_region_variable_is_accepted() -> None:
    env = {k: v for k, v in ENV.items() if k != "AWS_REGION"} | {"AWS_DEFAULT_REGION": "ap-south-1"}
    assert "ap-south-1" in adapter(env).build_request(endpoint(), MESSAGES).url


def test_thinking_on_goes_to_additional_fields() -> None:
    request = adapter().build_request(endpoint(reasoning=Reasoning("on", budget=1024)), MESSAGES)
    fields = orjson.loads(request.body)["additionalModelRequestFields"]
    assert fields == {"top_k": 5, "thinking": {"type": "enabled", "budget_tokens": 1024}}


CONVERSE_OK = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "add them", "signature": "x"}}},
                {"text": '{"answer": 4}'},
            ],
        }
    },
    "stopReason": "end_turn",
    "usage": {
        "inputTokens": 30,
        "outputTokens": 12,
        "totalTokens": 42,
        "cacheReadInputTokens": 10,
        "cacheWriteInputTokens": 0,
    },
    "metrics": {"latencyMs": 321},
}


def test_parse_success() -> None:
    result = adapter().parse_response(
        HttpResponse(200, {"x-amzn-requestid": "rid-1"}, orjson.dumps(CONVERSE_OK))
    )
    assert result == Completion(
        text='{"answer": 4}',
        finish_reason="stop",
        usage=Usage(input_tokens=40, output_tokens=12, reasoning_tokens=2, cached_tokens=10),
        request_id="rid-1",
    )


def test_guardrail_is_a_model_outcome() -> None:
    body = CONVERSE_OK | {
        "stopReason": "guardrail_intervened",
        "output": {"message": {"role": "assistant", "content": [{"text": "Sorry."}]}},
    }
    result = adapter().parse_response(HttpResponse(200, {}, orjson.dumps(body)))
    assert isinstance(result, Completion)
    assert result.finish_reason == "safety:guardrail_intervened"


def test_missing_output_is_bad_body() -> None:
    result = adapter().parse_response(HttpResponse(200, {}, b'{"stopReason": "end_turn"}'))
    assert isinstance(result, AttemptError)
    assert result.error_class == "bad_body"


@pytest.mark.parametrize(
    ("status", "kind", "action"),
    [
        (429, "ThrottlingException", ErrorAction.RETRY),
        (503, "ServiceUnavailableException", ErrorAction.RETRY),
        (408, "ModelTimeoutException", ErrorAction.RETRY),
        (424, "ModelErrorException", ErrorAction.RETRY),
        (400, "ValidationException", ErrorAction.FAIL_CALL),
        (404, "ResourceNotFoundException", ErrorAction.STOP_LANE),
        (403, "AccessDeniedException", ErrorAction.STOP_LANE),
    ],
)
def test_documented_errors(status: int, kind: str, action: ErrorAction) -> None:
    headers = {
        "x-amzn-errortype": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "x-amzn-requestid": "rid-2",
    }
    body = orjson.dumps({"message": "Too many requests, please wait before trying again."})
    result = adapter().parse_response(HttpResponse(status, headers, body))
    error = assert_error(result, action, kind, key_env="AWS_ACCESS_KEY_ID", status=status)
    assert error.status == status


def test_error_type_from_body_when_header_missing() -> None:
    body = orjson.dumps({"__type": "com.amazon.coral#ThrottlingException", "message": "slow"})
    result = adapter().parse_response(HttpResponse(429, {}, body))
    assert isinstance(result, AttemptError)
    assert result.detail.startswith("[ThrottlingException]")
