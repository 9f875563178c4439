"""One entry of the mock provider's deterministic fault schedules (`faults`, and the batch
files' `batch_line_faults`): the fault kinds a schedule may name and their validation."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaltally.errors import ConfigError

# Fault kinds a schedule may name. Numeric kinds answer that HTTP status in the dialect's error
# shape; the rest are transport or body faults (see docs/mock-server.md).
STATUS_KINDS = frozenset({"400", "401", "403", "404", "408", "429", "500", "502", "503", "529"})
SPECIAL_KINDS = frozenset({"drop", "hang", "html", "html_502", "truncated", "safety", "blocked"})
FAULT_KINDS = STATUS_KINDS | SPECIAL_KINDS
SCOPES = ("request", "body")
_SRC = "<mock config>"


@dataclass(frozen=True)
class FaultRule:
    """One entry of a deterministic fault schedule.

    kind:        a fault kind from FAULT_KINDS ("429", "503", "drop", "hang", "truncated", ...).
    count:       how many requests (scope "request") or attempts per body (scope "body") it hits.
    scope:       "request": the next `count` matching requests the server receives, in arrival
                 order; rules are used up one after the other in list order.
                 "body": the first `count` attempts of EVERY distinct request body (sha256 of the
                 raw bytes); successive "body" rules continue the per-body sequence, so
                 [{429,1},{503,1}] means attempt 1 -> 429, attempt 2 -> 503, attempt 3 -> answer.
                 Independent of arrival order, hence exact under any client concurrency.
    retry_after: seconds advertised in Retry-After on 429/503/529 (None: the config default).
    match:       only requests whose last user message contains this substring count.
    dialect:     only requests of this dialect ("openai", "anthropic", "gemini", "bedrock").
    """

    kind: str
    count: int = 1
    scope: str = "request"
    retry_after: float | None = None
    match: str | None = None
    dialect: str | None = None

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any], where: str = "faults") -> FaultRule:
        if not isinstance(d, Mapping):
            raise ConfigError("<mock config>", where, "each fault must be a table/object")
        allowed = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in allowed:
                raise ConfigError("<mock config>", f"{where}.{key}", f"unknown key; use {allowed}")
        if "kind" not in d:
            raise ConfigError("<mock config>", f"{where}.kind", "missing")
        try:
            count = d.get("count", 1)
            if isinstance(count, bool) or int(count) != count:
                raise ValueError(count)
            ra = d.get("retry_after")
            rule = cls(
                kind=str(d["kind"]),
                count=int(count),
                scope=str(d.get("scope", "request")),
                retry_after=None if ra is None else float(ra),
                match=None if d.get("match") is None else str(d["match"]),
                dialect=None if d.get("dialect") is None else str(d["dialect"]),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError("<mock config>", where, f"invalid fault {dict(d)!r}") from exc
        rule.validate(where)
        return rule

    @classmethod
    def parse(cls, spec: str) -> FaultRule:
        """CLI form KIND[:COUNT[:SCOPE[:RETRY_AFTER]]], e.g. "429:1:body:1" or "503:5"."""
        parts = spec.split(":")
        keys = ("kind", "count", "scope", "retry_after")
        if not 1 <= len(parts) <= len(keys):
            raise ConfigError(_SRC, "fault", f"{spec!r}: use KIND[:COUNT[:SCOPE[:RETRY]]]")
        d: dict[str, Any] = {k: v for k, v in zip(keys, parts, strict=False) if v != ""}
        try:
            if "count" in d:
                d["count"] = int(d["count"])
        except ValueError as exc:
            raise ConfigError(_SRC, "fault", f"{spec!r}: COUNT must be an integer") from exc
        return cls.from_mapping(d, where=f"fault {spec!r}")

    def validate(self, where: str = "faults") -> None:
        if self.kind not in FAULT_KINDS:
            raise ConfigError(
                "<mock config>", f"{where}.kind", f"{self.kind!r} not in {sorted(FAULT_KINDS)}"
            )
        if not isinstance(self.count, int) or self.count < 1:
            raise ConfigError("<mock config>", f"{where}.count", "must be an integer >= 1")
        if self.scope not in SCOPES:
            raise ConfigError("<mock config>", f"{where}.scope", f"must be one of {SCOPES}")
        if self.retry_after is not None and self.retry_after < 0:
            raise ConfigError("<mock config>", f"{where}.retry_after", "must be >= 0")
