"""reconcile_plan: the plan-first write, and the rule that a plan may only grow.

Streams the config's calls in chunks: each chunk's ids are looked up through planned's UNIQUE
index, new calls are appended, and every id is remembered in a temp table (on SQLite's side, not
in a Python set) so that recorded calls the new plan drops can be found with one anti-join at
the end. The whole reconcile is one transaction: a refused plan leaves the ledger as it was.
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Iterable

from evaltally.errors import LedgerError, PlanMismatchError
from evaltally.ledger.chain import PlanFingerprint
from evaltally.ledger.files import translate
from evaltally.ledger.results import PlanDelta
from evaltally.ledger.schema import insert_sql
from evaltally.ledger.writer import Row, Writer
from evaltally.records import PlannedCall, canonical_json

CHUNK = 5000
_EXAMPLES = 5


def _rest(call: PlannedCall) -> Row:
    return (
        call.call_id,
        call.chain_id,
        int(call.step),
        call.model,
        call.benchmark,
        call.protocol,
        call.item_id,
        int(call.sample),
        canonical_json(dict(call.spec)).decode(),
    )


async def reconcile(writer: Writer, calls: Iterable[PlannedCall]) -> PlanDelta:
    db = writer.db
    async with writer.lock:
        snap = writer.snapshot()
        await db.execute("BEGIN IMMEDIATE")
        try:
            delta = await _reconcile(writer, calls)
            rows = {"meta": [await _plan_meta(writer)]}
            rows["checkpoints"] = [writer.checkpoint_row("plan")]
            for table, batch in rows.items():
                await db.executemany(insert_sql(table), batch)
            await db.execute("COMMIT")
        except BaseException as exc:
            await db.execute("ROLLBACK")
            writer.restore(snap)
            if isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc):
                raise LedgerError(
                    f"{writer.path}: the plan lists the same call_id twice; this is a planner "
                    "bug (call ids must be unique); nothing was recorded"
                ) from exc
            if isinstance(exc, sqlite3.Error | OSError):
                raise translate(exc, writer.path, "record the plan") from exc
            raise
        finally:
            await db.execute("DROP TABLE IF EXISTS temp.incoming")
    return delta


async def _reconcile(writer: Writer, calls: Iterable[PlannedCall]) -> PlanDelta:
    db = writer.db
    sql = insert_sql("planned")
    fresh = writer.seqs["planned"] == 0
    if not fresh:
        await db.execute("DROP TABLE IF EXISTS temp.incoming")
        await db.execute("CREATE TEMP TABLE incoming (call_id TEXT PRIMARY KEY) WITHOUT ROWID")
    total = added = 0
    it = iter(calls)
    while chunk := list(itertools.islice(it, CHUNK)):
        total += len(chunk)
        if fresh:
            new = chunk
        else:
            ids = [(c.call_id,) for c in chunk]
            await db.executemany("INSERT INTO temp.incoming (call_id) VALUES (?)", ids)
            known: set[str] = set()
            for i in range(0, len(chunk), 900):  # stay far below SQLite's bound-parameter cap
                part = [c.call_id for c in chunk[i : i + 900]]
                marks = ",".join("?" * len(part))
                cur = await db.execute(
                    f"SELECT call_id FROM planned WHERE call_id IN ({marks})", part
                )
                known.update(r[0] for r in await cur.fetchall())
            new = [c for c in chunk if c.call_id not in known]
        if new:
            await db.executemany(sql, [writer.make_row("planned", _rest(c)) for c in new])
            added += len(new)
    if not fresh:
        await _refuse_dropped(writer)
    return PlanDelta(total=total, added=added, already=total - added)


async def _refuse_dropped(writer: Writer) -> None:
    anti = (
        "FROM planned p WHERE NOT EXISTS"
        " (SELECT 1 FROM temp.incoming i WHERE i.call_id = p.call_id)"
    )
    cur = await writer.db.execute(f"SELECT count(*) {anti}")
    row = await cur.fetchone()
    dropped = int(row[0]) if row else 0
    if not dropped:
        return
    cur = await writer.db.execute(
        f"SELECT p.call_id, p.model, p.benchmark, p.item_id, p.sample, p.step {anti}"
        f" ORDER BY p.seq LIMIT {_EXAMPLES}"
    )
    examples = "; ".join(
        f"{cid[:12]}… model={m} benchmark={b} item_id={i} sample={s} step={st}"
        for cid, m, b, i, s, st in await cur.fetchall()
    )
    raise PlanMismatchError(
        f"{writer.path}: the config's plan drops {dropped} call(s) the ledger has recorded "
        f"(e.g. {examples}). A run's plan may only grow: adding models, items or samples is "
        "allowed, changing or removing them is not. Restore the original config, or start a "
        "new run directory for the changed sweep."
    )


async def _plan_meta(writer: Writer) -> Row:
    """The `plan` meta entry: call count and fingerprint, streamed in id order via the index."""
    fp = PlanFingerprint()
    cur = await writer.db.execute("SELECT call_id FROM planned ORDER BY call_id")
    while page := await cur.fetchmany(20000):
        for (cid,) in page:
            fp.add(cid)
    value = {"calls": fp.count, "fingerprint": fp.hexdigest()}
    return writer.make_row("meta", ("plan", canonical_json(value).decode(), time.time()))
