"""Ledger: the single writer for one run directory (see DESIGN.md, "The ledger").

Lifecycle: open() takes the run lock, starts the write connection (connection.py), checks and
migrates the file and appends a session row; event methods enqueue; flush() waits for the disk;
close() writes the session end and a checkpoint, closes the connection and its thread and
releases the lock. After a failed commit (disk full) close() writes nothing more but still
closes the connection and releases the lock.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncGenerator, Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import orjson

from evaltally.errors import LedgerError
from evaltally.ledger import bodies, plan
from evaltally.ledger.batch_schema import held_by_open_batch
from evaltally.ledger.batches import BatchBook
from evaltally.ledger.connection import WriteConnection
from evaltally.ledger.files import (
    SIDECARS,
    ledger_path,
    ledger_tables,
    lost_description,
    translate,
    write_failure,
)
from evaltally.ledger.lock import RunLock
from evaltally.ledger.pending import BATCH_CALLS, PendingStream, count_pending
from evaltally.ledger.results import PendingChain, PendingCount, PlanDelta, ToVerify
from evaltally.ledger.schema import (
    CHAINED_TABLES,
    MIGRATIONS,
    MIGRATIONS_TABLE,
    SCHEMA_VERSION,
    Migration,
)
from evaltally.ledger.supersede import Replacement
from evaltally.ledger.usage import NO_USAGE, bound_usage, with_note
from evaltally.ledger.verifications import answers_to_verify
from evaltally.ledger.writer import Writer, atomically
from evaltally.records import PlannedCall, PlannedRow, Status, Usage, canonical_json


def _json_text(value: Any, what: str) -> str:
    """Canonical JSON for a TEXT column. Raised here, in the caller, rather than inside the
    writer where it would fail the whole batch."""
    try:
        return canonical_json(value).decode()
    except TypeError as exc:
        raise LedgerError(f"{what} is not JSON-serializable: {exc}") from exc


def _opt_float(x: float | None) -> float | None:
    # Values are hashed as stored; SQLite's REAL turns 12 into 12.0, so coerce before hashing.
    return None if x is None else float(x)


class Ledger:
    """Append-only ledger of one run. Create with `await Ledger.open(...)`."""

    def __init__(self, run_dir: Path, path: Path, lock: RunLock, writer: Writer) -> None:
        self.run_dir = run_dir
        self.path = path
        self._lock = lock
        self._writer = writer
        self._closed = False
        self._open_attempts: set[tuple[str, int]] = set()

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        run_dir: Path,
        *,
        create: bool,
        command: str,
        started: bool = False,
        start_over: bool = False,
    ) -> Ledger:
        """Open (and with `create`, create) the run's ledger.

        `started`: the caller knows a run was started in this directory (its config copy is
        there), so a missing or emptied ledger is a lost one, refused unless `start_over`;
        then the remains are renamed aside and a new ledger begins.
        """
        run_dir = Path(run_dir)
        path = ledger_path(run_dir)
        if not create and not path.exists():
            raise LedgerError(
                f"no ledger at {path}; start the run with `tally run <config>` "
                "(resume, status, export and verify need an existing run directory)"
            )
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LedgerError(f"cannot create run directory {run_dir}: {exc.strerror}") from exc
        started_at = time.time()
        lock = RunLock(run_dir)
        lock.acquire(command, started_at)
        db: WriteConnection | None = None
        try:
            _check_not_lost(path, started=started, start_over=start_over)  # checks the file too
            db = await WriteConnection.open(path)
            seqs, heads, ev = await db.run(_prepare, path)
            writer = Writer(db, seqs=seqs, heads=heads, ev=ev)
            async with writer.atomic():
                # A session's id is the seq of its start row.
                writer.session = writer.seqs["sessions"] + 1
                row = writer.make_row("sessions", ("start", os.getpid(), command, started_at))
                await writer.insert({"sessions": [row]})
        except BaseException as exc:
            if db is not None:
                await db.close()
            lock.release()
            if isinstance(exc, sqlite3.Error | OSError):
                raise translate(exc, path, "open the ledger") from exc
            raise
        return cls(run_dir, path, lock, writer)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def healthy(self) -> bool:
        """False once a commit failed: nothing more can be recorded by this process."""
        return not self._writer.failed

    @property
    def session(self) -> int:
        """This process's session id (the seq of its `sessions` start row)."""
        return self._writer.session

    # -- meta -------------------------------------------------------------------------------

    async def meta(self) -> dict[str, Any]:
        await self.flush()
        out: dict[str, Any] = {}
        async with self._writer.lock:
            rows = await self._query("SELECT key, value_json FROM meta ORDER BY seq")
        for key, value in rows:
            out[key] = orjson.loads(value)
        return out

    async def set_meta(self, key: str, value: Any) -> None:
        text = _json_text(value, f"meta value for {key!r}")
        self._writer.enqueue("meta", (key, text, time.time()))
        await self.flush()

    # -- plan -------------------------------------------------------------------------------

    async def reconcile_plan(self, calls: Iterable[PlannedCall]) -> PlanDelta:
        """Record a plan given once: every call is looked up (see record_plan)."""
        await self.flush()
        rows = map(plan.planned_row, calls)
        return await plan.reconcile(self._writer, lambda: rows, replayable=False)

    async def record_plan(
        self,
        rows: Callable[[], Iterable[PlannedRow]],
        *,
        replace: Replacement | None = None,
        meta: Iterable[tuple[str, Any]] = (),
    ) -> PlanDelta:
        """Record the sweep's plan, which `rows()` (evaltally.plan.plan_rows) yields alike each
        time it is called, chain by chain. Called once when the plan is the one recorded last
        (checked by its digest; nothing is looked up), twice when it changed. `replace` and
        `meta`: see plan.reconcile."""
        await self.flush()
        return await plan.reconcile(self._writer, rows, replayable=True, replace=replace, meta=meta)

    # -- events (enqueue only) --------------------------------------------------------------

    @property
    def open_attempts(self) -> int:
        """Attempts this session started and has not finished (none: `mark_interrupted`
        would find nothing this session left open)."""
        return len(self._open_attempts)

    def attempt_started(
        self, call_id: str, attempt: int, request_hash: str, request_body: bytes
    ) -> None:
        self._open_attempts.add((call_id, attempt))
        self._writer.enqueue(
            "attempts",
            (
                call_id,
                int(attempt),
                "start",
                time.time(),
                request_hash,
                bodies.pack(request_body),
                None,
                None,
                None,
                None,
                None,
                *NO_USAGE,
                None,
                None,
            ),
        )

    def attempt_finished(
        self,
        call_id: str,
        attempt: int,
        *,
        http_status: int | None,
        error_class: str | None,
        error_detail: str | None,
        retry_after_s: float | None,
        response_body: bytes | None,
        usage: Usage | None,
        latency_ms: float,
        request_id: str | None,
    ) -> None:
        self._open_attempts.discard((call_id, attempt))
        counts, note = bound_usage(usage)
        self._writer.enqueue(
            "attempts",
            (
                call_id,
                int(attempt),
                "end",
                time.time(),
                None,
                None,
                None if http_status is None else int(http_status),
                error_class,
                with_note(error_detail, note),
                _opt_float(retry_after_s),
                None if response_body is None else bodies.pack(response_body),
                *counts,
                float(latency_ms),
                request_id,
            ),
        )

    async def throttle(self, max_backlog: int = 10_000) -> None:
        """Backpressure: a producer faster than the disk (an offline predictor answers in
        microseconds) waits for the writer, so queued request bodies never pile up in memory."""
        if self._writer.backlog > max_backlog:
            await self._writer.flush()

    def outcome(
        self,
        call_id: str,
        status: Status,
        *,
        raw_text: str | None,
        parsed: Any,
        parse_path: str | None,
        reason: str | None,
        request_hash: str | None,
        attempts: int,
        usage: Usage | None,
        latency_ms: float | None,
    ) -> None:
        parsed_json = _json_text(parsed, f"parsed answer of call {call_id}")
        counts, note = bound_usage(usage)
        self._writer.enqueue(
            "outcomes",
            (
                call_id,
                Status(status).value,
                raw_text,
                parsed_json,
                parse_path,
                with_note(reason, note),
                request_hash,
                int(attempts),
                *counts,
                _opt_float(latency_ms),
                time.time(),
            ),
        )

    async def flush(self) -> None:
        await self._writer.flush()

    async def committed(self) -> None:
        """Wait until every event recorded so far is committed: what a request waits for before
        it leaves (and with it every answer recorded before it). Every waiter joins the same
        next batch (group commit), so this costs a share of one commit, not a commit each."""
        await self._writer.flush()

    # -- resume -----------------------------------------------------------------------------

    async def mark_interrupted(self) -> int:
        """Close every attempt that has a start row and no end row with an `interrupted` row,
        except the lines of batches still open (the provider may still answer them).

        Call it before sending anything in this session: attempts this session has started and
        not yet finished would be marked too.
        """
        await self.flush()
        async with self._writer.lock:
            rows = await self._query(
                "SELECT s.call_id, s.attempt FROM attempts s WHERE s.kind = 'start' AND NOT "
                "EXISTS (SELECT 1 FROM attempts e WHERE e.call_id = s.call_id AND "
                "e.attempt = s.attempt AND e.kind IN ('end', 'interrupted')) AND NOT "
                f"{held_by_open_batch('s')} ORDER BY s.seq"
            )
        now = time.time()
        for call_id, attempt in rows:
            self._writer.enqueue(
                "attempts",
                (
                    call_id,
                    attempt,
                    "interrupted",
                    now,
                    None,
                    None,
                    None,
                    "interrupted",
                    "the process ended before this attempt finished",
                    None,
                    None,
                    *NO_USAGE,
                    None,
                    None,
                ),
            )
        await self.flush()
        return len(rows)

    async def pending_counts(self) -> dict[str, PendingCount]:
        """Model key -> calls (and chains) without a final outcome."""
        await self.flush()
        try:
            async with self._writer.lock:
                recorded = await plan.latest_plan(self._writer)
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "read the ledger") from exc
        totals = recorded.get("models") if recorded else None
        return await asyncio.to_thread(count_pending, self.path, totals)

    async def pending_batches(
        self, batch_calls: int = BATCH_CALLS
    ) -> AsyncGenerator[list[PendingChain]]:
        """The chains with a call still to make, in chain_id order, in batches of about
        `batch_calls` calls (ledger/pending.py); read on a worker thread. Close it (aclose,
        contextlib.aclosing) when stopping early."""
        await self.flush()
        stream = await asyncio.to_thread(PendingStream, self.path, batch_calls)
        try:
            while batch := await asyncio.to_thread(stream.next_batch):
                yield batch
        finally:
            stream.close()

    async def pending_chains(self) -> list[PendingChain]:
        """Every pending chain at once: for small runs and tests (a sweep streams them)."""
        return [chain async for batch in self.pending_batches() for chain in batch]

    # -- verification -----------------------------------------------------------------------

    def verification(
        self, call_id: str, status: str, *, detail: Any, reason: str | None, verifier: str
    ) -> None:
        """Append a verdict (`passed`, `failed` or `error`) on a call's ok answer."""
        detail_json = _json_text(detail, f"verification detail of call {call_id}")
        self._writer.enqueue(
            "verifications", (call_id, status, detail_json, reason, verifier, time.time())
        )

    async def answers_to_verify(
        self, benchmarks: Iterable[str], *, unverified_only: bool
    ) -> list[ToVerify]:
        """Every ok answer of these benchmarks (only those without a verdict, if asked)."""
        await self.flush()
        labels = tuple(benchmarks)
        return await asyncio.to_thread(answers_to_verify, self.path, labels, unverified_only)

    # -- batches ----------------------------------------------------------------------------

    def batch_book(self) -> BatchBook:
        """Writes and reads of the batch tables (ledger/batches.py)."""
        return BatchBook(self._writer, self.path)

    # -- closing ----------------------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        w = self._writer
        try:
            await w.stop()  # raises the writer's failure: then no end row, no checkpoint
            async with w.atomic():
                end = w.make_row("sessions", ("end", os.getpid(), "", time.time()))
                await w.insert({"sessions": [end], "checkpoints": [w.checkpoint_row("close")]})
        except (sqlite3.Error, OSError) as exc:
            raise write_failure(exc, self.path, "close the ledger") from exc
        finally:
            try:
                await w.db.close()
            finally:
                self._lock.release()

    async def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return await self._writer.db.query(sql, params)
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "read the ledger") from exc


