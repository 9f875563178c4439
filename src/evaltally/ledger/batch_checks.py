"""`tally verify`'s checks of the batch tables (their hash chains are checked with every other
table's). Each yields one message per violation, naming the batch and the call."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any


def has_batch_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'batch_calls'"
    ).fetchone()
    return row is not None


def batch_violations(conn: sqlite3.Connection, report: Any) -> Iterator[str]:
    if not has_batch_tables(conn):
        return
    for check in (_members_planned, _one_open_holder, _closed_complete, _events_known):
        yield from check(conn)


def _members_planned(conn: sqlite3.Connection) -> Iterator[str]:
    for seq, key, call_id in conn.execute(
        "SELECT m.seq, m.batch_key, m.call_id FROM batch_calls m WHERE NOT EXISTS"
        " (SELECT 1 FROM planned p WHERE p.call_id = m.call_id) ORDER BY m.seq"
    ):
        yield f"batch_calls seq {seq} (batch {key}): call {call_id} was never planned"
    for key, requests, held in conn.execute(
        "SELECT b.batch_key, b.requests, (SELECT count(*) FROM batch_calls m"
        " WHERE m.batch_key = b.batch_key) FROM batches b WHERE b.requests !="
        " (SELECT count(*) FROM batch_calls m WHERE m.batch_key = b.batch_key) ORDER BY b.seq"
    ):
        yield f"batches: batch {key} records {requests} requests but holds {held} calls"


def _one_open_holder(conn: sqlite3.Connection) -> Iterator[str]:
    """A call is in a second batch only after the first one holding it was closed: while a
    batch is open, the provider may still answer its lines."""
    for call_id, first, second in conn.execute(
        "SELECT m2.call_id, m1.batch_key, m2.batch_key FROM batch_calls m1"
        " JOIN batch_calls m2 ON m2.call_id = m1.call_id AND m2.seq > m1.seq"
        " AND m2.batch_key != m1.batch_key"
        " JOIN batch_events p ON p.batch_key = m2.batch_key AND p.kind = 'planned'"
        " WHERE NOT EXISTS (SELECT 1 FROM batch_events c WHERE c.batch_key = m1.batch_key"
        " AND c.kind = 'closed' AND c.seq < p.seq) ORDER BY m2.seq"
    ):
        yield (
            f"batch_calls: call {call_id} was put in batch {second} while batch {first}, "
            "which still held it, was open — the call could be answered twice"
        )


def _closed_complete(conn: sqlite3.Connection) -> Iterator[str]:
    for key, call_id, attempt in conn.execute(
        "SELECT m.batch_key, m.call_id, m.attempt FROM batch_calls m"
        " JOIN batch_events c ON c.batch_key = m.batch_key AND c.kind = 'closed'"
        " WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.call_id = m.call_id"
        " AND a.attempt = m.attempt AND a.kind IN ('end', 'interrupted')) ORDER BY m.seq"
    ):
        yield (
            f"batch {key} is closed, but attempt {attempt} of call {call_id} it held has no end row"
        )


def _events_known(conn: sqlite3.Connection) -> Iterator[str]:
    for seq, key in conn.execute(
        "SELECT e.seq, e.batch_key FROM batch_events e WHERE NOT EXISTS"
        " (SELECT 1 FROM batches b WHERE b.batch_key = e.batch_key) ORDER BY e.seq"
    ):
        yield f"batch_events seq {seq}: refers to batch {key}, which was never recorded"
