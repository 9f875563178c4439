"""The single writer: one asyncio task owning the aiosqlite connection.

Event methods only append to an in-memory list (no await, no disk), so thousands of events per
second never wait on the disk. The task commits whatever has accumulated every `interval`
seconds, or at once when `max_rows` are waiting or someone awaits flush(). A kill -9 therefore
loses at most the rows not yet committed: the open batch.

The writer also owns the per-table sequence numbers and hash-chain heads, which is only sound
because exactly one process (the lock holder) and one task write the ledger. Rows are numbered
and chained inside `atomic()`, which puts seqs, heads and `ev` back when the transaction fails:
a failed commit (disk full) leaves the writer exactly as the database is, so a later checkpoint
can only name committed rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite

from evaltally.errors import LedgerError
from evaltally.ledger import chain
from evaltally.ledger.files import write_failure
from evaltally.ledger.schema import BLOB_POSITIONS, CHAINED_TABLES, HASHED_COLUMNS, insert_sql
from evaltally.records import canonical_json

_WITH_EV = frozenset({"attempts", "outcomes", "verifications"})
Row = tuple[Any, ...]

MAX_PARAMETERS = 999
"""Parameters per statement: SQLite's smallest compiled-in cap (newer builds allow 32766)."""


def _statements(table: str, rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """`rows` of `table` (complete rows: hashed columns, then row_hash) as INSERTs of as many
    rows to a statement as MAX_PARAMETERS allows. sqlite3 lets go of the GIL around each
    statement step: with one row to a statement the insert thread and the planner took turns
    row by row instead of working side by side (a 1M-call plan write: a median of 13.4 s, then
    11.2 s). For the events of a run at 0 ms the difference stayed within the machine's noise
    (docs/performance.md)."""
    per = MAX_PARAMETERS // (len(HASHED_COLUMNS[table]) + 1)
    whole = len(rows) - len(rows) % per
    out: list[tuple[str, list[Row]]] = []
    if whole:
        groups = [tuple(itertools.chain(*rows[i : i + per])) for i in range(0, whole, per)]
        out.append((insert_sql(table, per), groups))
    if whole < len(rows):
        out.append((insert_sql(table, len(rows) - whole), [tuple(itertools.chain(*rows[whole:]))]))
    return out


async def insert_rows(db: aiosqlite.Connection, table: str, rows: list[Row]) -> None:
    """`rows` of `table`, inserted in the open transaction of `db`."""
    for sql, groups in _statements(table, rows):
        await db.executemany(sql, groups)


def _commit_on_thread(conn: sqlite3.Connection, rows: dict[str, list[Row]]) -> None:
    """One batch's whole transaction, run on the connection's own thread."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table, batch in rows.items():
            for sql, groups in _statements(table, batch):
                conn.executemany(sql, groups)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


@contextlib.asynccontextmanager
async def transaction(db: aiosqlite.Connection) -> AsyncIterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any failure."""
    await db.execute("BEGIN IMMEDIATE")
    try:
        yield
        await db.execute("COMMIT")
    except BaseException:
        # After SQLITE_FULL or an I/O error SQLite may already have rolled back; a ROLLBACK
        # then fails with "no transaction is active" and would hide the real cause.
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                await db.execute("ROLLBACK")
        raise


class Writer:
    def __init__(
        self,
        db: aiosqlite.Connection,
        path: Path,
        *,
        seqs: dict[str, int],
        heads: dict[str, str],
        ev: int,
        interval: float = 0.03,
        max_rows: int = 2000,
        checkpoint_every: float = 60.0,
    ) -> None:
        self.db = db
        self.path = path
        self.session = 0
        self.seqs = seqs
        self.heads = heads
        self.ev = ev
        # Serializes multi-statement transactions on the one connection (writer batches,
        # reconcile_plan, queries that must not interleave with an open batch).
        self.lock = asyncio.Lock()
        self._interval = interval
        self._max_rows = max_rows
        self._checkpoint_every = checkpoint_every
        self._last_checkpoint = time.monotonic()
        self._items: list[tuple[str, Row] | asyncio.Future[None]] = []
        self._wake = asyncio.Event()
        self._urgent = asyncio.Event()
        self._closing = False
        self._failure: LedgerError | None = None
        self._task: asyncio.Task[None] | None = None

    # -- row construction -------------------------------------------------------------------

    def make_row(self, table: str, rest: Row) -> Row:
        """Assign seq (and the global event order `ev`), chain the hash, advance the head."""
        seq = self.seqs[table] + 1
        if table in _WITH_EV:
            self.ev += 1
            values: Row = (seq, self.ev, self.session, *rest)
        else:
            values = (seq, self.session, *rest)
        digest = chain.row_hash(self.heads[table], values, BLOB_POSITIONS[table])
        self.seqs[table] = seq
        self.heads[table] = digest
        return (*values, digest)

    def checkpoint_row(self, reason: str) -> Row:
        heads = {t: [self.seqs[t], self.heads[t]] for t in CHAINED_TABLES if t != "checkpoints"}
        self._last_checkpoint = time.monotonic()
        return self.make_row("checkpoints", (reason, time.time(), canonical_json(heads).decode()))

    @contextlib.asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        """One transaction on the writer's connection. Make rows (make_row, checkpoint_row)
        inside it: if it fails, the database and the writer's seqs, heads and ev are both as
        they were before it began."""
        async with self._restoring(), transaction(self.db):
            yield

    @contextlib.asynccontextmanager
    async def _restoring(self) -> AsyncIterator[None]:
        """Hold the lock; on failure put seqs, heads and ev back as they were."""
        async with self.lock:
            seqs, heads, ev = dict(self.seqs), dict(self.heads), self.ev
            try:
                yield
            except BaseException:
                self.seqs, self.heads, self.ev = seqs, heads, ev
                raise

    async def insert(self, rows: dict[str, list[Row]]) -> None:
        for table, batch in rows.items():
            await insert_rows(self.db, table, batch)

    async def commit(self, rows: dict[str, list[Row]]) -> None:
        """`rows` in one transaction of their own, in one hand-off to the connection's thread:
        statement by statement (BEGIN, each INSERT, COMMIT) a batch cost five or more trips
        between the event loop and that thread, and with record before send the run makes
        one batch per few calls (docs/performance.md)."""
        # aiosqlite's own way to run a function on its thread (what its public methods call);
        # it has no public one for a whole transaction.
        await self.db._execute(_commit_on_thread, self.db._conn, rows)  # type: ignore[no-untyped-call]

    # -- the queue --------------------------------------------------------------------------

    @property
    def failed(self) -> bool:
        """A commit failed: nothing more is recorded by this process."""
        return self._failure is not None

    def check(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._closing:
            raise LedgerError(f"{self.path}: the ledger is closed; no more events can be recorded")

    def enqueue(self, table: str, rest: Row) -> None:
        self.check()
        self._items.append((table, rest))
        self._wake.set()
        if len(self._items) >= self._max_rows:
            self._urgent.set()

    @property
    def backlog(self) -> int:
        """Events enqueued and not yet handed to SQLite."""
        return len(self._items)

    async def flush(self) -> None:
        self.check()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._items.append(fut)
        self._wake.set()
        self._urgent.set()
        await fut

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"ledger-writer {self.path}")

    async def stop(self) -> None:
        """Drain everything queued, then end the task. Raises the writer's failure, if any."""
        self._closing = True
        self._wake.set()
        self._urgent.set()
        if self._task is not None:
            await self._task
        if self._failure is not None:
            raise self._failure

    async def _run(self) -> None:
        try:
            await self._loop()
        except BaseException as exc:
            # A bug or a cancelled task must not leave flush() waiting forever.
            if self._failure is None:
                self._failure = LedgerError(
                    f"{self.path}: the ledger writer stopped ({exc!r}); events after the last "
                    "commit were not recorded; `tally resume` continues from the ledger"
                )
            for item in self._items:
                if isinstance(item, asyncio.Future) and not item.done():
                    item.set_exception(self._failure)
            self._items = []
            raise

    def _batch(self, events: list[tuple[str, Row]]) -> dict[str, list[Row]]:
        rows: dict[str, list[Row]] = {}
        for table, rest in events:
            rows.setdefault(table, []).append(self.make_row(table, rest))
        if time.monotonic() - self._last_checkpoint >= self._checkpoint_every:
            rows.setdefault("checkpoints", []).append(self.checkpoint_row("periodic"))
        return rows

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            if not self._urgent.is_set() and not self._closing:
                # Let a batch accumulate, unless it is full or someone waits on flush().
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._interval):
                        await self._urgent.wait()
            self._wake.clear()
            self._urgent.clear()
            items, self._items = self._items, []
            await self._write(items)
            if self._closing and not self._items:
                return

    async def _write(self, items: list[tuple[str, Row] | asyncio.Future[None]]) -> None:
        futures = [i for i in items if isinstance(i, asyncio.Future)]
        events = [i for i in items if not isinstance(i, asyncio.Future)]
        if self._failure is None and events:
            try:
                async with self._restoring():
                    await self.commit(self._batch(events))
            except Exception as exc:  # every failure must reach the runner, not vanish
                self._failure = write_failure(exc, self.path, "record events")
        for fut in futures:
            if fut.done():
                continue
            if self._failure is not None:
                fut.set_exception(self._failure)
            else:
                fut.set_result(None)
