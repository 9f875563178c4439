"""Writing and reading the batch tables (batch_schema.py) for the batch driver.

Writes go through the ledger's single writer like every other event, so a batch's submission
row, its member rows and its members' attempt start rows land in one commit; the driver flushes
before anything reaches the provider. Reads run on their own read-only connection in a thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaltally.ledger.files import connect_ro, translate
from evaltally.ledger.writer import Writer
from evaltally.records import canonical_json


@dataclass(frozen=True, slots=True)
class BatchEvent:
    kind: str
    provider_id: str | None
    state: str | None
    at: float


@dataclass(frozen=True, slots=True)
class OpenBatch:
    """A batch of an earlier session that was never closed: it may still answer."""

    key: str
    model: str
    round: int
    members: tuple[tuple[str, int, str], ...]
    """(call_id, attempt, request hash) in submission order."""
    events: tuple[BatchEvent, ...]
    ended: frozenset[str]
    """Members whose attempt already has its end row (their line was read before the kill)."""

    def last(self, kind: str) -> BatchEvent | None:
        return next((e for e in reversed(self.events) if e.kind == kind), None)

    @property
    def provider_id(self) -> str | None:
        created = self.last("created")
        return created.provider_id if created else None

    @property
    def file_id(self) -> str | None:
        uploaded = self.last("uploaded")
        return uploaded.provider_id if uploaded else None


class BatchBook:
    def __init__(self, writer: Writer, path: Path) -> None:
        self._writer = writer
        self.path = path

    def planned(
        self,
        key: str,
        model: str,
        round_no: int,
        kind: str,
        members: Sequence[tuple[str, int]],
        payload: bytes,
    ) -> None:
        """A batch about to be submitted: its row, its members and its `planned` event."""
        now = time.time()
        digest = hashlib.sha256(payload).hexdigest()
        row = (key, model, int(round_no), kind, len(members), len(payload), digest, now)
        self._writer.enqueue("batches", row)
        for position, (call_id, attempt) in enumerate(members):
            self._writer.enqueue("batch_calls", (key, call_id, int(attempt), position))
        self.event(key, "planned")

    def event(
        self,
        key: str,
        kind: str,
        *,
        provider_id: str | None = None,
        state: str | None = None,
        counts: Mapping[str, int] | None = None,
        detail: str | None = None,
    ) -> None:
        counts_json = None if counts is None else canonical_json(dict(counts)).decode()
        row = (key, kind, provider_id, state, counts_json, detail, time.time())
        self._writer.enqueue("batch_events", row)

    async def flush(self) -> None:
        await self._writer.flush()

    async def open_batches(self, model: str) -> list[OpenBatch]:
        await self.flush()
        return await asyncio.to_thread(self._read, _open_batches, model)

    async def last_round(self, model: str) -> int:
        await self.flush()
        return await asyncio.to_thread(self._read, _last_round, model)

    async def provider_ids(self) -> frozenset[str]:
        """Every provider batch id this run has recorded (never adopted a second time)."""
        await self.flush()
        return await asyncio.to_thread(self._read, _provider_ids, "")

    def _read(self, query: Any, model: str) -> Any:
        conn = connect_ro(self.path)
        try:
            return query(conn, model)
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "read the batch tables") from exc
        finally:
            conn.close()


def _open_batches(conn: sqlite3.Connection, model: str) -> list[OpenBatch]:
    out = []
    for key, round_no in conn.execute(
        "SELECT b.batch_key, b.round FROM batches b WHERE b.model = ? AND NOT EXISTS"
        " (SELECT 1 FROM batch_events e WHERE e.batch_key = b.batch_key AND e.kind = 'closed')"
        " ORDER BY b.seq",
        (model,),
    ):
        members = tuple(
            (str(c), int(a), str(h))
            for c, a, h in conn.execute(
                "SELECT m.call_id, m.attempt, (SELECT s.request_hash FROM attempts s WHERE"
                " s.call_id = m.call_id AND s.attempt = m.attempt AND s.kind = 'start')"
                " FROM batch_calls m WHERE m.batch_key = ? ORDER BY m.position",
                (key,),
            )
        )
        events = tuple(
            BatchEvent(*row)
            for row in conn.execute(
                "SELECT kind, provider_id, state, at FROM batch_events WHERE batch_key = ?"
                " ORDER BY seq",
                (key,),
            )
        )
        ended = frozenset(
            str(c)
            for (c,) in conn.execute(
                "SELECT m.call_id FROM batch_calls m WHERE m.batch_key = ? AND EXISTS"
                " (SELECT 1 FROM attempts a WHERE a.call_id = m.call_id AND"
                " a.attempt = m.attempt AND a.kind IN ('end', 'interrupted'))",
                (key,),
            )
        )
        out.append(OpenBatch(str(key), model, int(round_no), members, events, ended))
    return out


def _last_round(conn: sqlite3.Connection, model: str) -> int:
    row = conn.execute("SELECT max(round) FROM batches WHERE model = ?", (model,)).fetchone()
    return int(row[0] or 0)


def _provider_ids(conn: sqlite3.Connection, _: str) -> frozenset[str]:
    rows = conn.execute(
        "SELECT DISTINCT provider_id FROM batch_events WHERE kind = 'created'"
        " AND provider_id IS NOT NULL"
    )
    return frozenset(str(r[0]) for r in rows)
