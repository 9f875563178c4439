"""Batches and rounds of a run, read from the batch tables: what `tally status` and the end of
`tally run` show. A round is one submission of the next step of every chain that can move
(docs/batch.md); its wall time runs from its first batch's plan to its last batch's close."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import asdict, dataclass
from typing import Any

from evaltally.ledger.batch_checks import has_batch_tables

_BATCHES = """
SELECT b.batch_key, b.model, b.round, b.requests, b.at,
  (SELECT e.provider_id FROM batch_events e WHERE e.batch_key = b.batch_key
     AND e.kind = 'created' ORDER BY e.seq DESC LIMIT 1),
  (SELECT e.state FROM batch_events e WHERE e.batch_key = b.batch_key
     AND e.state IS NOT NULL ORDER BY e.seq DESC LIMIT 1),
  (SELECT e.at FROM batch_events e WHERE e.batch_key = b.batch_key
     AND e.kind = 'closed' ORDER BY e.seq LIMIT 1),
  (SELECT count(*) FROM batch_calls m JOIN attempts a ON a.call_id = m.call_id
     AND a.attempt = m.attempt AND a.kind = 'end' AND a.error_class IS NULL
     WHERE m.batch_key = b.batch_key)
FROM batches b ORDER BY b.model, b.round, b.seq
"""


@dataclass(frozen=True, slots=True)
class BatchRow:
    key: str
    model: str
    round: int
    provider_id: str | None
    state: str
    requests: int
    answered: int
    """Lines the provider answered (ok or parse_error), not errors, expired or missing."""
    closed: bool


@dataclass(frozen=True, slots=True)
class RoundRow:
    model: str
    round: int
    batches: int
    requests: int
    answered: int
    wall_s: float
    open: bool

    @property
    def answered_share(self) -> float:
        return self.answered / self.requests if self.requests else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "answered_share": self.answered_share}


def batch_summary(conn: sqlite3.Connection) -> tuple[list[BatchRow], list[RoundRow]]:
    if not has_batch_tables(conn):
        return [], []
    batches: list[BatchRow] = []
    spans: dict[tuple[str, int], list[Any]] = {}
    now = time.time()
    for key, model, rnd, requests, planned_at, pid, state, closed_at, answered in conn.execute(
        _BATCHES
    ):
        closed = closed_at is not None
        batches.append(
            BatchRow(key, model, rnd, pid, state or "planned", requests, answered, closed)
        )
        span = spans.setdefault((model, rnd), [0, 0, 0, planned_at, 0.0, False])
        span[0] += 1
        span[1] += requests
        span[2] += answered
        span[3] = min(span[3], planned_at)
        span[4] = max(span[4], closed_at if closed else now)
        span[5] = span[5] or not closed
    rounds = [
        RoundRow(model, rnd, n, req, ans, max(0.0, end - start), is_open)
        for (model, rnd), (n, req, ans, start, end, is_open) in spans.items()
    ]
    return batches, rounds
