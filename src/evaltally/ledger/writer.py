"""The single writer: one asyncio task owning the aiosqlite connection.

Event methods only append to an in-memory list (no await, no disk), so thousands of events per
second never wait on the disk. The task commits whatever has accumulated every `interval`
seconds, or at once when `max_rows` are waiting or someone awaits flush(). A kill -9 therefore
loses at most the rows not yet committed: the open batch.

The writer also owns the per-table sequence numbers and hash-chain heads, which is only sound
because exactly one process (the lock holder) and one task write the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import aiosqlite

from evaltally.errors import LedgerError
from evaltally.ledger import chain
from evaltally.ledger.files import translate
from evaltally.ledger.schema import BLOB_POSITIONS, CHAINED_TABLES, insert_sql
from evaltally.records import canonical_json

_WITH_EV = frozenset({"attempts", "outcomes", "verifications"})
Row = tuple[Any, ...]


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

    def snapshot(self) -> tuple[dict[str, int], dict[str, str], int]:
        return dict(self.seqs), dict(self.heads), self.ev

    def restore(self, snap: tuple[dict[str, int], dict[str, str], int]) -> None:
        self.seqs, self.heads, self.ev = dict(snap[0]), dict(snap[1]), snap[2]

    async def insert_now(self, rows: dict[str, list[Row]]) -> None:
        """Write rows in one transaction, bypassing the queue (open/close/reconcile)."""
        async with self.lock:
            await self._commit(rows)

    async def _commit(self, rows: dict[str, list[Row]]) -> None:
        await self.db.execute("BEGIN IMMEDIATE")
        try:
            for table, batch in rows.items():
                await self.db.executemany(insert_sql(table), batch)
            await self.db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                await self.db.execute("ROLLBACK")
            raise

    # -- the queue --------------------------------------------------------------------------

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
        futures: list[asyncio.Future[None]] = []
        rows: dict[str, list[Row]] = {}
        if self._failure is None:
            for item in items:
                if isinstance(item, asyncio.Future):
                    futures.append(item)
                else:
                    rows.setdefault(item[0], []).append(self.make_row(*item))
            due = time.monotonic() - self._last_checkpoint >= self._checkpoint_every
            if rows and due:
                rows.setdefault("checkpoints", []).append(self.checkpoint_row("periodic"))
            if rows:
                try:
                    async with self.lock:
                        await self._commit(rows)
                except Exception as exc:  # every failure must reach the runner, not vanish
                    self._failure = translate(exc, self.path, "record events")
        else:
            futures = [i for i in items if isinstance(i, asyncio.Future)]
        for fut in futures:
            if fut.done():
                continue
            if self._failure is not None:
                fut.set_exception(self._failure)
            else:
                fut.set_result(None)
