"""The ledger's one write connection: small commits on the event loop, the rest on a thread.

The standard `sqlite3` module, one connection, used by one party at a time:

- a small batch of events (the rows of a few calls) is committed on the event loop itself
  (`inline`): at 0 ms latency a run makes a commit every few calls, because a request waits for
  its start row's commit (record before send), and handing each of those to a thread cost more
  than the commit: a put that wakes the thread, the thread waiting for the GIL, a
  `call_soon_threadsafe` back (a 10,000-call run: 14,000 context switches and about a fifth of
  its CPU; docs/performance.md). Such a commit is an append to the WAL, no fsync
  (`synchronous=NORMAL`);
- everything else (opening, the plan's million rows, reads, a large batch) runs on the
  connection's thread as jobs, in the order submitted (`run`, `submit`), so the loop keeps
  running meanwhile: SQLite lets go of the GIL while it works. The loop commits inline only
  while no job is on the thread (`idle`), so the connection is never used by both at once;
- WAL checkpoints, the one step of a commit that syncs the disk, run on the same thread through
  a second connection (`checkpoint`), so they never hold up the loop nor the writer: SQLite
  runs a PASSIVE checkpoint beside a writer. The writer's own automatic checkpoint stays on as
  a backstop for a WAL the thread has not caught up with.

The thread is a daemon: a process that ends without closing its ledger (a crash, an unhandled
error) is not kept alive by it, and SQLite treats the connection as a killed process's.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Done = Callable[[Any, BaseException | None], None]
"""Called on the event loop with a job's result, or with the exception it raised."""
_Job = tuple[Callable[..., Any], tuple[Any, ...], Done]


class WriteConnection:
    """Create with `await WriteConnection.open(path)`."""

    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop) -> None:
        self.path = path
        self._loop = loop
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._conn: sqlite3.Connection | None = None
        self._checkpointer: sqlite3.Connection | None = None
        self._on_thread = 0
        """Jobs submitted whose `done` has not run yet: the thread may be using the connection."""
        self._checkpointing = False
        self._thread = threading.Thread(target=self._serve, name=f"ledger {path}", daemon=True)

    @classmethod
    async def open(cls, path: Path) -> WriteConnection:
        """Start the thread and connect (autocommit: transactions are explicit)."""
        db = cls(path, asyncio.get_running_loop())
        db._thread.start()
        await db.run(db._connect)
        return db

    def _connect(self, _conn: sqlite3.Connection | None) -> None:
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)

    @property
    def idle(self) -> bool:
        """No job is on the thread: `inline` may use the connection."""
        return self._on_thread == 0

    def inline(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(connection, *args)` here, on the event loop: only while `idle`, and only for
        work as small as a few calls' rows."""
        assert self._on_thread == 0 and self._conn is not None
        return fn(self._conn, *args)

    def submit(self, fn: Callable[..., Any], args: tuple[Any, ...], done: Done) -> None:
        """Run `fn(connection, *args)` on the thread after every job submitted before it, then
        `done(result, error)` on the loop. Never blocks the loop."""
        self._on_thread += 1

        def finished(result: Any, error: BaseException | None) -> None:
            self._on_thread -= 1
            done(result, error)

        self._jobs.put((fn, args, finished))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(connection, *args)` on the thread, in order with every other job."""
        fut: asyncio.Future[T] = self._loop.create_future()
        self.submit(fn, args, lambda result, error: _settle(fut, result, error))
        return await fut

    async def execute(self, sql: str) -> None:
        """One statement that returns no rows."""
        await self.run(_execute, sql)

    async def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[Any]:
        """Every row `sql` returns."""
        return await self.run(_fetchall, sql, params)

    def checkpoint(self) -> None:
        """Copy the WAL's committed pages into the database file, on the thread, through its
        own connection (at most one at a time; a failure is left to the next one or to
        SQLite's automatic checkpoint)."""
        if self._checkpointing:
            return
        self._checkpointing = True
        self._jobs.put((self._checkpoint, (), self._checkpointed))

    def _checkpoint(self, _conn: sqlite3.Connection | None) -> None:
        if self._checkpointer is None:
            self._checkpointer = sqlite3.connect(self.path, isolation_level=None)
            self._checkpointer.execute("PRAGMA busy_timeout = 5000")
        self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _checkpointed(self, _result: Any, _error: BaseException | None) -> None:
        self._checkpointing = False

    async def close(self) -> None:
        """Close both connections and end the thread (after every job already submitted)."""
        if not self._thread.is_alive():
            return
        await self.run(self._close)
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

    def _close(self, conn: sqlite3.Connection | None) -> None:
        for each in (self._checkpointer, conn):
            if each is not None:
                each.close()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, args, done = job
            result: Any = None
            error: BaseException | None = None
            try:
                result = fn(self._conn, *args)
            except BaseException as exc:  # handed to the caller, whatever it is
                error = exc
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
                self._loop.call_soon_threadsafe(done, result, error)


def _settle(fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if fut.done():  # its waiter was cancelled
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


def _execute(conn: sqlite3.Connection, sql: str) -> None:
    conn.execute(sql)


def _fetchall(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
    return conn.execute(sql, params).fetchall()
