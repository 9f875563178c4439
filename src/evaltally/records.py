"""Plain records shared by the planner, runner, ledger and adapters.

Everything here is data: frozen dataclasses and string enums, no I/O. The ledger stores these
records; exports are derived from them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson

JSONValue = Any
Message = dict[str, str]
"""One chat message: {"role": "system"|"user"|"assistant", "content": "..."}."""

SUBJECT = "subject"

REASONING_INFERRED = "reasoning inferred"
"""How every `Usage.note` about a reasoning count evaltally worked out begins: the reasoning
audit finds such outcomes by it."""
"""The default role: the model under evaluation. A step of any other role records its role in
its spec (`spec["role"]`); subject steps do not, which keeps the ids planned before roles."""


def canonical_json(value: object) -> bytes:
    """The canonical byte form used for every content hash: sorted keys, no whitespace."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def content_hash(value: object, length: int = 64) -> str:
    """sha256 of the canonical JSON of `value`, hex, truncated to `length` characters."""
    return hashlib.sha256(canonical_json(value)).hexdigest()[:length]


class Status(StrEnum):
    """Terminal outcomes of a planned call (DESIGN.md, "Outcome")."""

    OK = "ok"
    PARSE_ERROR = "parse_error"
    FAILED = "failed"
    BLOCKED = "blocked"

    @property
    def is_final(self) -> bool:
        """ok and parse_error are never re-run; failed and blocked are re-run by resume."""
        return self in (Status.OK, Status.PARSE_ERROR)


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One request the sweep will make. `call_id` is derived from content, never a counter.

    `spec` holds what the benchmark needs to render the prompt (item reference, step, protocol);
    it is JSON-serializable and part of the id, so a changed item changes the id.
    """

    call_id: str
    chain_id: str
    step: int
    model: str
    benchmark: str
    item_id: str
    sample: int
    protocol: str
    spec: Mapping[str, JSONValue] = field(default_factory=dict)

    @property
    def role(self) -> str:
        """The role whose model answers this call (docs/config.md, "Roles")."""
        return str(self.spec.get("role", SUBJECT))


PlannedRow = tuple[str, str, int, str, str, str, str, int, str]
"""A planned call as the ledger's `planned` table stores it: call_id, chain_id, step, model,
benchmark, protocol, item_id, sample, spec_json (canonical JSON). The planner yields these for
the plan write (plan.plan_rows), so a million calls are recorded without a PlannedCall each."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage as the provider reported it.

    `reported` is False when the response carried no token counts: the ledger then records
    the counts as empty, not 0 (docs/export.md), keeping only a reasoning count evaltally
    inferred. `note` says where a count did not come straight from the provider (reasoning
    estimated from visible thinking, or taken from a total that exceeds its parts); it is
    recorded with the outcome, and the reasoning audit counts such calls.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    reported: bool = True
    note: str | None = None

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_tokens": self.cached_tokens,
        }


@dataclass(frozen=True, slots=True)
class Completion:
    """A model answer, normalized across providers."""

    text: str
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    request_id: str | None = None


class ErrorAction(StrEnum):
    """What the runner does about a failed attempt. Decided by the adapter, acted on by the lane."""

    RETRY = "retry"
    FAIL_CALL = "fail_call"
    STOP_LANE = "stop_lane"


@dataclass(frozen=True, slots=True)
class AttemptError:
    """A failed attempt, classified: the retry decision as data."""

    action: ErrorAction
    error_class: str
    """Short stable name: http_429, http_503, timeout, connection, bad_body, http_400, ..."""
    detail: str
    status: int | None = None
    retry_after_s: float | None = None
    """Server-requested wait (Retry-After and friends): a limit's 429 pauses the whole lane,
    any other error holds only its own request's retry."""
    capacity: bool = False
    """A 429 the provider says no rate of ours caused (shared capacity, an upstream's refusal):
    retried on its own, the lane's rate left alone."""
    stop_kind: str | None = None
    """With STOP_LANE, what every call of the lane would run into: "credentials", "quota" or
    "model" (the model id or endpoint does not exist), so the lane's reason names the fix."""


@dataclass(frozen=True, slots=True)
class RateLimitSnapshot:
    """What a provider's rate-limit headers said about the lane's remaining budget."""

    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests_s: float | None = None
    reset_tokens_s: float | None = None
    limit_requests: int | None = None
    limit_tokens: int | None = None
    window_requests_s: float = 60.0
    """The window `limit_requests` counts over (seconds): 60 for a per-minute limit, 1 per
    second (Together), 86400 per day (Groq's request limit), as the headers' names or their
    reset say (adapters/ratelimit_headers.py)."""
    window_tokens_s: float = 60.0
    """The window `limit_tokens` counts over (seconds)."""
    # Where a limit was read (the export's run metadata names it): provenance, not part of
    # what the headers said, so two snapshots with the same values are equal.
    header_requests: str | None = field(default=None, compare=False)
    """The header `limit_requests` was read from."""
    header_tokens: str | None = field(default=None, compare=False)

    def per_minute(self, limit: int | None, window_s: float) -> float | None:
        """A limit as a rate per minute, when its window is a minute or shorter; None for a
        longer window (a daily quota is no pace: its remaining count and reset govern)."""
        if not limit or window_s > 60.0:
            return None
        return limit * 60.0 / window_s
