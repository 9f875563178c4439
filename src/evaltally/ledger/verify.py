"""`tally verify`: recheck the ledger's invariants from the database alone and say precisely
what is wrong (table, seq, call). Read-only; never repairs anything.

Two kinds of findings: violations (an edit, a deletion, a row no run writes: tampering or
corruption) and interruptions (the last process ended without closing: attempts without an end
row, a session without an end row). An interruption is what a kill -9, a power cut or a full
disk leaves; `tally resume` closes it. Only violations make a ledger untrustworthy.

Limit (docs/ledger.md): hash chains expose edits and deletions anywhere before a table's newest
row, and checkpoints pin row counts and head hashes, so deleting the newest rows is detected
down to the newest surviving checkpoint. Rows written after that checkpoint can be removed
without a trace: that is indistinguishable from a crash before they were committed.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evaltally.ledger import bodies, chain
from evaltally.ledger.batch_checks import batch_violations, has_batch_tables
from evaltally.ledger.batch_schema import held_by_open_batch
from evaltally.ledger.current import FINAL
from evaltally.ledger.files import connect_ro, ledger_path, translate
from evaltally.ledger.lock import iso, lock_holder
from evaltally.ledger.schema import (
    BLOB_POSITIONS,
    HASHED_COLUMNS,
    MIGRATIONS,
    applied_tables,
    trigger_names,
)
from evaltally.ledger.supersede import sent_after_supersession
from evaltally.ledger.verify_answers import unbacked_answers

_MAX_PER_CHECK = 20


@dataclass(slots=True)
class VerifyReport:
    run_dir: str
    violations: list[str] = field(default_factory=list)
    """Tampering or corruption: the ledger cannot be trusted as it is."""
    interruptions: list[str] = field(default_factory=list)
    """The last process ended without closing (kill, crash, full disk); `tally resume` fixes it."""
    notes: list[str] = field(default_factory=list)
    live: str | None = None

    @property
    def ok(self) -> bool:
        """Nothing found: the history is intact and every session ended cleanly."""
        return not self.violations and not self.interruptions

    @property
    def verdict(self) -> str:
        """`violated`, `interrupted` or `verified` (the CLI's exit statuses 4, 5 and 0)."""
        if self.violations:
            return "violated"
        return "interrupted" if self.interruptions else "verified"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "verdict": self.verdict}


Check = Callable[[sqlite3.Connection, VerifyReport], Iterator[str]]


def verify_run(run_dir: Path) -> VerifyReport:
    run_dir = Path(run_dir)
    path = ledger_path(run_dir)
    conn = connect_ro(path)
    report = VerifyReport(run_dir=str(run_dir), live=lock_holder(run_dir))
    violations: tuple[Check, ...] = (
        _schema,
        _chains,
        _checkpoint,
        _references,
        _finals,
        _answers,
        _request_hashes,
        _plan,
        _verdicts,
        _superseded,
        batch_violations,
    )
    try:
        for check in violations:
            _collect(report.violations, check(conn, report))
        for check in (_unclosed, _unended_session):
            _collect(report.interruptions, check(conn, report))
    except sqlite3.Error as exc:
        raise translate(exc, path, "verify the ledger") from exc
    finally:
        conn.close()
    return report


def _collect(into: list[str], findings: Iterator[str]) -> None:
    found = list(findings)
    into.extend(found[:_MAX_PER_CHECK])
    if len(found) > _MAX_PER_CHECK:
        into.append(f"... and {len(found) - _MAX_PER_CHECK} more like these")


def _short(call_id: str | None) -> str:
    return f" (call {call_id[:8]}…)" if call_id else ""


def _tables(conn: sqlite3.Connection) -> tuple[str, ...]:
    """The chained tables this ledger's applied migrations created."""
    return applied_tables(v for (v,) in conn.execute("SELECT version FROM migrations"))


