"""OpenAI chat completions, for OpenAI and every OpenAI-compatible server.

POST {base_url}/chat/completions with `Authorization: Bearer <key>` (omitted when the endpoint
has no key: local vLLM, Ollama, llama.cpp). `endpoint.params` pass through as body fields
(temperature, max_tokens, top_p, seed, stop, ...), after the preset's reasoning switch, so an
explicit param always wins.

Response reading is lenient in the ways compatible servers differ (`message.content` a list of
parts; reasoning as `reasoning_content` or `reasoning`; DeepSeek's `prompt_cache_hit_tokens`)
and strict about the shape: no `choices[0].message` means bad_body. A `content` of null is an
answer only when the message says why it is empty (a `refusal`, which becomes finish reason
"safety:refusal"; `tool_calls`; finish reason "length", the budget spent on reasoning, or
"content_filter"); otherwise the server produced nothing, and the attempt is bad_body (retried,
then failed).

Reasoning is read from wherever a host puts it: `reasoning_content`/`reasoning` fields, content
parts of type "reasoning"/"thinking" (Mistral's thinking parts hold a list of text chunks), and
a leading `<think>…</think>` block inside the content (thinking.py; `inline_thinking`, on by
default, tags settable per model). Visible thinking without a count gets an estimated count;
usage whose `total_tokens` exceeds prompt + completion (Gemini's OpenAI-compatible endpoint
leaves thinking out of `completion_tokens`) records the difference as reasoning output. Both
are noted with the outcome (`Usage.note`). A body without `usage` records no counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from evaltally.adapters.base import Endpoint, HttpRequest, HttpResponse
from evaltally.adapters.http_errors import bad_body, decode_json
from evaltally.adapters.ratelimit_headers import any_snapshot
from evaltally.adapters.reasoning import approx_tokens, deep_merge
from evaltally.adapters.thinking import INLINE_THINK, ThinkTags, split_thinking
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
)
from evaltally.records import (
    REASONING_INFERRED,
    AttemptError,
    Completion,
    Message,
    RateLimitSnapshot,
    Usage,
)

DEFAULT_KEY_ENV = "OPENAI_API_KEY"

FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "content_filter": "safety:content_filter",
    "tool_calls": "tool_calls",
}

KNOWN_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "n",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "response_format",
        "reasoning_effort",
        "verbosity",
        "service_tier",
        "user",
        "store",
        "metadata",
    }
)
"""Chat-completions body fields checked at config time (adapters/params.py); every one passes
through as a body field."""

_REASONING_PART_TYPES = frozenset({"reasoning", "thinking"})


@dataclass(kw_only=True, eq=False)
class OpenAIAdapter(WireAdapter):
    """Chat completions. `reasoning_style` comes from the provider preset (reasoning.py)."""

    key_env: str | None = DEFAULT_KEY_ENV
    reasoning_style: str = "openai_effort"
    inline_thinking: ThinkTags | None = INLINE_THINK
    """Tags of a leading thinking block split out of the answer; None reads content as is."""

    def build_request(self, endpoint: Endpoint, messages: Sequence[Message]) -> HttpRequest:
        payload: dict[str, Any] = deep_merge(self.switch(endpoint), endpoint.params)
        payload["model"] = endpoint.model
        payload["messages"] = [dict(m) for m in messages]
        headers = {"authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        return json_post(join_url(endpoint.base_url, "chat/completions"), payload, headers)

    def parse_response(self, response: HttpResponse) -> Completion | AttemptError:
        data = decode_json(response.body)
        if not 200 <= response.status <= 299:
            return self._error(response, as_dict(data))
        if not isinstance(data, dict):
            return bad_body(response.body, "response is not a JSON object", response.status)
        if "error" in data and "choices" not in data:
            return self._error_in_success(response, data)
        choice = as_dict(next(iter(as_list(data.get("choices"))), None))
        message = choice.get("message")
        if not isinstance(message, dict):
            return bad_body(response.body, "no choices[0].message", response.status)
        text, reasoning_text = _content_text(message)
        if self.inline_thinking is not None:
            text, inline = split_thinking(text, self.inline_thinking)
            reasoning_text += inline or ""
        finish = normalize_finish(choice.get("finish_reason"), FINISH_REASONS)
        if message.get("content") is None:
            if isinstance(message.get("refusal"), str):
                finish = "safety:refusal"
            elif not (message.get("tool_calls") or _explains_empty(finish)):
                return bad_body(
                    response.body,
                    "choices[0].message.content is null: no answer, no refusal, no tool call",
                    response.status,
                )
        return Completion(
            text=text,
            finish_reason=finish,
            usage=_usage(data.get("usage"), reasoning_text),
            request_id=header_or(response.headers, "x-request-id", data.get("id")),
        )

    def rate_limits(self, response: HttpResponse) -> RateLimitSnapshot | None:
        # Anthropic's OpenAI-compatible endpoint sends its own anthropic-ratelimit-* headers.
        return any_snapshot(response.headers)

    def _error(self, response: HttpResponse, data: dict[str, Any]) -> AttemptError:
        error = as_dict(data.get("error"))
        return self.http_error(
            response.status,
            response.headers,
            error_type=_error_type(error),
            message=as_str(error.get("message")) or as_str(data.get("message")),
        )

    def _error_in_success(self, response: HttpResponse, data: dict[str, Any]) -> AttemptError:
        # Some gateways (OpenRouter) report an upstream failure inside a 200 body.
        error = as_dict(data.get("error"))
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool) or not 400 <= code <= 599:
            return bad_body(response.body, "error object in a 2xx body", response.status)
        classified = self.http_error(
            code,
            response.headers,
            error_type=_error_type(error),
            message=as_str(error.get("message")),
        )
        return replace(classified, error_class=f"provider_{code}", status=response.status)


def _explains_empty(finish: str | None) -> bool:
    """A finish reason under which an answer may be empty: the budget ran out, a safety stop."""
    return finish == "length" or (finish or "").startswith("safety:")


def _error_type(error: dict[str, Any]) -> str | None:
    kinds = [k for k in (as_str(error.get("type")), as_str(error.get("code"))) if k]
    return "/".join(dict.fromkeys(kinds)) or None


def _content_text(message: dict[str, Any]) -> tuple[str, str]:
    """(answer text, reasoning text) from a chat message of any compatible server."""
    reasoning = [
        r
        for r in (message.get("reasoning_content"), message.get("reasoning"))
        if isinstance(r, str)
    ]
    content = message.get("content")
    if isinstance(content, str):
        return content, "".join(reasoning)
    texts: list[str] = []
    for part in as_list(content):
        part = as_dict(part)
        kind = part.get("type")
        if kind in _REASONING_PART_TYPES:
            reasoning.append(_part_text(part.get("thinking")) or _part_text(part.get("text")))
        elif kind in (None, "text", "output_text"):
            texts.append(_part_text(part.get("text")))
    return "".join(texts), "".join(reasoning)


def _part_text(value: object) -> str:
    """A part's text: a string, or (Mistral's thinking parts) a list of text chunks."""
    if isinstance(value, str):
        return value
    return "".join(as_str(as_dict(chunk).get("text")) or "" for chunk in as_list(value))


def _usage(raw: object, reasoning_text: str) -> Usage:
    usage = as_dict(raw)
    completion_details = as_dict(usage.get("completion_tokens_details"))
    prompt_details = as_dict(usage.get("prompt_tokens_details"))
    prompt = as_int(usage.get("prompt_tokens"))
    completion = as_int(usage.get("completion_tokens"))
    reasoning = as_int(completion_details.get("reasoning_tokens"))
    unbilled = as_int(usage.get("total_tokens")) - prompt - completion
    note = None
    if reasoning == 0 and unbilled > 0:
        # Gemini's compatible endpoint: thinking counted only in total_tokens, billed as output.
        reasoning, completion = unbilled, completion + unbilled
        note = (
            f"{REASONING_INFERRED}: total_tokens exceeds prompt + completion by {unbilled}, "
            "recorded as reasoning output"
        )
    elif reasoning == 0 and reasoning_text.strip():
        reasoning = approx_tokens(reasoning_text)
        note = (
            f"{REASONING_INFERRED}: the answer shows thinking but the provider counted none; "
            f"~{reasoning} tokens estimated from its text"
        )
    cached = as_int(prompt_details.get("cached_tokens")) or as_int(
        usage.get("prompt_cache_hit_tokens")
    )
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        reasoning_tokens=reasoning,
        cached_tokens=cached,
        reported=isinstance(raw, dict)
        and ("prompt_tokens" in usage or "completion_tokens" in usage),
        note=note,
    )
