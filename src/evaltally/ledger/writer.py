"""The single writer: the ledger's per-table sequence numbers, hash chains and event batches.

Event methods only append to an in-memory list (no await, no disk), so thousands of events per
second never wait on the disk. The open batch is committed every `interval` seconds, at once
when `max_rows` are waiting, or, when someone awaits flush(), GROUP_WINDOW_S after the first
waiter or the end of the commit before (group commit: every waiter joins the same next batch).
The batching runs in event-loop callbacks, not a task of its own. A batch of up to INLINE_ROWS
rows is committed on the loop; a larger one goes to the connection's thread as one job
(connection.py says why).
A kill -9 therefore loses at most the rows not yet committed: the open batch.

The writer also owns the per-table sequence numbers and hash-chain heads, which is only sound
because exactly one process (the lock holder) writes the ledger and rows are made on the event
loop only, one batch or one `atomic()` block at a time. Rows are numbered and chained just
before their transaction, which puts seqs, heads and `ev` back when it fails: a failed commit
(disk full) leaves the writer exactly as the database is, so a later checkpoint can only name
committed rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from evaltally.errors import LedgerError
from evaltally.ledger import chain
from evaltally.ledger.connection import WriteConnection
from evaltally.ledger.files import write_failure
from evaltally.ledger.schema import BLOB_POSITIONS, CHAINED_TABLES, HASHED_COLUMNS, insert_sql
from evaltally.records import canonical_json

_WITH_EV = frozenset({"attempts", "outcomes", "verifications"})
Row = tuple[Any, ...]
Rows = dict[str, list[Row]]
_Item = tuple[str, Row] | asyncio.Future[None]

INLINE_ROWS = 256
"""The largest batch committed on the event loop (a few dozen calls' rows: well under a
millisecond); a larger one is committed on the connection's thread."""
GROUP_WINDOW_S = 0.0005
"""How long a batch someone waits for stays open for more waiters. With `call_soon` instead,
a run at 0 ms latency committed every loop step, a few calls' rows each: 10,000 calls made
3,700-5,600 commits, a fifth of the loop's CPU; from 0.3 ms to 5 ms the process's CPU was 15-30 %
lower, flat within the noise (docs/performance.md, issue 30 item 2). Half a millisecond is what each
request may wait: 0.25 % of a 200 ms answer. A lane's in-flight window reads latency from when a
request left (runner/lane.py, `Ticket.left_at`): read from before this wait, it let more out
at a first 429."""
CHECKPOINT_ROWS = 5000
"""Rows committed between two WAL checkpoints on the connection's thread."""

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


def insert_rows(conn: sqlite3.Connection, rows: Rows) -> None:
    """`rows` (table -> complete rows), inserted in the open transaction of `conn`."""
    for table, batch in rows.items():
        for sql, groups in _statements(table, batch):
            conn.executemany(sql, groups)


def _rollback(conn: sqlite3.Connection) -> None:
    # After SQLITE_FULL or an I/O error SQLite may already have rolled back; a ROLLBACK then
    # fails with "no transaction is active" and would hide the real cause.
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def atomically(conn: sqlite3.Connection, fn: Callable[..., None], *args: Any) -> None:
    """`fn(conn, *args)` in a transaction of its own, rolled back on any failure (run on the
    connection's thread)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        fn(conn, *args)
        conn.execute("COMMIT")
    except BaseException:
        _rollback(conn)
        raise


def commit_rows(conn: sqlite3.Connection, rows: Rows) -> None:
    """One batch's whole transaction."""
    atomically(conn, insert_rows, rows)


