"""reconcile_plan: the plan-first write, and the rule that a plan may only grow.

Streams the config's calls in chunks: each chunk's ids are looked up through planned's UNIQUE
index, new calls are appended, and a bitmap over recorded seqs notes which recorded calls the
new plan still lists, so dropped calls are found without holding a million ids in Python.
The whole reconcile is one transaction: a refused plan leaves the ledger as it was.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from evaltally.errors import LedgerError, PlanMismatchError
from evaltally.ledger.chain import PlanFingerprint
from evaltally.ledger.files import translate, write_failure
from evaltally.ledger.results import PlanDelta
from evaltally.ledger.schema import PLANNED_INDEXES, insert_sql
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
    try:
        async with writer.atomic():
            delta = await _reconcile(writer, calls)
            meta = await _plan_meta(writer)
            await writer.insert({"meta": [meta], "checkpoints": [writer.checkpoint_row("plan")]})
    except sqlite3.IntegrityError as exc:
        if "UNIQUE" in str(exc):  # a duplicate call_id met the rebuilt index
            raise LedgerError(_duplicate(writer, "(see the planner)")) from exc
        raise translate(exc, writer.path, "record the plan") from exc
    except (sqlite3.Error, OSError) as exc:
        raise write_failure(exc, writer.path, "record the plan") from exc
    return delta


async def _reconcile(writer: Writer, calls: Iterable[PlannedCall]) -> PlanDelta:
    db = writer.db
    sql = insert_sql("planned")
    known_before = writer.seqs["planned"]
    # One bit per recorded call (seq is 1..known_before without gaps): which ones the new plan
    # still lists. 1M calls = 1 MB, instead of a set of ids or a temp table of random keys.
    seen = bytearray(known_before + 1)
    if not known_before:
        for index in ("planned_call", "planned_chain"):
            await db.execute(f"DROP INDEX {index}")
    total = added = 0
    pending_insert: asyncio.Future[Any] | None = None
    it = iter(calls)
    while chunk := list(itertools.islice(it, CHUNK)):
        total += len(chunk)
        ids = {c.call_id for c in chunk}
        if len(ids) != len(chunk):
            raise LedgerError(_duplicate(writer, _first_duplicate(chunk)))
        known: set[str] = set()
        if known_before:
            for i in range(0, len(chunk), 900):  # stay far below SQLite's bound-parameter cap
                part = [c.call_id for c in chunk[i : i + 900]]
                marks = ",".join("?" * len(part))
                cur = await db.execute(
                    f"SELECT seq, call_id FROM planned WHERE call_id IN ({marks})"
                    f" AND seq <= {known_before}",
                    part,
                )
                for seq, cid in await cur.fetchall():
                    if seen[seq]:
                        raise LedgerError(_duplicate(writer, cid))
                    seen[seq] = 1
                    known.add(cid)
        new = [writer.make_row("planned", _rest(c)) for c in chunk if c.call_id not in known]
        if new:
            # Pipelined: SQLite inserts this chunk on aiosqlite's thread while we hash the next.
            if pending_insert is not None:
                await pending_insert
            pending_insert = asyncio.ensure_future(db.executemany(sql, new))
            added += len(new)
    if pending_insert is not None:
        await pending_insert
    if not known_before:
        for stmt in PLANNED_INDEXES:  # a duplicate call_id fails here: UNIQUE constraint
            await db.execute(stmt)
    dropped = [seq for seq in range(1, known_before + 1) if not seen[seq]]
    if dropped:
        await _refuse_dropped(writer, dropped)
    return PlanDelta(total=total, added=added, already=total - added)


def _first_duplicate(chunk: list[PlannedCall]) -> str:
    seen: set[str] = set()
    for call in chunk:
        if call.call_id in seen:
            return call.call_id
        seen.add(call.call_id)
    return "?"


def _duplicate(writer: Writer, call_id: str) -> str:
    return (
        f"{writer.path}: the plan lists call_id {call_id} more than once; this is a planner "
        "bug (call ids must be unique); nothing was recorded"
    )


async def _refuse_dropped(writer: Writer, dropped: list[int]) -> None:
    marks = ",".join("?" * min(len(dropped), _EXAMPLES))
    cur = await writer.db.execute(
        f"SELECT call_id, model, benchmark, item_id, sample, step FROM planned"
        f" WHERE seq IN ({marks}) ORDER BY seq",
        dropped[:_EXAMPLES],
    )
    examples = "; ".join(
        f"{cid[:12]}… model={m} benchmark={b} item_id={i} sample={s} step={st}"
        for cid, m, b, i, s, st in await cur.fetchall()
    )
    raise PlanMismatchError(
        f"{writer.path}: the config's plan drops {len(dropped)} call(s) the ledger has recorded "
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
