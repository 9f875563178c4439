"""Anthropic Messages API.

POST {base_url}/v1/messages with `x-api-key` and `anthropic-version: 2023-06-01`. The system
prompt is the top-level `system` field, not a message. `max_tokens` is required by the API: it
comes from params, else DEFAULT_MAX_TOKENS. `stop` (the OpenAI spelling used across configs) is
sent as `stop_sequences`; other params pass through.

Usage is normalized like every adapter: input_tokens counts ALL input (Anthropic reports
uncached, cache-read and cache-write input separately), output_tokens includes thinking. The API
does not count thinking tokens apart, so when thinking blocks come back their text is estimated
(reasoning.approx_tokens) and redacted thinking counts as 1, so the audit sees it happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.adapters.base import Endpoint, HttpRequest, HttpResponse
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.adapters.ratelimit_headers import anthropic_snapshot
from evaltally.adapters.reasoning import approx_tokens, deep_merge
from evaltally.adapters.wire import (
    WireAdapter,
    as_dict,
    as_int,
    as_list,
    as_str,
    cached_input_usage,
    header_or,
    join_url,
    json_post,
    normalize_finish,
    split_system,
)
from evaltally.records import AttemptError, Completion, Message, RateLimitSnapshot

DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
"""Sent when params give no max_tokens (the API requires one); leaves room for a thinking budget."""

KNOWN_PARAMS = frozenset(
    {"max_tokens", "temperature", "top_p", "top_k", "stop", "stop_sequences", "metadata"}
    | {"service_tier"}
)
"""Messages API fields checked at config time (adapters/params.py)."""

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "refusal": "safety:refusal",
}


@dataclass(kw_only=True, eq=False)
class AnthropicAdapter(WireAdapter):
    """Messages API; reasoning "on" sends `thinking: {type: enabled, budget_tokens}`."""

    key_env: str | None = DEFAULT_KEY_ENV
    reasoning_style: str = "anthropic"

    def build_request(self, endpoint: Endpoint, messages: Sequence[Message]) -> HttpRequest:
        system, rest = split_system(messages)
        params = dict(endpoint.params)
        if "stop" in params:
            stop = params.pop("stop")
            params["stop_sequences"] = [stop] if isinstance(stop, str) else stop
        payload: dict[str, Any] = deep_merge(self.switch(endpoint), params)
        payload.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        payload["model"] = endpoint.model
        payload["messages"] = [{"role": m["role"], "content": m["content"]} for m in rest]
        if system is not None:
            payload["system"] = system
        headers = {"anthropic-version": endpoint.api_version or API_VERSION}
        if endpoint.api_key:
            headers["x-api-key"] = endpoint.api_key
        return json_post(join_url(endpoint.base_url, "v1/messages"), payload, headers)

    def parse_response(self, response: HttpResponse) -> Completion | AttemptError:
        data = decode_json(response.body)
        if not 200 <= response.status <= 299:
            error = as_dict(as_dict(data).get("error"))
            return self.http_error(
                response.status,
                response.headers,
                error_type=as_str(error.get("type")),
                message=as_str(error.get("message")),
            )
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            return bad_body(response.body, "no content block list", response.status)
        text, thinking_tokens = _read_blocks(data["content"])
        usage = as_dict(data.get("usage"))
        return Completion(
            text=text,
            finish_reason=normalize_finish(data.get("stop_reason"), FINISH_REASONS),
            usage=cached_input_usage(
                uncached=as_int(usage.get("input_tokens")),
                cache_read=as_int(usage.get("cache_read_input_tokens")),
                cache_write=as_int(usage.get("cache_creation_input_tokens")),
                output=as_int(usage.get("output_tokens")),
                reasoning=thinking_tokens,
            ),
            request_id=header_or(response.headers, "request-id", data.get("id")),
        )

    def rate_limits(self, response: HttpResponse) -> RateLimitSnapshot | None:
        return anthropic_snapshot(response.headers)


def _read_blocks(blocks: list[Any]) -> tuple[str, int]:
    """(text of the text blocks, estimated thinking tokens). Thinking is skipped but counted."""
    texts: list[str] = []
    thinking = 0
    for block in as_list(blocks):
        block = as_dict(block)
        kind = block.get("type")
        if kind == "text":
            texts.append(as_str(block.get("text")) or "")
        elif kind == "thinking":
            thinking += max(1, approx_tokens(as_str(block.get("thinking")) or ""))
        elif kind == "redacted_thinking":
            thinking += 1
    return "".join(texts), thinking