def _check_not_lost(path: Path, *, started: bool, start_over: bool) -> None:
    """A run whose ledger is gone must not quietly begin again: that re-sends (and pays for)
    every call. Refuse unless the user asked to start over."""
    run_dir = path.parent
    if ledger_tables(path):
        if start_over:
            raise LedgerError(
                f"{path} holds this run's ledger; --start-over is only for a run whose ledger "
                f"was lost. Continue the run with `tally resume {run_dir}`"
            )
        return
    if not started:
        return
    if not start_over:
        left = sorted(p.name for p in run_dir.iterdir() if p.name != path.name)
        raise LedgerError(
            f"{run_dir}: the ledger is lost ({lost_description(path)}), but the run directory "
            f"shows a run was started here (left: {', '.join(left) or 'nothing'}). Continuing "
            "would send every planned call again. Restore ledger.sqlite (and its -wal file) "
            "from a copy, or start this run again from nothing with --start-over "
            f"(`tally resume {run_dir} --start-over`)"
        )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for name in (path.name, *(path.name + s for s in SIDECARS)):
        remains = run_dir / name
        if remains.exists():
            remains.rename(run_dir / f"{name}.lost-{stamp}")


def _prepare(conn: sqlite3.Connection, path: Path) -> tuple[dict[str, int], dict[str, str], int]:
    """Check, configure and migrate the ledger; its writer's seqs, chain heads and `ev` (one job
    on the connection's thread)."""
    _check_is_ledger(conn, path)
    _configure(conn)
    _migrate(conn, path)
    return _writer_state(conn)


