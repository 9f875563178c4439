"""reconcile: the plan-first write, and the rule that a plan may only grow.

Streams the config's calls in chunks: each chunk's ids are looked up through planned's UNIQUE
index, new calls are appended, and a bitmap over recorded seqs notes which recorded calls the
new plan still lists, so dropped calls are found without holding a million ids in Python.
The whole reconcile is one transaction: a refused plan leaves the ledger as it was.

Every reconcile records, in the `plan` meta entry, a digest of the plan's call ids in the
order they came, and per model its calls and chains. A resume regenerates the plan; when it
has the same digest as the entry the last reconcile wrote, the ledger's planned calls are
exactly this plan (planned only grows, and only through reconcile, which writes a new entry),
so nothing is looked up. Any other plan (changed, grown, reordered) is reconciled row by row
as before, and a changed one is refused with the same error.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from evaltally.errors import LedgerError, PlanMismatchError
from evaltally.ledger.chain import PlanFingerprint
from evaltally.ledger.files import translate, write_failure
from evaltally.ledger.results import PlanDelta
from evaltally.ledger.schema import PLANNED_INDEXES
from evaltally.ledger.supersede import (
    Replacement,
    returning,
    supersede,
    superseded_chain_ids,
)
from evaltally.ledger.writer import Row, Writer, insert_rows
from evaltally.records import PlannedCall, PlannedRow, canonical_json

CHUNK = 5000
_EXAMPLES = 5
PLAN_KEY = "plan"


def planned_row(call: PlannedCall) -> PlannedRow:
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


class PlanTally:
    """What a pass over the plan learns: its size, the digest of its call ids in the order
    they came, and per model its calls and chains. Calls come chain by chain (as the planner
    yields them), so a chain is counted for a model when the model's first call in it comes."""

    def __init__(self) -> None:
        self.count = 0
        self._digest = hashlib.sha256()
        self.models: dict[str, list[int]] = {}
        self._chain = ""
        self._in_chain: set[str] = set()

    def add(self, chunk: list[PlannedRow]) -> None:
        self.count += len(chunk)
        self._digest.update("".join([row[0] + "\n" for row in chunk]).encode())
        models, in_chain = self.models, self._in_chain
        for row in chunk:
            chain, model = row[1], row[3]
            if chain != self._chain:
                self._chain = chain
                in_chain.clear()
            counts = models.get(model)
            if counts is None:
                counts = models[model] = [0, 0]
            counts[0] += 1
            if model not in in_chain:
                in_chain.add(model)
                counts[1] += 1

    @property
    def digest(self) -> str:
        return self._digest.hexdigest()


async def reconcile(
    writer: Writer,
    rows: Callable[[], Iterable[PlannedRow]],
    *,
    replayable: bool,
    replace: Replacement | None = None,
    meta: Iterable[tuple[str, Any]] = (),
) -> PlanDelta:
    """Record the plan `rows()` yields. `replayable`: `rows` gives the same plan again when
    called again, so an unchanged plan is checked by its digest alone (a changed one costs a
    second pass); otherwise it is called once and every call is looked up. `replace`: the
    models whose recorded calls the plan may drop, superseded (ledger/supersede.py). `meta`:
    (key, value) entries committed with the plan (the config it came from), so a run killed
    right after knows which config its plan is."""
    try:
        async with writer.atomic():
            now = time.time()
            extra = [writer.make_row("meta", (k, canonical_json(v).decode(), now)) for k, v in meta]
            last = await latest_plan(writer) if replayable else None
            if last is not None and _unchanged(last, writer.seqs["planned"], rows):
                total = writer.seqs["planned"] - int(last.get("superseded", 0))
                await writer.insert({"meta": extra, "checkpoints": [writer.checkpoint_row("plan")]})
                return PlanDelta(total=total, added=0, already=total)
            tally = PlanTally()
            delta = await _reconcile(writer, iter(rows()), tally, replace)
            plan_meta = await _plan_meta(writer, tally)
            await writer.insert(
                {"meta": [*extra, plan_meta], "checkpoints": [writer.checkpoint_row("plan")]}
            )
    except sqlite3.IntegrityError as exc:
        if "UNIQUE" in str(exc):  # a duplicate call_id met the rebuilt index
            raise LedgerError(_duplicate(writer, "(see the planner)")) from exc
        raise translate(exc, writer.path, "record the plan") from exc
    except (sqlite3.Error, OSError) as exc:
        raise write_failure(exc, writer.path, "record the plan") from exc
    return delta


async def latest_plan(writer: Writer) -> dict[str, Any] | None:
    """The value of the last `plan` meta entry (None before the first plan)."""
    rows = await writer.db.query(
        "SELECT value_json FROM meta WHERE key = ? ORDER BY seq DESC LIMIT 1", (PLAN_KEY,)
    )
    value: dict[str, Any] | None = orjson.loads(rows[0][0]) if rows else None
    return value


def _unchanged(
    last: dict[str, Any], planned: int, rows: Callable[[], Iterable[PlannedRow]]
) -> bool:
    """The plan is the one the last reconcile recorded (same calls in the same order), and
    planned holds exactly its calls. An entry without a digest (written by an earlier version)
    never matches; a plan with more calls stops the pass as soon as it has more."""
    if "digest" not in last or last.get("calls") != planned:
        return False
    current = planned - int(last.get("superseded", 0))
    tally = PlanTally()
    it = iter(rows())
    while chunk := list(itertools.islice(it, CHUNK)):
        tally.add(chunk)
        if tally.count > current:
            return False
    return tally.count == current and tally.digest == last["digest"]


