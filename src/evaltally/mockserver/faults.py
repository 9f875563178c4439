"""Which fault, if any, a request meets: the deterministic schedule first, then random rates.

Random draws are a hash of (seed, body hash, attempt number, purpose) rather than one shared
random.Random stream: a shared stream would hand faults out in arrival order, which changes with
client concurrency, while the hash gives the same body on the same attempt the same fate in every
run. That is what makes a fault-injected rehearsal reproducible.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from evaltally.mockserver.config import RATE_KNOBS, MockConfig
from evaltally.mockserver.fault_rules import FaultRule

# What each random-rate knob injects (malformed is split three ways by a second draw).
_RATE_KIND = {
    "error_429_rate": "429",
    "error_500_rate": "500",
    "error_502_rate": "502",
    "error_503_rate": "503",
    "overloaded_rate": "529",
    "drop_rate": "drop",
    "hang_rate": "hang",
    "malformed_rate": "malformed",
    "safety_rate": "safety",
    "prompt_block_rate": "blocked",
}
_MALFORMED = ("html", "html_502", "truncated")


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: float | None
    source: str  # "schedule" or "random"


def uniform(seed: int, body_hash: str, attempt: int, purpose: str) -> float:
    """A reproducible draw in [0, 1) for one (body, attempt) and one purpose."""
    digest = hashlib.blake2b(
        f"{seed}|{body_hash}|{attempt}|{purpose}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big") / 2.0**64


class FaultPlanner:
    """Holds the consumable state of the "request"-scope schedule for one config."""

    def __init__(self, config: MockConfig) -> None:
        self.config = config
        self._request_rules = [r for r in config.faults if r.scope == "request"]
        self._remaining = [r.count for r in self._request_rules]
        self._body_rules = [r for r in config.faults if r.scope == "body"]
        self._rates = [
            (getattr(config, k), _RATE_KIND[k]) for k in RATE_KNOBS if getattr(config, k)
        ]

    def scheduled(self, dialect: str, last_user: str, attempt: int) -> Fault | None:
        """`attempt` is how many times this exact body was seen before (0 on the first try)."""
        for i, rule in enumerate(self._request_rules):
            if self._remaining[i] > 0 and _applies(rule, dialect, last_user):
                self._remaining[i] -= 1
                return self._fault(rule)
        k = attempt
        for rule in self._body_rules:
            if not _applies(rule, dialect, last_user):
                continue
            if k < rule.count:
                return self._fault(rule)
            k -= rule.count
        return None

    def random(self, body_hash: str, attempt: int) -> Fault | None:
        if not self._rates:
            return None
        seed = self.config.seed
        u = uniform(seed, body_hash, attempt, "fault")
        edge = 0.0
        for rate, kind in self._rates:
            edge += rate
            if u < edge:
                if kind == "malformed":
                    pick = uniform(seed, body_hash, attempt, "malformed")
                    kind = _MALFORMED[min(2, int(pick * 3))]
                return Fault(kind, self._default_retry(kind), "random")
        return None

    def with_config(self, config: MockConfig) -> FaultPlanner:
        """Same schedule (and its used-up counts), new rates/seed/retry defaults."""
        fresh = FaultPlanner(config)
        fresh._remaining = self._remaining
        return fresh

    def pending_request_faults(self) -> int:
        return sum(self._remaining)

    def _fault(self, rule: FaultRule) -> Fault:
        ra = rule.retry_after if rule.retry_after is not None else self._default_retry(rule.kind)
        return Fault(rule.kind, ra, "schedule")

    def _default_retry(self, kind: str) -> float | None:
        # 429 always carries Retry-After (clients need it); 503/529 when the config says so.
        if kind == "429":
            return self.config.retry_after_s if self.config.retry_after_s is not None else 1.0
        if kind in ("503", "529"):
            return self.config.retry_after_s
        return None


def _applies(rule: FaultRule, dialect: str, last_user: str) -> bool:
    if rule.dialect is not None and rule.dialect != dialect:
        return False
    return rule.match is None or rule.match in last_user
