"""Anthropic Messages API (POST /v1/messages)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from evaltally.mockserver.answers import Completion, Prompt
from evaltally.mockserver.dialects.base import (
    ClientFault,
    Dialect,
    ErrorReply,
    ReplyContext,
    bearer_token,
    bucket_headers,
    optional_int,
    rfc3339_after,
    text_of,
    user_assistant_turns,
)
from evaltally.mockserver.ratelimit import LimitSnapshot

_STOP = {"stop": "end_turn", "length": "max_tokens", "safety": "refusal", "blocked": "refusal"}
# Error "type" per status, from Anthropic's documented error list. 529 is overloaded_error.
_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class AnthropicDialect(Dialect):
    name: ClassVar[str] = "anthropic"
    routes: ClassVar[tuple[str, ...]] = ("/v1/messages",)

    def check_key(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str | None
    ) -> None:
        sent = headers.get("x-api-key", "") or bearer_token(headers)
        if not sent:
            raise ClientFault(401, "x-api-key header is required")
        if key is not None and sent != key:
            raise ClientFault(401, "invalid x-api-key")

    def parse(self, body: Any, headers: Mapping[str, str], path_model: str | None) -> Prompt:
        if not headers.get("anthropic-version"):
            raise ClientFault(400, "anthropic-version: header is required")
        if not isinstance(body, dict):
            raise ClientFault(400, "The request body is not valid JSON.")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ClientFault(400, "model: Field required")
        if "max_tokens" not in body:
            raise ClientFault(400, "max_tokens: Field required")
        max_tokens = optional_int(body["max_tokens"], "max_tokens")
        # The Messages API has no system role: system text is the top-level field.
        turns = user_assistant_turns(body, text_of, "Input should be 'user' or 'assistant'")
        temp = body.get("temperature")
        if temp is not None and (not isinstance(temp, int | float) or not 0 <= temp <= 1):
            raise ClientFault(400, "temperature: Input should be less than or equal to 1")
        return Prompt(
            model=model,
            system=text_of(body.get("system"), "system"),
            messages=turns,
            max_tokens=max_tokens,
        )

    def success(self, prompt: Prompt, completion: Completion, ctx: ReplyContext) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if completion.reasoning_tokens:
            # Extended thinking: the thinking block precedes the answer; its tokens are billed
            # inside output_tokens (Anthropic reports no separate count).
            content.append(
                {"type": "thinking", "thinking": "(mock reasoning)", "signature": "mock-signature"}
            )
        if completion.finish not in ("safety", "blocked") and completion.text:
            content.append({"type": "text", "text": completion.text})
        return {
            "id": f"msg_{ctx.request_id[:24]}",
            "type": "message",
            "role": "assistant",
            "model": prompt.model,
            "content": content,
            "stop_reason": _STOP[completion.finish],
            "stop_sequence": None,
            "usage": {
                # input_tokens excludes tokens read from the prompt cache, as Anthropic reports.
                "input_tokens": completion.prompt_tokens - completion.cached_tokens,
                "output_tokens": completion.completion_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": completion.cached_tokens,
            },
        }

    def model_missing(self, model: str) -> ClientFault:
        return ClientFault(404, f"model: {model}")

    def error_body(self, err: ErrorReply, ctx: ReplyContext) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {"type": _ERRORS.get(err.status, "api_error"), "message": err.message},
            "request_id": f"req_{ctx.request_id[:24]}",
        }

    def id_headers(self, ctx: ReplyContext) -> dict[str, str]:
        return {"request-id": f"req_{ctx.request_id[:24]}"}

    def limit_headers(self, snap: LimitSnapshot) -> dict[str, str]:
        # One shared token bucket in the mock; the input/output families mirror it.
        return bucket_headers(
            snap,
            lambda family, field: f"anthropic-ratelimit-{family}-{field}",
            rfc3339_after,
            ("tokens", "input-tokens", "output-tokens"),
        )
