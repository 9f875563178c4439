"""What remains of a run: the chains that still have a call without a final outcome.

Runs on its own read-only connection in a worker thread (the writer's connection stays free).
One pass over planned in (chain_id, step) order through the planned_chain index, joined to each
call's final outcome; objects are only built for chains that are still pending, and repeated
strings are shared, so a 1,000,000-call plan fits comfortably in memory.
"""

from __future__ import annotations

import gc
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from sys import intern
from typing import Any

import orjson

from evaltally.ledger.files import connect_ro, translate
from evaltally.ledger.results import PendingChain, RecordedAnswer
from evaltally.records import PlannedCall, Status

FINAL = "('ok', 'parse_error')"

# Highest attempt number of each call that has no final outcome yet (resume continues from it).
# A separate grouped scan of the attempts index is much cheaper than a lookup per planned call.
_ATTEMPTS = f"""
SELECT a.call_id, max(a.attempt) FROM attempts a
WHERE NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.call_id = a.call_id AND o.status IN {FINAL})
GROUP BY a.call_id
"""

CHAIN_SELECT = f"""
SELECT p.call_id, p.chain_id, p.step, p.model, p.benchmark, p.item_id, p.sample, p.protocol,
       p.spec_json, f.status, f.raw_text, f.parsed_json, f.request_hash, f.seq
FROM planned p
LEFT JOIN outcomes f ON f.call_id = p.call_id AND f.status IN {FINAL}
"""
"""Every planned call with its final outcome (if any); append WHERE/ORDER BY (ledger/recorded.py
reads one chain with it)."""

_QUERY = CHAIN_SELECT + "ORDER BY p.chain_id, p.step"


def compute_pending(path: Path) -> list[PendingChain]:
    conn = connect_ro(path)
    # Building ~1M small objects triggers the cyclic GC over and over (it scans every live
    # object each time); none of these objects form cycles, so pause it for the build.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        conn.execute("PRAGMA cache_size = -65536")
        attempts = dict(conn.execute(_ATTEMPTS).fetchall())
        return list(_chains(conn, attempts))
    except sqlite3.Error as exc:
        raise translate(exc, path, "compute the remaining work") from exc
    finally:
        conn.close()
        if gc_was_enabled:
            gc.enable()


def _spec(text: str) -> dict[str, Any]:
    spec: dict[str, Any] = orjson.loads(text)
    for key, value in spec.items():
        if type(value) is str and len(value) < 200:
            # Spec values (item refs, protocol names) repeat across steps and samples; keep
            # one copy. sys.intern is a C call and interned strings are freed when unused.
            spec[key] = sys.intern(value)
    return spec


def _chains(conn: sqlite3.Connection, attempts: dict[str, int]) -> Iterator[PendingChain]:
    cur = conn.execute(_QUERY)
    group: list[tuple[Any, ...]] = []
    chain_id: str | None = None
    while page := cur.fetchmany(10000):
        for row in page:
            if row[1] != chain_id:
                if group and any(r[9] is None for r in group):
                    yield build_chain(group, attempts)
                group = []
                chain_id = row[1]
            elif row[0] == group[-1][0]:
                continue  # a second final outcome (verify reports it); the first one counts
            group.append(row)
    if group and any(r[9] is None for r in group):
        yield build_chain(group, attempts)


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
