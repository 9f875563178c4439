"""The seam between the shared core and one provider's wire format.

A dialect only translates: request -> Prompt (or a client error), Completion -> response body,
(status, message) -> error body and headers, limits -> rate-limit headers. Faults, limits, answers
and stats live in the core so every dialect misbehaves the same way.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
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
class AuthSettings:
    require: bool
    api_key: str | None


class Dialect(ABC):
    """One provider API. Subclasses are stateless; one instance serves all requests."""

    name: ClassVar[str]
    # Paths (aiohttp route patterns) this dialect answers with POST.
    routes: ClassVar[tuple[str, ...]]

    @abstractmethod
    def check_auth(
        self, headers: Mapping[str, str], query: Mapping[str, str], auth: AuthSettings
    ) -> None:
        """Raise ClientFault(401/403/400) if the credential is missing or wrong."""

    @abstractmethod
    def parse(self, body: Any, headers: Mapping[str, str], path_model: str | None) -> Prompt:
        """Validate the request like the provider does; raise ClientFault(400) if it would."""

    @abstractmethod
    def success(self, prompt: Prompt, completion: Completion, ctx: ReplyContext) -> dict[str, Any]:
        """The 200 body for a completion (including safety stops and blocked prompts)."""

    @abstractmethod
    def error(
        self,
        status: int,
        message: str,
        code: str | None,
        retry_after: float | None,
        ctx: ReplyContext,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The error body and dialect headers for an HTTP error status.

        `code` refines the error (e.g. "tokens" for a token-bucket 429, a provider error code);
        `retry_after` is the advised wait, for dialects that also put it in the body.
        """

    def id_headers(self, ctx: ReplyContext) -> dict[str, str]:
        """Headers every response of this dialect carries (the provider's request id)."""
        return {}

    def limit_headers(self, snap: LimitSnapshot) -> dict[str, str]:
        """Rate-limit headers; the default provider advertises none."""
        return {}


def text_of(content: Any, where: str) -> str:
    """Text of an OpenAI/Anthropic-style content: a string or a list of {type: text, text}."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif not isinstance(block, dict):
                raise ClientFault(400, f"{where}: each content block must be an object")
        return "".join(parts)
    raise ClientFault(400, f"{where}: content must be a string or a list of blocks")


def require_list(body: Mapping[str, Any], key: str, where: str = "") -> list[Any]:
    value = body.get(key)
    if not isinstance(value, list) or not value:
        raise ClientFault(400, f"{where}{key}: field required (a non-empty list)")
    return value


def optional_int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ClientFault(400, f"{where}: must be an integer >= 1")
    return value


def rfc3339_after(seconds: float) -> str:
    """UTC time `seconds` from now, RFC 3339, rounded up to the second (Anthropic resets)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(time.time() + seconds + 0.999)))