async def _reconcile(
    writer: Writer, it: Iterator[PlannedRow], tally: PlanTally, replace: Replacement | None
) -> PlanDelta:
    db = writer.db
    known_before = writer.seqs["planned"]
    gone = await superseded_chain_ids(writer) if known_before else set()
    # One bit per recorded call (seq is 1..known_before without gaps): which ones the new plan
    # still lists. 1M calls = 1 MB, instead of a set of ids or a temp table of random keys.
    seen = bytearray(known_before + 1)
    if not known_before:
        for index in ("planned_call", "planned_chain"):
            await db.execute(f"DROP INDEX {index}")
    added = 0
    pending_insert: asyncio.Future[Any] | None = None
    while chunk := list(itertools.islice(it, CHUNK)):
        tally.add(chunk)
        ids = {row[0] for row in chunk}
        if len(ids) != len(chunk):
            raise LedgerError(_duplicate(writer, _first_duplicate(chunk)))
        if gone and (back := returning(gone, (row[1] for row in chunk))):
            raise PlanMismatchError(_returning(writer, back))
        known: set[str] = set()
        if known_before:
            for i in range(0, len(chunk), 900):  # stay far below SQLite's bound-parameter cap
                part = [row[0] for row in chunk[i : i + 900]]
                marks = ",".join("?" * len(part))
                found = await db.query(
                    f"SELECT seq, call_id FROM planned WHERE call_id IN ({marks})"
                    f" AND seq <= {known_before}",
                    part,
                )
                for seq, cid in found:
                    if seen[seq]:
                        raise LedgerError(_duplicate(writer, cid))
                    seen[seq] = 1
                    known.add(cid)
        new = [writer.make_row("planned", row) for row in chunk if row[0] not in known]
        if new:
            # Pipelined: SQLite inserts this chunk on the connection's thread while we hash the
            # next.
            if pending_insert is not None:
                await pending_insert
            pending_insert = asyncio.ensure_future(db.run(insert_rows, {"planned": new}))
            added += len(new)
    if pending_insert is not None:
        await pending_insert
    if not known_before:
        for stmt in PLANNED_INDEXES:  # a duplicate call_id fails here: UNIQUE constraint
            await db.execute(stmt)
    dropped = [seq for seq in range(1, known_before + 1) if not seen[seq]]
    superseded: dict[str, int] = {}
    if dropped:
        refused, superseded = await supersede(writer, dropped, gone, replace)
        if refused:
            await _refuse_dropped(writer, refused)
    return PlanDelta(
        total=tally.count, added=added, already=tally.count - added, superseded=superseded
    )


def _returning(writer: Writer, chain: str) -> str:
    return (
        f"{writer.path}: the config's plan lists chain {chain[:12]}…, whose calls were "
        "superseded when a model was replaced (`tally status` lists the replacements): a "
        "superseded call never comes back. Replace the model again with a config that differs "
        "from every earlier one of it, or start a new run directory."
    )


def _first_duplicate(chunk: list[PlannedRow]) -> str:
    seen: set[str] = set()
    for row in chunk:
        if row[0] in seen:
            return row[0]
        seen.add(row[0])
    return "?"


def _duplicate(writer: Writer, call_id: str) -> str:
    return (
        f"{writer.path}: the plan lists call_id {call_id} more than once; this is a planner "
        "bug (call ids must be unique); nothing was recorded"
    )


async def _refuse_dropped(writer: Writer, dropped: list[int]) -> None:
    marks = ",".join("?" * min(len(dropped), _EXAMPLES))
    found = await writer.db.query(
        f"SELECT call_id, model, benchmark, item_id, sample, step FROM planned"
        f" WHERE seq IN ({marks}) ORDER BY seq",
        dropped[:_EXAMPLES],
    )
    examples = "; ".join(
        f"{cid[:12]}… model={m} benchmark={b} item_id={i} sample={s} step={st}"
        for cid, m, b, i, s, st in found
    )
    raise PlanMismatchError(
        f"{writer.path}: the config's plan drops {len(dropped)} call(s) the ledger has recorded "
        f"(e.g. {examples}). A run's plan may only grow: adding models, items or samples is "
        "allowed, changing or removing them is not. Restore the original config, or start a "
        "new run directory for the changed sweep."
    )


def _fingerprint(conn: sqlite3.Connection) -> PlanFingerprint:
    """The plan's fingerprint over planned's call ids, read in id order through the index."""
    fp = PlanFingerprint()
    for (cid,) in conn.execute("SELECT call_id FROM planned ORDER BY call_id"):
        fp.add(cid)
    return fp


async def _plan_meta(writer: Writer, tally: PlanTally) -> Row:
    """The `plan` meta entry: call count and fingerprint (streamed in id order via the index:
    what `verify` checks planned against), and the tally of the plan just reconciled."""
    fp = await writer.db.run(_fingerprint)
    value = {
        "calls": fp.count,
        "fingerprint": fp.hexdigest(),
        "digest": tally.digest,
        "models": tally.models,
        "superseded": fp.count - tally.count,
    }
    return writer.make_row("meta", (PLAN_KEY, canonical_json(value).decode(), time.time()))