def _check_is_ledger(conn: sqlite3.Connection, path: Path) -> None:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if names and "migrations" not in names:
        raise LedgerError(
            f"{path} is an SQLite database but not an evaltally ledger (tables: "
            f"{', '.join(sorted(names)[:5])}); it was left untouched. Use another run directory."
        )


def _configure(conn: sqlite3.Connection) -> None:
    # WAL: readers (status) never block the writer. synchronous=NORMAL: a commit survives a
    # process kill (the OS has the WAL pages); only a power cut can lose the last commits.
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA busy_timeout = 5000")
    # call ids are random hex, so index inserts land all over the B-tree; a 64 MiB page cache
    # keeps a 1M-call plan's indexes mostly in memory instead of re-reading pages per insert.
    conn.execute("PRAGMA cache_size = -65536")


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute(MIGRATIONS_TABLE)
    applied = {r[0] for r in conn.execute("SELECT version FROM migrations")}
    if applied and max(applied) > SCHEMA_VERSION:
        raise LedgerError(
            f"{path} was written by a newer evaltally (schema version {max(applied)}, this "
            f"version knows {SCHEMA_VERSION}); upgrade evaltally to use this run"
        )
    for m in MIGRATIONS:
        if m.version not in applied:
            atomically(conn, _apply, m)


def _apply(conn: sqlite3.Connection, m: Migration) -> None:
    for stmt in m.statements:
        conn.execute(stmt)
    conn.execute(
        "INSERT INTO migrations (version, name, applied_at) VALUES (?, ?, ?)",
        (m.version, m.name, time.time()),
    )


def _writer_state(conn: sqlite3.Connection) -> tuple[dict[str, int], dict[str, str], int]:
    seqs: dict[str, int] = {}
    heads: dict[str, str] = {}
    for table in CHAINED_TABLES:
        last = f"SELECT seq, row_hash FROM {table} ORDER BY seq DESC LIMIT 1"
        row = conn.execute(last).fetchone()
        seqs[table], heads[table] = (int(row[0]), str(row[1])) if row else (0, "")
    ev = 0
    for table in ("attempts", "outcomes", "verifications"):
        row = conn.execute(f"SELECT max(ev) FROM {table}").fetchone()
        ev = max(ev, int(row[0] or 0) if row else 0)
    return seqs, heads, ev