def _schema(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    objs = {(t, n) for t, n in conn.execute("SELECT type, name FROM sqlite_master")}
    recorded = list(conn.execute("SELECT version, name FROM migrations ORDER BY version"))
    known = [(m.version, m.name) for m in MIGRATIONS]
    if recorded != known[: len(recorded)] or not recorded:
        yield f"schema: migrations table lists {recorded}, this evaltally expects {known}"
    elif len(recorded) < len(known):
        report.notes.append(
            f"schema version {recorded[-1][0]} (this evaltally writes {known[-1][0]}): the next "
            "`tally run`/`tally resume` upgrades it in place; checked as written"
        )
    tables = _tables(conn)
    for table in ("migrations", *tables):
        if ("table", table) not in objs:
            yield f"schema: table {table} is missing"
    applied = {v for v, _ in recorded}
    for name in (i for m in MIGRATIONS if m.version in applied for i in m.indexes):
        if ("index", name) not in objs:
            yield f"schema: index {name} is missing"
    for name in trigger_names(("migrations", *tables)):
        if ("trigger", name) not in objs:
            yield f"schema: append-only trigger {name} is missing — someone dropped it"


def _chains(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    for table in _tables(conn):
        cols = HASHED_COLUMNS[table]
        has_call = "call_id" in cols
        prev_seq, prev_hash = 0, chain.GENESIS
        cur = conn.execute(f"SELECT {', '.join(cols)}, row_hash FROM {table} ORDER BY seq")
        for row in cur:
            seq, stored = row[0], row[-1]
            where = f"{table} seq {seq}{_short(row[3] if has_call else None)}"
            if seq != prev_seq + 1:
                missing = (
                    f"seq {prev_seq + 1}"
                    if seq == prev_seq + 2
                    else (f"seqs {prev_seq + 1}..{seq - 1}")
                )
                yield (
                    f"{table}: {missing} missing before seq {seq} — row(s) were deleted "
                    "after the append-only triggers were bypassed"
                )
            elif chain.row_hash(prev_hash, row[:-1], BLOB_POSITIONS[table]) != stored:
                yield (
                    f"{where}: row_hash does not match its content — the row was edited "
                    "(or the row before it was, and its hash recomputed)"
                )
            prev_seq, prev_hash = seq, stored


def _checkpoint(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    row = conn.execute(
        "SELECT seq, at, heads_json FROM checkpoints ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        report.notes.append("no checkpoint yet: deleting the newest rows cannot be detected")
        return
    cp_seq, at, heads_json = row
    report.notes.append(
        f"newest checkpoint: seq {cp_seq} at {iso(at)}; rows written after it are protected by "
        "their hash chains only (removing the newest of them cannot be detected)"
    )
    for table, (seq, head) in orjson.loads(heads_json).items():
        if table not in HASHED_COLUMNS or seq == 0:
            continue
        found = conn.execute(f"SELECT row_hash FROM {table} WHERE seq = ?", (seq,)).fetchone()
        if found is None:
            last = conn.execute(f"SELECT coalesce(max(seq), 0) FROM {table}").fetchone()[0]
            yield (
                f"{table}: checkpoint {cp_seq} recorded {seq} rows but seq {seq} is gone "
                f"(table ends at seq {last}) — the newest rows were deleted"
            )
        elif found[0] != head:
            yield (
                f"{table} seq {seq}: row_hash differs from checkpoint {cp_seq} — history up "
                "to this row was rewritten"
            )


def _references(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    for table in ("attempts", "outcomes"):
        for seq, call_id in conn.execute(
            f"SELECT seq, call_id FROM {table} t WHERE NOT EXISTS "
            "(SELECT 1 FROM planned p WHERE p.call_id = t.call_id) ORDER BY seq"
        ):
            yield f"{table} seq {seq}{_short(call_id)}: refers to a call that was never planned"


def _finals(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    """At most one final outcome per call, and nothing after it: what makes a call's current
    outcome (ledger/current.py) its answer for every reader."""
    for call_id, n, seqs in conn.execute(
        f"SELECT call_id, count(*), group_concat(seq) FROM outcomes WHERE status IN {FINAL}"
        " GROUP BY call_id HAVING count(*) > 1"
    ):
        yield f"outcomes seqs {seqs}{_short(call_id)}: {n} final outcomes for one call"
    for table, what in (("attempts", "an attempt started"), ("outcomes", "another outcome")):
        extra = " AND t.kind = 'start'" if table == "attempts" else ""
        for seq, call_id, fseq in conn.execute(
            f"SELECT t.seq, t.call_id, f.seq FROM {table} t JOIN outcomes f ON"
            f" f.call_id = t.call_id AND f.status IN {FINAL} WHERE t.ev > f.ev{extra}"
            " ORDER BY t.seq"
        ):
            yield (
                f"{table} seq {seq}{_short(call_id)}: {what} after the call's final outcome "
                f"(outcomes seq {fseq}) — a recorded answer was re-sent"
            )


def _answers(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    return unbacked_answers(conn)


def _superseded(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    return sent_after_supersession(conn)


def _unclosed(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    # The lines of an open batch have no end row until the provider answers: not a violation.
    batch = f" AND NOT {held_by_open_batch('s')}" if has_batch_tables(conn) else ""
    rows = list(
        conn.execute(
            "SELECT s.seq, s.call_id, s.attempt FROM attempts s WHERE s.kind = 'start' AND NOT "
            "EXISTS (SELECT 1 FROM attempts e WHERE e.call_id = s.call_id AND "
            f"e.attempt = s.attempt AND e.kind IN ('end', 'interrupted')){batch} ORDER BY s.seq"
        )
    )
    if report.live is not None:
        report.notes.append(
            f"the run is live ({report.live}): {len(rows)} attempt(s) in flight were not "
            "checked for an end row"
        )
        return
    for seq, call_id, attempt in rows:
        yield (
            f"attempts seq {seq}{_short(call_id)}: attempt {attempt} started but has no end "
            "or interrupted row (the process was killed; `tally resume` records it)"
        )


def _unended_session(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    if report.live is not None:
        return
    row = conn.execute(
        "SELECT s.session, s.pid, s.command, s.at FROM sessions s WHERE s.kind = 'start' AND"
        " NOT EXISTS (SELECT 1 FROM sessions e WHERE e.session = s.session AND e.kind = 'end')"
        " AND s.session = (SELECT max(session) FROM sessions)"
    ).fetchone()
    if row is not None:
        session, pid, command, at = row
        yield (
            f"sessions: the newest session ({session}: pid {pid}, {command!r}, started "
            f"{iso(at)}) has no end row — it was killed or stopped by an error such as a full "
            "disk; `tally resume` continues the run"
        )


def _request_hashes(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    for seq, call_id, rhash, body in conn.execute(
        "SELECT seq, call_id, request_hash, request_body FROM attempts WHERE kind = 'start'"
        " ORDER BY seq"
    ):
        try:
            raw = None if body is None else bodies.unpack(body)
        except zlib.error:
            raw = None
        if raw is None or chain.request_hash(raw) != rhash:
            yield (
                f"attempts seq {seq}{_short(call_id)}: request_hash is not the sha256 of the "
                "recorded request body"
            )
    for seq, call_id in conn.execute(
        "SELECT o.seq, o.call_id FROM outcomes o WHERE o.request_hash IS NOT NULL AND NOT EXISTS"
        " (SELECT 1 FROM attempts a WHERE a.call_id = o.call_id AND a.kind = 'start' AND"
        " a.request_hash = o.request_hash) ORDER BY o.seq"
    ):
        yield (
            f"outcomes seq {seq}{_short(call_id)}: request_hash matches no recorded request "
            "body of this call"
        )


def _plan(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    row = conn.execute(
        "SELECT seq, value_json FROM meta WHERE key = 'plan' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    fp = chain.PlanFingerprint()
    for (call_id,) in conn.execute("SELECT call_id FROM planned ORDER BY call_id"):
        fp.add(call_id)
    if row is None:
        if fp.count:
            yield f"meta: no plan fingerprint, but planned holds {fp.count} calls"
        return
    seq, value = row
    recorded = orjson.loads(value)
    if recorded.get("calls") != fp.count or recorded.get("fingerprint") != fp.hexdigest():
        yield (
            f"meta seq {seq}: plan fingerprint records {recorded.get('calls')} calls "
            f"({str(recorded.get('fingerprint'))[:12]}…), planned holds {fp.count} "
            f"({fp.hexdigest()[:12]}…) — planned calls were added or removed outside "
            "reconcile_plan"
        )


def _verdicts(conn: sqlite3.Connection, report: VerifyReport) -> Iterator[str]:
    """A verdict judges a recorded ok answer, so it follows that answer's outcome."""
    if "verifications" not in _tables(conn):
        return
    for seq, call_id in conn.execute(
        "SELECT v.seq, v.call_id FROM verifications v WHERE NOT EXISTS (SELECT 1 FROM outcomes o"
        " WHERE o.call_id = v.call_id AND o.status = 'ok' AND o.ev < v.ev) ORDER BY v.seq"
    ):
        yield (
            f"verifications seq {seq}{_short(call_id)}: a verdict without an earlier ok answer "
            "of its call"
        )
