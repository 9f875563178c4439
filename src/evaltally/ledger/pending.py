"""What remains of a run: the chains that still have a call without a final outcome.

Runs on its own read-only connection in a worker thread (the writer's connection stays free).
One pass over planned in (chain_id, step) order through the planned_chain index, with index
lookups for each call's final outcome and highest attempt number; objects are only built for
chains that are still pending, and repeated strings are shared, so a 1,000,000-call plan fits
comfortably in memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from evaltally.ledger.files import connect_ro, translate
from evaltally.ledger.results import PendingChain, RecordedAnswer
from evaltally.records import PlannedCall, Status

FINAL = "('ok', 'parse_error')"

_QUERY = f"""
SELECT p.call_id, p.chain_id, p.step, p.model, p.benchmark, p.item_id, p.sample, p.protocol,
       p.spec_json, f.status, f.raw_text, f.parsed_json, f.request_hash,
       (SELECT max(a.attempt) FROM attempts a WHERE a.call_id = p.call_id)
FROM planned p
LEFT JOIN outcomes f ON f.seq = (
    SELECT min(o.seq) FROM outcomes o WHERE o.call_id = p.call_id AND o.status IN {FINAL})
ORDER BY p.chain_id, p.step
"""


def compute_pending(path: Path) -> list[PendingChain]:
    conn = connect_ro(path)
    try:
        return list(_chains(conn))
    except sqlite3.Error as exc:
        raise translate(exc, path, "compute the remaining work") from exc
    finally:
        conn.close()


def _chains(conn: sqlite3.Connection) -> Iterator[PendingChain]:
    intern: dict[str, str] = {}

    def shared(s: str) -> str:
        # model/benchmark/protocol repeat across the whole plan; keep one copy of each.
        return intern.setdefault(s, s)

    cur = conn.execute(_QUERY)
    group: list[tuple[Any, ...]] = []
    chain_id: str | None = None
    while page := cur.fetchmany(10000):
        for row in page:
            if row[1] != chain_id:
                if group and any(r[9] is None for r in group):
                    yield _build(group, shared)
                group = []
                chain_id = row[1]
            group.append(row)
    if group and any(r[9] is None for r in group):
        yield _build(group, shared)


def _build(rows: list[tuple[Any, ...]], shared: Any) -> PendingChain:
    chain_id = rows[0][1]
    calls: list[PlannedCall] = []
    recorded: dict[int, RecordedAnswer] = {}
    attempts: dict[str, int] = {}
    for cid, _, step, model, bench, item, sample, proto, spec, st, raw, parsed, rhash, att in rows:
        calls.append(
            PlannedCall(
                call_id=cid,
                chain_id=chain_id,
                step=step,
                model=shared(model),
                benchmark=shared(bench),
                item_id=item,
                sample=sample,
                protocol=shared(proto),
                spec=orjson.loads(spec),
            )
        )
        if st is not None:
            recorded[step] = RecordedAnswer(Status(st), raw, orjson.loads(parsed), rhash)
        elif att:
            attempts[cid] = att
    return PendingChain(chain_id=chain_id, calls=calls, recorded=recorded, attempts_so_far=attempts)
