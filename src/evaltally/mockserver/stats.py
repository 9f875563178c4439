"""In-memory counters behind GET /stats. Plain dicts and ints: the hot path only increments."""

from __future__ import annotations

from collections import Counter
from typing import Any


class Stats:
    """Counts of what the server saw and answered since start (or the last reset)."""

    def __init__(self) -> None:
        # in_flight survives a reset: requests already inside the server still depart later.
        self.in_flight = 0
        self.reset()

    def reset(self) -> None:
        self.total = 0
        self.by_status: Counter[str] = Counter()
        self.by_dialect: Counter[str] = Counter()
        self.by_model: Counter[str] = Counter()
        # sha256 hex of the raw request body -> times received. Tests use it to prove a resumed
        # run never re-sent a call whose answer was recorded.
        self.by_body: Counter[str] = Counter()
        self.by_fault: Counter[str] = Counter()
        # Valid requests (past auth and validation) per body: the attempt number fault rules see.
        self._attempts: Counter[str] = Counter()
        self.rate_limited = 0
        self.max_in_flight = self.in_flight
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def arrive(self, dialect: str, body_hash: str) -> None:
        """Count an arrival (every request, valid or not)."""
        self.total += 1
        self.by_dialect[dialect] += 1
        self.by_body[body_hash] += 1
        self.in_flight += 1
        if self.in_flight > self.max_in_flight:
            self.max_in_flight = self.in_flight

    def next_attempt(self, body_hash: str) -> int:
        """Number a valid request: how many valid requests with this body came before (0 first).
        Requests refused for auth or validation do not count, so a client that fixes its
        credentials still meets the fault schedule from attempt 0."""
        n = self._attempts[body_hash]
        self._attempts[body_hash] = n + 1
        return n

    def depart(self, status: str) -> None:
        """`status` is the HTTP status as text, or "drop" when the connection was cut."""
        self.in_flight -= 1
        self.by_status[status] += 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_status": dict(self.by_status),
            "by_dialect": dict(self.by_dialect),
            "by_model": dict(self.by_model),
            "by_body": dict(self.by_body),
            "by_fault": dict(self.by_fault),
            "rate_limited": self.rate_limited,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
