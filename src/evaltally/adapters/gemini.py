"""Google Gemini generateContent.

POST {base_url}/v1beta/models/{model}:generateContent with the key in the `x-goog-api-key`
header (never `?key=` in the URL: URLs end up in logs). Roles map user -> "user",
assistant -> "model"; system messages become `systemInstruction`. Params map to
`generationConfig` (max_tokens -> maxOutputTokens, top_p -> topP, stop -> stopSequences, ...);
passthrough params (the config's [models.passthrough]) go into generationConfig unchanged,
`safetySettings` goes top-level.

A safety block is a MODEL OUTCOME, not an error: a candidate finishing SAFETY, RECITATION,
BLOCKLIST, PROHIBITED_CONTENT, SPII, MODEL_ARMOR (Vertex AI's Model Armor) or an IMAGE_* block,
or a prompt with
`promptFeedback.blockReason`, becomes a Completion with empty text and finish_reason
"safety:<REASON>" ("safety:prompt:<REASON>" for a blocked prompt). It is recorded, not retried.

A rejected key comes back as 400 INVALID_ARGUMENT with ErrorInfo reason API_KEY_INVALID; that is
classified STOP_LANE like a 401, not FAIL_CALL.

Usage: output_tokens = candidatesTokenCount + thoughtsTokenCount (Gemini reports them apart and
bills both), reasoning_tokens = thoughtsTokenCount, input_tokens = promptTokenCount (it already
includes cachedContentTokenCount).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from evaltally.adapters.base import Endpoint, HttpRequest, HttpResponse
from evaltally.adapters.http_errors import (
    bad_body,
    decode_json,
    google_capacity,
    google_error_reasons,
    google_retry_delay,
)
from evaltally.adapters.reasoning import deep_merge
from evaltally.adapters.wire import (
    WireAdapter,
    as_dict,
    as_int,
    as_list,
    as_str,
    header_or,
    join_url,
    json_post,
    normalize_finish,
    split_system,
)
from evaltally.records import AttemptError, Completion, Message, RateLimitSnapshot, Usage

DEFAULT_KEY_ENV = "GEMINI_API_KEY"
API_VERSION = "v1beta"

SAFETY_FINISH = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",  # Vertex AI: the response was blocked by Model Armor
    }
)
FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}

# OpenAI-style param names used across configs -> generationConfig field names.
PARAM_NAMES = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "max_output_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "n": "candidateCount",
    "response_mime_type": "responseMimeType",
}
TOP_LEVEL_PARAMS = {"safetySettings": "safetySettings", "safety_settings": "safetySettings"}
KNOWN_PARAMS = frozenset(PARAM_NAMES) | frozenset(TOP_LEVEL_PARAMS)
"""Checked at config time (adapters/params.py); generationConfig fields under their own
camelCase names go in [models.passthrough]."""
# ErrorInfo reasons that mean the key itself was rejected, whatever the HTTP status says.
AUTH_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED"})
ROLES = {"user": "user", "assistant": "model", "model": "model"}


@dataclass(kw_only=True, eq=False)
class GeminiAdapter(WireAdapter):
    """generateContent; reasoning "off" sends thinkingConfig.thinkingBudget = 0."""

    key_env: str | None = DEFAULT_KEY_ENV
    reasoning_style: str = "gemini"

    def build_request(self, endpoint: Endpoint, messages: Sequence[Message]) -> HttpRequest:
        system, rest = split_system(messages)
        payload, config = _split_params(endpoint.params)
        config = deep_merge(self.switch(endpoint), config)
        payload["contents"] = [
            {"role": ROLES.get(m["role"], m["role"]), "parts": [{"text": m["content"]}]}
            for m in rest
        ]
        if system is not None:
            payload["systemInstruction"] = {"parts": [{"text": system}]}
        if config:
            payload["generationConfig"] = config
        model = endpoint.model.removeprefix("models/")
        version = endpoint.api_version or API_VERSION
        path = f"{version}/models/{quote(model, safe='')}:generateContent"
        headers = {"x-goog-api-key": endpoint.api_key} if endpoint.api_key else {}
        return json_post(join_url(endpoint.base_url, path), payload, headers)

    def parse_response(self, response: HttpResponse) -> Completion | AttemptError:
        data = decode_json(response.body)
        if not 200 <= response.status <= 299:
            error = as_dict(as_dict(data).get("error"))
            return self.http_error(
                response.status,
                response.headers,
                error_type=as_str(error.get("status")),
                message=as_str(error.get("message")),
                retry_hint_s=google_retry_delay(error.get("details")),
                auth_failure=bool(AUTH_REASONS & google_error_reasons(error.get("details"))),
                capacity_type=google_capacity(as_str(error.get("status")), error.get("details")),
            )
        if not isinstance(data, dict):
            return bad_body(response.body, "response is not a JSON object", response.status)
        usage = _usage(data.get("usageMetadata"))
        request_id = header_or(response.headers, "x-request-id", data.get("responseId"))
        candidate = as_dict(next(iter(as_list(data.get("candidates"))), None))
        if not candidate:
            block = as_str(as_dict(data.get("promptFeedback")).get("blockReason"))
            if block is None:
                return bad_body(response.body, "no candidates", response.status)
            return Completion("", f"safety:prompt:{block}", usage, request_id)
        finish = as_str(candidate.get("finishReason"))
        if finish in SAFETY_FINISH:
            return Completion("", f"safety:{finish}", usage, request_id)
        if "content" not in candidate and finish is None:
            return bad_body(response.body, "candidate without content", response.status)
        parts = as_list(as_dict(candidate.get("content")).get("parts"))
        text = "".join(
            as_str(p.get("text")) or ""
            for p in map(as_dict, parts)
            if not p.get("thought")  # thought summaries are not the answer
        )
        return Completion(text, normalize_finish(finish, FINISH_REASONS), usage, request_id)

    def rate_limits(self, response: HttpResponse) -> RateLimitSnapshot | None:
        # The Gemini API sends no rate-limit headers; its 429 body carries RetryInfo instead.
        return None


def _split_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(top-level payload fields, generationConfig) from the configured params."""
    top: dict[str, Any] = {}
    config: dict[str, Any] = {}
    for key, value in params.items():
        if key in TOP_LEVEL_PARAMS:
            top[TOP_LEVEL_PARAMS[key]] = value
        elif key == "stop":
            config["stopSequences"] = [value] if isinstance(value, str) else value
        else:
            config[PARAM_NAMES.get(key, key)] = value
    return top, config


def _usage(raw: object) -> Usage:
    meta = as_dict(raw)
    thoughts = as_int(meta.get("thoughtsTokenCount"))
    return Usage(
        input_tokens=as_int(meta.get("promptTokenCount")),
        output_tokens=as_int(meta.get("candidatesTokenCount")) + thoughts,
        reasoning_tokens=thoughts,
        cached_tokens=as_int(meta.get("cachedContentTokenCount")),
        reported=bool(meta),
    )
