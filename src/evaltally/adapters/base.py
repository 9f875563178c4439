"""The adapter seam: providers only translate.

An HTTP adapter turns (messages, generation params) into one `HttpRequest` and turns one
`HttpResponse` into a `Completion` or a classified `AttemptError`. Scheduling, retries, rate
limiting and ledger writes live in the runner, never here.

Offline models (`provider = "baseline"`) have no adapter: their benchmark's predictor answers
in-process (benchmarks/base.py), through the same lanes, ledger and outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from evaltally.adapters.reasoning import Reasoning
from evaltally.records import AttemptError, Completion, Message, RateLimitSnapshot


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One HTTP request. `headers` may hold credentials: never log or store them.

    `body` is deterministic for the same messages and params (canonical JSON), so its sha256 is
    the request hash a resume checks.
    """

    method: str
    url: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """One HTTP response as received. Header names are lower-cased."""

    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What an adapter needs to address one model: resolved from the config, key included.

    `api_key` is read from the environment variable the config names; `repr` hides it.
    """

    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    params: Mapping[str, Any] = field(default_factory=dict)
    reasoning: Reasoning = field(default_factory=Reasoning)
    """The reasoning switch to send (adapters/reasoning.py)."""
    api_version: str | None = None
    """The API version an Anthropic or Gemini endpoint is addressed with; None: the adapter's."""
    region: str | None = None
    """The Bedrock region; None (or empty): the AWS_REGION / AWS_DEFAULT_REGION variables."""


@runtime_checkable
class HttpAdapter(Protocol):
    """Translate to and from one provider's HTTP API."""

    def build_request(self, endpoint: Endpoint, messages: Sequence[Message]) -> HttpRequest: ...

    def parse_response(self, response: HttpResponse) -> Completion | AttemptError: ...

    def rate_limits(self, response: HttpResponse) -> RateLimitSnapshot | None: ...
