"""OpenAI Chat Completions (POST /v1/chat/completions), also what OpenAI-compatible APIs speak."""

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
    require_list,
    text_of,
)
from evaltally.mockserver.ratelimit import LimitSnapshot, openai_duration

_FINISH = {
    "stop": "stop",
    "length": "length",
    "safety": "content_filter",
    "blocked": "content_filter",
}
_ROLES = {"system", "developer", "user", "assistant", "tool"}
# (type, code) per status, after OpenAI's documented error codes.
_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "timeout"),
    529: ("server_error", "overloaded"),
}


class OpenAIDialect(Dialect):
    name: ClassVar[str] = "openai"
    # With and without /v1: OpenAI-compatible base URLs differ on whether they include it.
    routes: ClassVar[tuple[str, ...]] = ("/v1/chat/completions", "/chat/completions")

    def check_key(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str | None
    ) -> None:
        token = bearer_token(headers)
        if not token:
            raise ClientFault(
                401,
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            )
        if key is not None and token != key:
            raise ClientFault(401, "Incorrect API key provided.", "invalid_api_key")

    def parse(self, body: Any, headers: Mapping[str, str], path_model: str | None) -> Prompt:
        if not isinstance(body, dict):
            raise ClientFault(400, "We could not parse the JSON body of your request.")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise ClientFault(400, "you must provide a model parameter")
        system: list[str] = []
        msgs: list[tuple[str, str]] = []
        for i, m in enumerate(require_list(body, "messages")):
            if not isinstance(m, dict) or m.get("role") not in _ROLES:
                raise ClientFault(400, f"messages[{i}].role: must be one of {sorted(_ROLES)}")
            text = text_of(m.get("content"), f"messages[{i}].content")
            role = m["role"]
            if role in ("system", "developer"):
                system.append(text)
            else:
                msgs.append(("assistant" if role == "assistant" else "user", text))
        temp = body.get("temperature")
        if temp is not None and (not isinstance(temp, int | float) or not 0 <= temp <= 2):
            raise ClientFault(400, "temperature: must be a number between 0 and 2")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        return Prompt(
            model=model,
            system="\n".join(system),
            messages=tuple(msgs),
            max_tokens=optional_int(limit, "max_tokens"),
        )

    def success(self, prompt: Prompt, completion: Completion, ctx: ReplyContext) -> dict[str, Any]:
        filtered = completion.finish in ("safety", "blocked")
        content: Any = None if filtered else completion.text
        reasoning = completion.reasoning_tokens
        usage: dict[str, Any] = {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "total_tokens": completion.prompt_tokens + completion.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": completion.cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }
        shape = completion.reasoning_shape
        if shape != "usage" and reasoning and not filtered:
            del usage["completion_tokens_details"]
            if shape == "inline":
                content = f"<think>\n{completion.thinking}\n</think>\n\n{completion.text}"
            elif shape == "parts":
                thinking = [{"type": "text", "text": completion.thinking}]
                content = [{"type": "thinking", "thinking": thinking}]
                content.append({"type": "text", "text": completion.text})
            else:  # total_only: thinking counted in the total alone
                usage["completion_tokens"] = completion.completion_tokens - reasoning
        return {
            "id": f"chatcmpl-{ctx.request_id[:24]}",
            "object": "chat.completion",
            "created": ctx.created,
            "model": prompt.model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "refusal": None,
                    },
                    "logprobs": None,
                    "finish_reason": _FINISH[completion.finish],
                }
            ],
            "usage": usage,
            "system_fingerprint": "fp_evaltally_mock",
        }

    def error_body(self, err: ErrorReply, ctx: ReplyContext) -> dict[str, Any]:
        etype, ecode = _ERRORS.get(err.status, ("server_error", None))
        if err.status == 429 and err.code == "tokens":
            etype = "tokens"
        elif err.code is not None and err.status != 429:
            ecode = err.code
        return {"error": {"message": err.message, "type": etype, "param": None, "code": ecode}}

    def id_headers(self, ctx: ReplyContext) -> dict[str, str]:
        return {
            "x-request-id": f"req_{ctx.request_id}",
            "openai-processing-ms": str(ctx.latency_ms),
        }

    def limit_headers(self, snap: LimitSnapshot) -> dict[str, str]:
        return bucket_headers(
            snap, lambda family, field: f"x-ratelimit-{field}-{family}", openai_duration
        )