@contextlib.asynccontextmanager
async def transaction(db: WriteConnection) -> AsyncIterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any failure."""
    await db.execute("BEGIN IMMEDIATE")
    try:
        yield
        await db.execute("COMMIT")
    except BaseException:
        await db.run(_rollback)
        raise


class Writer:
    def __init__(
        self,
        db: WriteConnection,
        *,
        seqs: dict[str, int],
        heads: dict[str, str],
        ev: int,
        interval: float = 0.03,
        max_rows: int = 2000,
        checkpoint_every: float = 60.0,
    ) -> None:
        self.db = db
        self.path = db.path
        self.session = 0
        self.seqs = seqs
        self.heads = heads
        self.ev = ev
        # Held by atomic() blocks (open, the plan, close): no batch starts while one is open.
        self.lock = asyncio.Lock()
        self._loop = asyncio.get_running_loop()
        self._interval = interval
        self._max_rows = max_rows
        self._checkpoint_every = checkpoint_every
        self._last_checkpoint = time.monotonic()
        self._items: list[_Item] = []
        self._timer: asyncio.TimerHandle | None = None
        self._kicked = False
        self._urgent = False
        """Someone waits on the open batch (flush), or it is full: it goes without delay."""
        self._busy = False
        """A batch is on the connection's thread."""
        self._idle: list[asyncio.Future[None]] = []
        """Waiting for the batch on the thread to end (atomic(), stop())."""
        self._closing = False
        self._failure: LedgerError | None = None
        self._uncheckpointed = 0

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

    def _state(self) -> tuple[dict[str, int], dict[str, str], int]:
        return dict(self.seqs), dict(self.heads), self.ev

    def _restore(self, state: tuple[dict[str, int], dict[str, str], int]) -> None:
        self.seqs, self.heads, self.ev = state

    @contextlib.asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        """One transaction on the writer's connection, after the batch on its thread (if any)
        and before the next. Make rows (make_row, checkpoint_row) inside it: if it fails, the
        database and the writer's seqs, heads and ev are both as they were before it began."""
        async with self.lock:
            while self._busy:
                await self._wait_idle()
            state = self._state()
            try:
                async with transaction(self.db):
                    yield
            except BaseException:
                self._restore(state)
                raise
            finally:
                self._kick_if_waiting()

    async def insert(self, rows: Rows) -> None:
        """`rows` in the transaction of the atomic() block that made them."""
        await self.db.run(insert_rows, rows)

    def _wait_idle(self) -> asyncio.Future[None]:
        fut = self._loop.create_future()
        self._idle.append(fut)
        return fut

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
        if len(self._items) >= self._max_rows:
            self._urgent = True
            self._kick()
        elif self._timer is None and not self._busy:
            self._timer = self._loop.call_later(self._interval, self._send)

    @property
    def backlog(self) -> int:
        """Events enqueued and not yet handed to SQLite."""
        return len(self._items)

    async def flush(self) -> None:
        """Wait until everything enqueued so far is committed."""
        self.check()
        fut: asyncio.Future[None] = self._loop.create_future()
        self._items.append(fut)
        self._urgent = True
        self._kick()
        await fut

    def _kick(self) -> None:
        """Send the open batch GROUP_WINDOW_S from now, so every caller until then joins it
        (or, with a batch on the thread, that long after that batch is committed)."""
        if not self._kicked and not self._busy:
            self._kicked = True
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_later(GROUP_WINDOW_S, self._send)

    def _kick_if_waiting(self) -> None:
        if self._urgent or self._closing:
            self._kick()
        elif self._items and self._timer is None:
            self._timer = self._loop.call_later(self._interval, self._send)

    async def stop(self) -> None:
        """Commit everything queued; refuse further events. Raises the writer's failure, if
        any."""
        if not self._closing:
            self._closing = True
            self._kick()
        while self._busy or self._items:
            await self._wait_idle()
        if self._failure is not None:
            raise self._failure

    def _batch(self, events: list[tuple[str, Row]]) -> Rows:
        rows: Rows = {}
        for table, rest in events:
            rows.setdefault(table, []).append(self.make_row(table, rest))
        if time.monotonic() - self._last_checkpoint >= self._checkpoint_every:
            rows.setdefault("checkpoints", []).append(self.checkpoint_row("periodic"))
        return rows

    def _send(self) -> None:
        """Hand the open batch to the connection's thread (an event-loop callback)."""
        self._kicked = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._busy or self.lock.locked() or not self._items:
            return  # the batch on the thread, or the atomic() block, sends it when it ends
        items, self._items = self._items, []
        self._urgent = False
        futures = [i for i in items if isinstance(i, asyncio.Future)]
        events = [i for i in items if not isinstance(i, asyncio.Future)]
        if self._failure is None and events:
            state = self._state()
            try:
                rows = self._batch(events)
            except Exception as exc:  # a bug must fail the run, not leave flush() waiting
                self._restore(state)
                self._failure = LedgerError(
                    f"{self.path}: the ledger writer stopped ({exc!r}); events after the last "
                    "commit were not recorded; `tally resume` continues from the ledger"
                )
            else:
                self._commit(rows, futures, state)
                return
        self._settle(futures)
        self._wake_idle()

    def _commit(
        self,
        rows: Rows,
        futures: list[asyncio.Future[None]],
        state: tuple[dict[str, int], dict[str, str], int],
    ) -> None:
        count = sum(map(len, rows.values()))
        self._uncheckpointed += count
        if self._uncheckpointed >= CHECKPOINT_ROWS:
            self._uncheckpointed = 0
            self.db.checkpoint()
        if count > INLINE_ROWS or not self.db.idle:
            self._busy = True
            self.db.submit(commit_rows, (rows,), lambda _, e: self._sent(e, futures, state))
            return
        try:
            self.db.inline(commit_rows, rows)
        except BaseException as exc:  # rolled back: the writer goes back to match the file
            self._sent(exc, futures, state)
            if not isinstance(exc, Exception):
                raise  # a second Ctrl-C: the run ends here, with nothing more recorded
        else:
            self._sent(None, futures, state)

    def _sent(
        self,
        error: BaseException | None,
        futures: list[asyncio.Future[None]],
        state: tuple[dict[str, int], dict[str, str], int],
    ) -> None:
        """The batch's commit ended (an event-loop callback)."""
        self._busy = False
        if error is not None:
            self._restore(state)
            if self._failure is None:
                self._failure = write_failure(error, self.path, "record events")
        self._settle(futures)
        self._wake_idle()
        if not self.lock.locked():
            self._kick_if_waiting()

    def _wake_idle(self) -> None:
        idle, self._idle = self._idle, []
        for fut in idle:
            if not fut.done():
                fut.set_result(None)

    def _settle(self, futures: list[asyncio.Future[None]]) -> None:
        for fut in futures:
            if fut.done():
                continue
            if self._failure is not None:
                fut.set_exception(self._failure)
            else:
                fut.set_result(None)
