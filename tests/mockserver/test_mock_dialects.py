"""Each dialect's success and error shapes, against a real server on loopback."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from evaltally.mockserver import MockConfig, MockServer

OPENAI_H = {"Authorization": "Bearer sk-test"}
ANTHROPIC_H = {"x-api-key": "sk-ant", "anthropic-version": "2023-06-01"}
GEMINI_H = {"x-goog-api-key": "g-key"}
BEDROCK_H = {
    "Authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/"
    "aws4_request, SignedHeaders=host;x-amz-date, Signature=abc"
}


async def post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, Any, Any]:
    async with aiohttp.ClientSession() as s, s.post(url, json=body, headers=headers) as r:
        raw = await r.read()
        return r.status, orjson.loads(raw), r.headers


def openai_body(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-x",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}],
        **extra,
    }


async def test_openai_success_shape() -> None:
    async with MockServer(MockConfig(reasoning_tokens=7, cached_tokens=2)) as srv:
        status, body, headers = await post(
            f"{srv.base_url}/v1/chat/completions", openai_body(max_tokens=100), OPENAI_H
        )
    assert status == 200
    assert body["object"] == "chat.completion" and body["model"] == "gpt-x"
    assert body["id"].startswith("chatcmpl-") and isinstance(body["created"], int)
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["message"]["role"] == "assistant"
    assert orjson.loads(choice["message"]["content"])["ok"] is True
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 7
    assert usage["completion_tokens"] > 7
    assert usage["prompt_tokens_details"]["cached_tokens"] == 2
    assert headers["x-request-id"].startswith("req_")


async def test_openai_errors_shape_and_auth() -> None:
    async with MockServer(MockConfig(api_key="right", models=("gpt-x",))) as srv:
        url = f"{srv.base_url}/v1/chat/completions"
        status, body, _ = await post(url, openai_body(), {})
        assert status == 401 and body["error"]["type"] == "invalid_request_error"
        status, body, _ = await post(url, openai_body(), {"Authorization": "Bearer wrong"})
        assert status == 401 and body["error"]["code"] == "invalid_api_key"
        auth = {"Authorization": "Bearer right"}
        status, body, _ = await post(url, {"model": "gpt-x", "messages": []}, auth)
        assert status == 400 and set(body["error"]) == {"message", "type", "param", "code"}
        status, body, _ = await post(url, {**openai_body(), "model": "nope"}, auth)
        assert status == 404 and body["error"]["code"] == "model_not_found"
        # The route without /v1 serves base URLs that already end in /v1.
        status, _, _ = await post(f"{srv.base_url}/chat/completions", openai_body(), auth)
        assert status == 200


async def test_max_tokens_truncates_with_length_finish() -> None:
    async with MockServer(MockConfig(default_answer="x" * 400, reasoning_tokens=3)) as srv:
        url = f"{srv.base_url}/v1/chat/completions"
        _, body, _ = await post(url, openai_body(max_completion_tokens=10), OPENAI_H)
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 10
    assert len(body["choices"][0]["message"]["content"]) == 7 * 4


async def test_anthropic_success_shape_with_thinking() -> None:
    body_in = {
        "model": "claude-x",
        "max_tokens": 256,
        "system": "be brief",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }
    async with MockServer(MockConfig(reasoning_tokens=5, cached_tokens=1, rpm=600)) as srv:
        status, body, headers = await post(f"{srv.base_url}/v1/messages", body_in, ANTHROPIC_H)
    assert status == 200
    assert body["type"] == "message" and body["role"] == "assistant"
    assert body["model"] == "claude-x" and body["stop_reason"] == "end_turn"
    assert [b["type"] for b in body["content"]] == ["thinking", "text"]
    usage = body["usage"]
    assert usage["cache_read_input_tokens"] == 1 and usage["output_tokens"] > 5
    assert headers["request-id"].startswith("req_")
    assert headers["anthropic-ratelimit-requests-limit"] == "600"
    assert headers["anthropic-ratelimit-requests-reset"].endswith("Z")


async def test_anthropic_validation_errors() -> None:
    async with MockServer() as srv:
        url = f"{srv.base_url}/v1/messages"
        msgs = [{"role": "user", "content": "hi"}]
        status, body, _ = await post(url, {"model": "c", "messages": msgs}, ANTHROPIC_H)
        assert status == 400 and body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error"
        assert "max_tokens" in body["error"]["message"]
        no_version = {"x-api-key": "k"}
        status, body, _ = await post(
            url, {"model": "c", "max_tokens": 5, "messages": msgs}, no_version
        )
        assert status == 400 and "anthropic-version" in body["error"]["message"]
        status, body, _ = await post(url, {"model": "c", "max_tokens": 5, "messages": msgs}, {})
        assert status == 401 and body["error"]["type"] == "authentication_error"


def gemini_body(text: str = "hi") -> dict[str, Any]:
    return {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "earlier"}]},
            {"role": "model", "parts": [{"text": "ok"}]},
            {"role": "user", "parts": [{"text": text}]},
        ],
        "generationConfig": {"maxOutputTokens": 200, "temperature": 0},
    }


async def test_gemini_success_shape_and_thoughts() -> None:
    async with MockServer(MockConfig(reasoning_tokens=11)) as srv:
        url = f"{srv.base_url}/v1beta/models/gemini-2.5-flash:generateContent"
        status, body, _ = await post(url, gemini_body(), GEMINI_H)
        # The key may come as a query parameter instead of the header.
        status2, _, _ = await post(f"{url}?key=abc", gemini_body(), {})
    assert status == 200 and status2 == 200
    cand = body["candidates"][0]
    assert cand["finishReason"] == "STOP" and cand["content"]["role"] == "model"
    assert orjson.loads(cand["content"]["parts"][0]["text"])["ok"] is True
    meta = body["usageMetadata"]
    assert meta["thoughtsTokenCount"] == 11
    assert meta["totalTokenCount"] == (
        meta["promptTokenCount"] + meta["candidatesTokenCount"] + meta["thoughtsTokenCount"]
    )
    assert body["modelVersion"] == "gemini-2.5-flash"


async def test_gemini_safety_block_and_errors() -> None:
    cfg = MockConfig(
        faults=(
            MockConfig.from_mapping({"faults": [{"kind": "safety"}, {"kind": "blocked"}]}).faults
        ),
    )
    async with MockServer(cfg) as srv:
        url = f"{srv.base_url}/v1beta/models/g:generateContent"
        _, first, _ = await post(url, gemini_body("a"), GEMINI_H)
        _, second, _ = await post(url, gemini_body("b"), GEMINI_H)
        status, err, _ = await post(url, gemini_body("c"), {})
        srv.update(faults=[{"kind": "429", "retry_after": 2}])
        status429, err429, h429 = await post(url, gemini_body("d"), GEMINI_H)
    assert first["candidates"][0]["finishReason"] == "SAFETY"
    assert "content" not in first["candidates"][0]
    assert second["promptFeedback"]["blockReason"] == "SAFETY" and "candidates" not in second
    assert status == 403 and err["error"]["status"] == "PERMISSION_DENIED"
    assert status429 == 429 and err429["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert err429["error"]["code"] == 429
    assert err429["error"]["details"][0]["retryDelay"] == "2s"
    assert h429["Retry-After"] == "2"


def bedrock_body() -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system": [{"text": "be brief"}],
        "inferenceConfig": {"maxTokens": 100, "temperature": 0, "topP": 1},
    }


async def test_bedrock_success_shape() -> None:
    async with MockServer(MockConfig(reasoning_tokens=4)) as srv:
        url = f"{srv.base_url}/model/anthropic.claude-3-haiku-20240307-v1:0/converse"
        status, body, headers = await post(url, bedrock_body(), BEDROCK_H)
    assert status == 200
    msg = body["output"]["message"]
    assert msg["role"] == "assistant"
    assert "reasoningContent" in msg["content"][0]
    assert orjson.loads(msg["content"][-1]["text"])["ok"] is True
    assert body["stopReason"] == "end_turn"
    u = body["usage"]
    assert u["totalTokens"] == u["inputTokens"] + u["outputTokens"]
    assert "latencyMs" in body["metrics"]
    assert len(headers["x-amzn-RequestId"]) == 36


async def test_bedrock_auth_and_throttling() -> None:
    cfg = MockConfig(
        api_key="AKIDEXAMPLE",
        faults=(MockConfig.from_mapping({"faults": [{"kind": "429", "scope": "body"}]}).faults),
    )
    async with MockServer(cfg) as srv:
        url = f"{srv.base_url}/model/m/converse"
        status, body, headers = await post(url, bedrock_body(), {})
        assert status == 403 and "MissingAuthenticationToken" in headers["x-amzn-ErrorType"]
        wrong = {"Authorization": BEDROCK_H["Authorization"].replace("AKIDEXAMPLE", "AKIDOTHER")}
        status, body, headers = await post(url, bedrock_body(), wrong)
        assert status == 403 and "UnrecognizedClient" in headers["x-amzn-ErrorType"]
        status, body, headers = await post(url, bedrock_body(), BEDROCK_H)
        assert status == 429 and headers["x-amzn-ErrorType"].startswith("ThrottlingException")
        assert set(body) == {"message"}
        status, _, _ = await post(url, bedrock_body(), BEDROCK_H)
        assert status == 200
