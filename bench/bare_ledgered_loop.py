"""The ledgered reference: bench/bare_loop.py plus what any ledgered client must write.

The bare aiohttp loop (one session, a semaphore, the same requests) plus one writer thread on
the standard `sqlite3` module, WAL, synchronous=NORMAL, fed by a queue and committing every
~30 ms: the plan rows before the first request, a row when each request leaves (its body) and a
row when each answer arrives (status, raw body, times). No hashing, no verification, no resume:
its time is what recording this traffic costs at least on this machine, the reference `tally
run` is compared to in bench/throughput.py.

--durable: record before send, as `tally run` does: a request leaves only once the batch that
holds its start row is committed, and an answer counts only once its row is committed.

Prints one JSON line: {"n", "ok", "errors", "wall_s", "rows"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import queue
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from bare_loop import chat_body, headers, loop_parser, read_items

INTERVAL_S = 0.03
SCHEMA = (
    "CREATE TABLE plan (id TEXT PRIMARY KEY, messages BLOB)",
    "CREATE TABLE sent (id TEXT, at REAL, body BLOB)",
    "CREATE TABLE answers (id TEXT, status INTEGER, body BLOB, started REAL, ended REAL)",
)
Event = tuple[str, tuple[Any, ...]] | asyncio.Future[None]


class LedgerThread:
    """One thread owning one sqlite3 connection; `put` never blocks the event loop."""

    def __init__(self, path: Path, loop: asyncio.AbstractEventLoop) -> None:
        self.path = path
        self.loop = loop
        self.rows = 0
        self._queue: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ledger", daemon=True)
        self._ready = threading.Event()
        self._thread.start()
        self._ready.wait()

    def put(self, table: str, row: tuple[Any, ...]) -> None:
        self._queue.put((table, row))

    def committed(self) -> asyncio.Future[None]:
        """Resolves once everything put before it is committed (joins the open batch)."""
        fut: asyncio.Future[None] = self.loop.create_future()
        self._queue.put(fut)
        return fut

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        for sql in SCHEMA:
            db.execute(sql)
        self._ready.set()
        done = False
        while not done:
            batch = self._take()
            done = batch[-1] is None
            self._commit(db, [i for i in batch if i is not None])
        db.close()

    def _take(self) -> list[Event | None]:
        """The next batch: what is queued, plus what arrives within INTERVAL_S unless someone
        already waits for a commit (group commit: a waiter's batch goes as soon as the previous
        commit is done, holding whatever queued up meanwhile)."""
        batch = [self._queue.get()]
        deadline = time.monotonic() + INTERVAL_S
        waited = isinstance(batch[0], asyncio.Future)
        while batch[-1] is not None:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                left = deadline - time.monotonic()
                if waited or left <= 0:
                    break
                try:
                    item = self._queue.get(timeout=left)
                except queue.Empty:
                    break
            waited = waited or isinstance(item, asyncio.Future)
            batch.append(item)
        return batch

    def _commit(self, db: sqlite3.Connection, batch: list[Event]) -> None:
        tables: dict[str, list[tuple[Any, ...]]] = {}
        waiting: list[asyncio.Future[None]] = []
        for item in batch:
            if isinstance(item, asyncio.Future):
                waiting.append(item)
            else:
                tables.setdefault(item[0], []).append(item[1])
        db.execute("BEGIN IMMEDIATE")
        for table, rows in tables.items():
            marks = ",".join("?" * len(rows[0]))
            db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
            self.rows += len(rows)
        db.execute("COMMIT")
        for fut in waiting:
            self.loop.call_soon_threadsafe(_resolve, fut)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def main(args: argparse.Namespace, items: list[dict[str, Any]], db: Path) -> dict[str, Any]:
    url = args.base_url.rstrip("/") + "/chat/completions"
    sem = asyncio.Semaphore(args.concurrency)
    answers: dict[str, str] = {}
    errors = 0
    t0 = time.perf_counter()
    ledger = LedgerThread(db, asyncio.get_running_loop())
    for item in items:
        ledger.put("plan", (item["id"], orjson.dumps(item["messages"])))
    await ledger.committed()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(item: dict[str, Any]) -> None:
            nonlocal errors
            body = chat_body(args, item)
            async with sem:
                started = time.time()
                ledger.put("sent", (item["id"], started, body))
                if args.durable:
                    await ledger.committed()
                async with session.post(url, data=body, headers=headers()) as resp:
                    raw = await resp.read()
                ledger.put("answers", (item["id"], resp.status, raw, started, time.time()))
                if args.durable:
                    await ledger.committed()
            if resp.status == 200:
                answers[item["id"]] = orjson.loads(raw)["choices"][0]["message"]["content"]
            else:
                errors += 1

        await asyncio.gather(*(one(it) for it in items))
    await asyncio.get_running_loop().run_in_executor(None, ledger.close)
    return {
        "n": len(items),
        "ok": len(answers),
        "errors": errors,
        "wall_s": time.perf_counter() - t0,
        "rows": ledger.rows,
    }


if __name__ == "__main__":
    parser = loop_parser(__doc__)
    parser.add_argument("--durable", action="store_true", help="record before send")
    parser.add_argument("--ledger", help="the SQLite file (default: a temporary one)")
    ns = parser.parse_args()
    loaded = read_items(ns.items)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(ns.ledger) if ns.ledger else Path(tmp) / "ledger.sqlite"
        print(json.dumps(asyncio.run(main(ns, loaded, path))))
