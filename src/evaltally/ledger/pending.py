"""What remains of a run: the chains that still have a call without a final outcome.

Read in bounded batches, so memory does not grow with the sweep: `PendingStream` walks planned
in (chain_id, step) order through the planned_chain index, one page per query (keyset: chain ids
after the last one read), joined to each call's final outcome and its highest attempt number.
Objects are only built for chains that are still pending, and repeated strings are shared.
Each page is its own read transaction on a read-only connection, so the run's writer is never
held up; chains after the last one read cannot have changed meanwhile, because the runner only
sends calls of chains it has been given.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from sys import intern
from typing import Any

import orjson

from evaltally.ledger.current import FINAL, PLANNED, is_done, join_current, live
from evaltally.ledger.files import connect_ro, translate
from evaltally.ledger.results import PendingChain, PendingCount, RecordedAnswer
from evaltally.records import PlannedCall, Status

BATCH_CALLS = 20_000
"""Planned calls (of pending chains) per batch: about 16 MB of chains in memory."""

CHAIN_SELECT = f"""
SELECT p.call_id, p.chain_id, p.step, p.model, p.benchmark, p.item_id, p.sample, p.protocol,
       p.spec_json, f.status, f.raw_text, f.parsed_json, f.request_hash, f.seq
FROM planned p
{join_current("f", final=True)}"""
"""Every planned call with its current outcome when that is final; append WHERE/ORDER BY
(ledger/recorded.py reads one chain with it)."""

# The highest attempt of a call without a final outcome (resume continues numbering from it):
# one seek to the end of the call's range in the attempts_call index.
_WITH_ATTEMPT = CHAIN_SELECT.replace(
    "FROM planned p",
    ", CASE WHEN f.status IS NULL THEN"
    " (SELECT max(a.attempt) FROM attempts a WHERE a.call_id = p.call_id) END\nFROM planned p",
)
_PAGE = _WITH_ATTEMPT + f"WHERE p.chain_id > ? AND {live('p')} ORDER BY p.chain_id, p.step LIMIT ?"
_ONE_CHAIN = _WITH_ATTEMPT + "WHERE p.chain_id = ? ORDER BY p.step"

_COUNTS = f"""
SELECT p.model, count(*), count(DISTINCT p.chain_id) FROM {PLANNED} p
WHERE NOT {is_done("p.call_id")}
GROUP BY p.model
"""

# Per model, of the chains that have a final outcome: calls done, and chains whose every
# call of that model is done. Read from the outcomes side (CROSS JOIN keeps that order), so
# the cost follows the work done, not the size of the plan.
_DONE = f"""
SELECT model, sum(done), sum(done = n) FROM (
  SELECT p.model AS model, count(*) AS n, sum({is_done("p.call_id")}) AS done
  FROM (SELECT DISTINCT d.chain_id FROM outcomes f CROSS JOIN planned d
        ON d.call_id = f.call_id WHERE f.status IN {FINAL} AND {live("d")}) t
  CROSS JOIN planned p ON p.chain_id = t.chain_id
  GROUP BY p.chain_id, p.model
) GROUP BY model
"""


def count_pending(path: Path, totals: Mapping[str, list[int]] | None) -> dict[str, PendingCount]:
    """Model key -> what remains for it, counted inside SQLite (nothing per call in Python).

    `totals`: model key -> [calls, chains] of the whole plan, as the last reconcile recorded
    them. While fewer outcomes are recorded than a third of the plan's calls, what remains is
    the totals less what the outcomes show done; past that, checking every planned call is the
    cheaper count (a done outcome costs two to three times a planned call: measured on
    1,000,000 calls, docs/performance.md), and so it is without totals (a plan recorded by an
    earlier version)."""
    conn = connect_ro(path)
    try:
        (outcomes,) = conn.execute("SELECT coalesce(max(seq), 0) FROM outcomes").fetchone()
        if totals is None or outcomes * 3 >= sum(calls for calls, _ in totals.values()):
            return {m: PendingCount(n, c) for m, n, c in conn.execute(_COUNTS).fetchall()}
        done = {m: (n, c) for m, n, c in conn.execute(_DONE).fetchall()}
    except sqlite3.Error as exc:
        raise translate(exc, path, "count the remaining work") from exc
    finally:
        conn.close()
    counts: dict[str, PendingCount] = {}
    for model, (calls, chains) in totals.items():
        calls_done, chains_done = done.get(model, (0, 0))
        if calls > calls_done:
            counts[model] = PendingCount(calls - calls_done, chains - chains_done)
    return counts


class PendingStream:
    """The pending chains in chain_id order, a batch of about `batch_calls` calls at a time
    (whole chains: a batch holds fewer than `batch_calls` + max(`batch_calls`, its longest
    chain) calls)."""

    def __init__(self, path: Path, batch_calls: int = BATCH_CALLS) -> None:
        self.path = path
        self.batch_calls = batch_calls
        self._conn = connect_ro(path, any_thread=True)
        # While a run writes, each page's read transaction starts with an emptied cache (WAL:
        # the database changed), so a large cache only filled up within one page's query: 64 MiB
        # of a fresh run's memory for little gain.
        self._conn.execute("PRAGMA cache_size = -8192")
        self._after = ""
        self._ended = False
        self._closed = False
        # close() may come from another thread while a page is being read (a cancelled run).
        self._lock = threading.Lock()

    def next_batch(self) -> list[PendingChain]:
        """The next pending chains; an empty list once every chain has been read."""
        with self._lock:
            try:
                return self._batch()
            except sqlite3.Error as exc:
                raise translate(exc, self.path, "read the remaining work") from exc

    def close(self) -> None:
        if self._closed:
            return
        self._closed = self._ended = True
        self._conn.interrupt()
        with self._lock:
            self._conn.close()

    def _batch(self) -> list[PendingChain]:
        batch: list[PendingChain] = []
        calls = 0
        while calls < self.batch_calls and not self._ended:
            rows = self._conn.execute(_PAGE, (self._after, self.batch_calls)).fetchall()
            if len(rows) < self.batch_calls:
                self._ended = True
            else:
                # The last chain of a full page may continue on the next one: read it there.
                last = rows[-1][1]
                while rows and rows[-1][1] == last:
                    rows.pop()
                if not rows:  # one chain longer than a page: read it alone
                    rows = self._conn.execute(_ONE_CHAIN, (last,)).fetchall()
            for group in _groups(rows):
                if any(r[9] is None for r in group):
                    attempts = {r[0]: r[14] for r in group if r[14] is not None}
                    chain = build_chain([r[:14] for r in group], attempts)
                    batch.append(chain)
                    calls += len(chain.calls)
            if rows:
                self._after = rows[-1][1]
        return batch


def _groups(rows: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    """Rows split by chain, one row per call."""
    groups: list[list[tuple[Any, ...]]] = []
    for row in rows:
        if not groups or row[1] != groups[-1][0][1]:
            groups.append([row])
        else:
            groups[-1].append(row)
    return groups


def _spec(text: str) -> dict[str, Any]:
    spec: dict[str, Any] = orjson.loads(text)
    for key, value in spec.items():
        if type(value) is str and len(value) < 200:
            # Spec values (item refs, protocol names) repeat across steps and samples; keep
            # one copy. sys.intern is a C call and interned strings are freed when unused.
            spec[key] = sys.intern(value)
    return spec


def build_chain(rows: list[tuple[Any, ...]], attempts_by_call: dict[str, int]) -> PendingChain:
    """A chain from its `CHAIN_SELECT` rows in step order (one row per call)."""
    chain_id = rows[0][1]
    calls: list[PlannedCall] = []
    recorded: dict[int, RecordedAnswer] = {}
    attempts: dict[str, int] = {}
    for cid, _, step, model, bench, item, sample, proto, spec, st, raw, parsed, rhash, seq in rows:
        calls.append(
            PlannedCall(
                cid,
                chain_id,
                step,
                intern(model),
                intern(bench),
                intern(item),
                sample,
                intern(proto),
                _spec(spec),
            )
        )
        if st is not None:
            recorded[step] = RecordedAnswer(Status(st), raw, orjson.loads(parsed), rhash, seq)
        elif cid in attempts_by_call:
            attempts[cid] = attempts_by_call[cid]
    return PendingChain(chain_id=chain_id, calls=calls, recorded=recorded, attempts_so_far=attempts)
