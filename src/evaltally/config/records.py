"""The validated, frozen records a sweep config becomes: a run, its models (each with its lane
limits, price and batch settings) and its benchmarks. The readers in this package build them;
everything else in evaltally only reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The one price type, re-exported: a model's price is config, the type is shared with the
# providers' list prices.
from evaltally.adapters.prices import Price as Price
from evaltally.adapters.reasoning import Reasoning as Reasoning
from evaltally.adapters.thinking import ThinkTags as ThinkTags

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Far above any completion (a 128K-token answer is under 1 MB of JSON), far below trouble."""


@dataclass(frozen=True)
class Limits:
    """One lane: what the endpoint allows and how patient we are with it."""

    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    timeout_s: float = 120.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_attempts: int = 6
    breaker_threshold: int = 8
    breaker_cooldown_s: float = 20.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0


@dataclass(frozen=True)
class BatchSettings:
    """How a model in batch mode submits its calls (docs/batch.md)."""

    kind: str
    """The batch API shape: openai, anthropic or gemini."""
    max_requests: int
    max_bytes: int
    discount: float | None
    """Batch price / list price; None: no documented discount, the list price is used."""
    list_price: Price | None
    """What a call costs when it falls back to the synchronous API."""
    fallback: str = "none"
    poll_s: float = 30.0
    unknown_state_s: float = 3600.0
    """How long a state word this version does not know is polled before the batch is given up
    on (left open for `tally resume`, the lane stopped with the word)."""


@dataclass(frozen=True)
class ModelConfig:
    key: str
    provider: str
    model: str
    base_url: str
    api_key_env: str | None
    params: Mapping[str, Any]
    limits: Limits
    reasoning: Reasoning = field(default_factory=Reasoning)
    price: Price | None = None
    """The price of one call in this model's mode (the batch price in batch mode)."""
    api_version: str | None = None
    """The API version an Anthropic or Gemini endpoint is addressed with (default: the
    adapter's)."""
    region: str | None = None
    """The Bedrock region (default: the AWS_REGION variables); part of the lane's endpoint."""
    mode: str = "sync"
    batch: BatchSettings | None = None
    inline_thinking: ThinkTags | None = None
    """The tags of a leading thinking block the OpenAI adapter splits out of the answer (on by
    default there); None reads the answer as sent. Not part of the identity: it changes how a
    response is read, never what is sent."""

    def identity(self) -> dict[str, Any]:
        """What a recorded answer depends on. Limits, base URL, API version and mode are
        excluded on purpose: changing pace, pointing at a proxy or switching between the
        synchronous and the batch API sends the same request bodies and must not invalidate
        answers already paid for. The reasoning effort and budget enter only when set, so
        configs without them keep the ids they always had."""
        identity: dict[str, Any] = {
            "key": self.key,
            "provider": self.provider,
            "model": self.model,
            "params": dict(self.params),
            "reasoning": self.reasoning.mode,
        }
        if self.reasoning.effort is not None:
            identity["reasoning_effort"] = self.reasoning.effort
        if self.reasoning.budget is not None:
            identity["reasoning_budget"] = self.reasoning.budget
        return identity

    @property
    def max_output_tokens(self) -> int:
        """The output-token cap the params set, whatever the provider calls it (OpenAI's
        reasoning models take only `max_completion_tokens`); 0 when none is set."""
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            if self.params.get(key):
                return int(self.params[key])
        return 0

    def endpoint_identity(self) -> tuple[str, ...]:
        """Which endpoint the model reaches: config entries with the same identity (say, one
        model at two temperatures) share one lane and so one set of limits."""
        region = self.region or ""
        return (self.provider, self.model, self.base_url, self.api_key_env or "", region)


@dataclass(frozen=True)
class BenchmarkConfig:
    kind: str
    label: str
    samples: int
    options: Mapping[str, Any]
    """The kind's own keys, as written; the benchmark reads them as typed `Options`."""
    base_dir: Path
    source: Path
    index: int
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """`[benchmarks.roles]`: role -> model keys. Empty: every model is the only role."""
    on_failed_step: str | None = None
    """"block" or "continue" (what later steps of a chain do after a step failed); None: the
    benchmark's default."""


@dataclass(frozen=True)
class SweepConfig:
    path: Path
    name: str
    runs_dir: Path
    models: tuple[ModelConfig, ...]
    benchmarks: tuple[BenchmarkConfig, ...]
    budget_usd: float | None = None
    text: str = ""

    @property
    def run_dir(self) -> Path:
        return self.runs_dir / self.name
