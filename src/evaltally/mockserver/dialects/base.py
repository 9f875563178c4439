"""The seam between the shared core and one provider's wire format.

A dialect only translates: request -> Prompt (or a client error), Completion -> response body,
ErrorReply -> error body and headers, limits -> rate-limit headers. Faults, limits, answers
and stats live in the core so every dialect misbehaves the same way.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from evaltally.mockserver.answers import Completion, Prompt
from evaltally.mockserver.ratelimit import LimitSnapshot


class ClientFault(Exception):
    """A request the provider would refuse (400/401/403/404), with the dialect's message."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


@dataclass(frozen=True)
class ReplyContext:
    """Per-response identifiers, made by the core so they are unique and seed-deterministic."""

    request_id: str  # 32 hex chars
    created: int  # unix seconds
    latency_ms: int


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error to answer with.

    `code` refines the error (e.g. "tokens" for a token-bucket 429, a provider error code);
    `retry_after` is the advised wait, for dialects that also put it in the body.
    """

    status: int
    message: str
    code: str | None = None
    retry_after: float | None = None


@dataclass(frozen=True)
class AuthSettings:
    require: bool
    api_key: str | None


class Dialect(ABC):
    """One provider API. Subclasses are stateless; one instance serves all requests."""

    name: ClassVar[str]
    # Paths (aiohttp route patterns) this dialect answers with POST.
    routes: ClassVar[tuple[str, ...]]

    def check_auth(
        self, headers: Mapping[str, str], query: Mapping[str, str], auth: AuthSettings
    ) -> None:
        """Raise ClientFault(401/403/400) if auth is required and the credential is missing or
        wrong."""
        if auth.require:
            self.check_key(headers, query, auth.api_key)

    @abstractmethod
    def check_key(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str | None
    ) -> None:
        """Raise ClientFault if the request has no credential, or one other than `key` (when
        `key` is not None: any credential is accepted then)."""

    @abstractmethod
    def parse(self, body: Any, headers: Mapping[str, str], path_model: str | None) -> Prompt:
        """Validate the request like the provider does; raise ClientFault(400) if it would."""

    @abstractmethod
    def success(self, prompt: Prompt, completion: Completion, ctx: ReplyContext) -> dict[str, Any]:
        """The 200 body for a completion (including safety stops and blocked prompts)."""

    @abstractmethod
    def error_body(self, err: ErrorReply, ctx: ReplyContext) -> dict[str, Any]:
        """The error body for an HTTP error status."""

    def model_missing(self, model: str) -> ClientFault:
        """What the provider answers for a model id it does not serve."""
        return ClientFault(
            404, f"The model `{model}` does not exist or you do not have access to it."
        )

    def error_headers(self, err: ErrorReply) -> dict[str, str]:
        """Headers that name the error, for dialects that send it there; default none."""
        return {}

    def id_headers(self, ctx: ReplyContext) -> dict[str, str]:
        """Headers every response of this dialect carries (the provider's request id)."""
        return {}

    def limit_headers(self, snap: LimitSnapshot) -> dict[str, str]:
        """Rate-limit headers; the default provider advertises none."""
        return {}


def bearer_token(headers: Mapping[str, str]) -> str:
    """The token of an `Authorization: Bearer <token>` header, "" when there is none."""
    value = headers.get("Authorization", "")
    return value[7:].strip() if value.startswith("Bearer ") else ""


def joined_text(blocks: list[Any], where: str, block: str = "content block") -> str:
    """The `text` fields of a list of objects (content blocks, Gemini parts) joined; a block
    without text adds nothing, a non-object is refused."""
    parts: list[str] = []
    for item in blocks:
        if not isinstance(item, dict):
            raise ClientFault(400, f"{where}: each {block} must be an object")
        if isinstance(item.get("text"), str):
            parts.append(item["text"])
    return "".join(parts)


def text_of(content: Any, where: str) -> str:
    """Text of an OpenAI/Anthropic-style content: a string or a list of {type: text, text}."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return joined_text(content, where)
    raise ClientFault(400, f"{where}: content must be a string or a list of blocks")


def require_list(body: Mapping[str, Any], key: str, where: str = "") -> list[Any]:
    value = body.get(key)
    if not isinstance(value, list) or not value:
        raise ClientFault(400, f"{where}{key}: field required (a non-empty list)")
    return value


def settings_object(value: Any, where: str) -> dict[str, Any]:
    """An optional object-valued request field (generation settings): {} when absent or empty."""
    value = value or {}
    if not isinstance(value, dict):
        raise ClientFault(400, f"{where}: must be an object")
    return value


def user_assistant_turns(
    body: Mapping[str, Any], content_text: Callable[[Any, str], str], role_error: str
) -> tuple[tuple[str, str], ...]:
    """(role, text) of each `messages` entry of an API whose only roles are user and assistant
    (Anthropic Messages, Bedrock Converse). `role_error` is the 400 message after
    "messages.<i>.role: "."""
    turns: list[tuple[str, str]] = []
    for i, m in enumerate(require_list(body, "messages")):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant"):
            raise ClientFault(400, f"messages.{i}.role: {role_error}")
        turns.append((role, content_text(m.get("content"), f"messages.{i}.content")))
    return tuple(turns)


def optional_int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ClientFault(400, f"{where}: must be an integer >= 1")
    return value


def bucket_headers(
    snap: LimitSnapshot,
    name: Callable[[str, str], str],
    reset: Callable[[float], str],
    token_families: tuple[str, ...] = ("tokens",),
) -> dict[str, str]:
    """Limit, remaining and reset headers of the request bucket and the token bucket.

    `name(family, field)` spells a header: family "requests" or a token family, field "limit",
    "remaining" or "reset"; `reset(seconds)` spells a reset value. The mock has one token
    bucket: every token family reports it.
    """
    buckets = (
        (("requests",), snap.rpm, snap.rpm_remaining, snap.rpm_reset_s),
        (token_families, snap.tpm, snap.tpm_remaining, snap.tpm_reset_s),
    )
    out: dict[str, str] = {}
    for families, limit, remaining, reset_s in buckets:
        if limit is None:
            continue
        reset_at = reset(reset_s)
        for family in families:
            out[name(family, "limit")] = str(limit)
            out[name(family, "remaining")] = str(remaining)
            out[name(family, "reset")] = reset_at
    return out


def rfc3339_after(seconds: float) -> str:
    """UTC time `seconds` from now, RFC 3339, rounded up to the second (Anthropic resets)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(time.time() + seconds + 0.999)))
