"""The items of a `prompts` benchmark, kept out of the process's memory.

A dict of parsed items cost about 630 bytes per small item: a 1,000,000-item file held 630 MB
for the whole run, most of a fresh run's memory at that size (docs/performance.md, issue 30).
Here each item is its JSON in a private temporary SQLite database: SQLite keeps it in memory
up to a bounded page cache and spills the rest to a temporary file it deletes itself, so the
process holds about the same memory for ten items or ten million. An item is read back by id
when a call is rendered or scored (a few microseconds next to the call's own cost).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

PAGE = 2000
"""Items read at a time when iterating (planning reads them all, in file order)."""
CACHE_KIB = 8192
"""The database's page cache: what it holds in memory before spilling to its temporary file."""


class ItemStore(Mapping[str, dict[str, Any]]):
    """Item id -> item, in the order added. Every read returns a new dict (the stored item
    cannot be changed through it)."""

    def __init__(self) -> None:
        # "" = a private temporary database; the benchmark may be read from a worker thread.
        self._db = sqlite3.connect("", check_same_thread=False, isolation_level=None)
        self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute(
            "CREATE TABLE items (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, body BLOB)"
        )
        self._lock = threading.Lock()
        self._count = 0

    def add(self, item: dict[str, Any]) -> bool:
        """Keep `item` under its id; False (nothing kept) when that id is already here."""
        body = orjson.dumps(item)
        with self._lock:
            try:
                self._db.execute("INSERT INTO items (id, body) VALUES (?, ?)", (item["id"], body))
            except sqlite3.IntegrityError:
                return False
        self._count += 1
        return True

    @contextlib.contextmanager
    def adding(self) -> Iterator[None]:
        """`add` calls inside share one transaction (loading a file)."""
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def __getitem__(self, item_id: str) -> dict[str, Any]:
        with self._lock:
            row = self._db.execute("SELECT body FROM items WHERE id = ?", (item_id,)).fetchone()
        if row is None:
            raise KeyError(item_id)
        item: dict[str, Any] = orjson.loads(row[0])
        return item

    def __contains__(self, item_id: object) -> bool:
        if not isinstance(item_id, str):
            return False
        with self._lock:
            row = self._db.execute("SELECT 1 FROM items WHERE id = ?", (item_id,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        for item_id, _ in self._pages():
            yield item_id

    def pairs(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(id, item) in the order added, read a page at a time (Mapping.items would read
        each item by its id)."""
        for item_id, body in self._pages():
            yield item_id, orjson.loads(body)

    def _pages(self) -> Iterator[tuple[str, bytes]]:
        after = 0
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT n, id, body FROM items WHERE n > ? ORDER BY n LIMIT ?", (after, PAGE)
                ).fetchall()
            for _, item_id, body in rows:
                yield item_id, body
            if len(rows) < PAGE:
                return
            after = rows[-1][0]
