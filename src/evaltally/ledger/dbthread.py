"""The ledger's one write connection, on a thread of its own.

Every statement of the writer's connection runs on one thread with the standard `sqlite3`
module, in the order it was asked for. A job costs one hand-off each way: a put on the
thread's queue, and one `call_soon_threadsafe` back to the event loop with its result. The
writer (writer.py) hands over a whole batch's transaction as one job, so a commit costs the
loop those two steps and nothing per row; SQLite lets go of the GIL while it works, so the loop
keeps running meanwhile.

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


class DbThread:
    """One thread owning one sqlite3 connection. Create with `await DbThread.open(path)`."""

    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop) -> None:
        self.path = path
        self._loop = loop
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._conn: sqlite3.Connection | None = None
        self._thread = threading.Thread(target=self._serve, name=f"ledger {path}", daemon=True)

    @classmethod
    async def open(cls, path: Path) -> DbThread:
        """Start the thread and connect (autocommit: transactions are explicit)."""
        db = cls(path, asyncio.get_running_loop())
        db._thread.start()
        await db.run(db._connect)
        return db

    def _connect(self, _conn: sqlite3.Connection | None) -> None:
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)

    def submit(self, fn: Callable[..., Any], args: tuple[Any, ...], done: Done) -> None:
        """Run `fn(connection, *args)` on the thread after every job submitted before it, then
        `done(result, error)` on the loop. Never blocks the loop."""
        self._jobs.put((fn, args, done))

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

    async def close(self) -> None:
        """Close the connection and end the thread (after every job already submitted)."""
        if not self._thread.is_alive():
            return
        await self.run(_close)
        self._jobs.put(None)
        await asyncio.to_thread(self._thread.join)

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


def _close(conn: sqlite3.Connection | None) -> None:
    if conn is not None:
        conn.close()
