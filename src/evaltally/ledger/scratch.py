"""A scratch store: JSON objects by key, kept out of the process's memory (not the ledger).

For data read once at the start and looked up per call for the whole run, such as a `prompts`
benchmark's items: as a dict of parsed objects they cost about 630 bytes per small item (a
1,000,000-item file held 630 MB for the whole run, most of a fresh run's memory at that size;
docs/performance.md, issue 30). Here each object is its JSON in a private temporary SQLite
database: SQLite keeps it in memory up to a bounded page cache and spills the rest to a
temporary file it deletes itself, so the process holds about the same memory for ten objects
or ten million. An object is read back by key (a few microseconds next to a call's own cost).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

PAGE = 2000
"""Objects read at a time when iterating (planning reads every item, in file order)."""
CACHE_KIB = 8192
"""The database's page cache: what it holds in memory before spilling to its temporary file."""


class ScratchStore(Mapping[str, dict[str, Any]]):
    """Key -> JSON object, in the order added. Every read returns a new dict (the stored
    object cannot be changed through it)."""

    def __init__(self) -> None:
        # "" = a private temporary database; it may be read from a worker thread.
        self._db = sqlite3.connect("", check_same_thread=False, isolation_level=None)
        self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute(
            "CREATE TABLE objects (n INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, body BLOB)"
        )
        self._lock = threading.Lock()
        self._count = 0

    def add(self, key: str, value: dict[str, Any]) -> bool:
        """Keep `value` under `key`; False (nothing kept) when `key` is already here."""
        body = orjson.dumps(value)
        with self._lock:
            try:
                self._db.execute("INSERT INTO objects (name, body) VALUES (?, ?)", (key, body))
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

    def __getitem__(self, key: str) -> dict[str, Any]:
        with self._lock:
            row = self._db.execute("SELECT body FROM objects WHERE name = ?", (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        value: dict[str, Any] = orjson.loads(row[0])
        return value

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        with self._lock:
            row = self._db.execute("SELECT 1 FROM objects WHERE name = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        for key, _ in self._pages():
            yield key

    def pairs(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(key, object) in the order added, read a page at a time (Mapping.items would read
        each object by its key)."""
        for key, body in self._pages():
            yield key, orjson.loads(body)

    def _pages(self) -> Iterator[tuple[str, bytes]]:
        after = 0
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT n, name, body FROM objects WHERE n > ? ORDER BY n LIMIT ?",
                    (after, PAGE),
                ).fetchall()
            for _, key, body in rows:
                yield key, body
            if len(rows) < PAGE:
                return
            after = rows[-1][0]
