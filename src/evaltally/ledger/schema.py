"""The ledger's schema as a named, ordered list of migrations.

Each migration runs in one transaction and is recorded in `migrations`; a ledger written by a
newer evaltally (a migration this version does not know) is refused rather than guessed at.

Every ledger table is append-only, enforced by triggers, and every table except `migrations`
carries a hash chain (`row_hash`, see chain.py) over the columns listed in HASHED_COLUMNS.
`seq` is assigned by the single writer (1, 2, 3, ... without gaps) so a missing row is visible
as a gap even before the hash chain is checked.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from evaltally.ledger.batch_schema import (
    BATCH_DDL,
    BATCH_HASHED_COLUMNS,
    BATCH_INDEXES,
    BATCH_TABLES,
)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
    tables: tuple[str, ...] = ()
    """The hash-chained tables it creates (what `verify` expects once it is applied)."""
    indexes: tuple[str, ...] = ()


# Column order is the hash order: row_hash = sha256(prev_hash + canonical_json(values)).
HASHED_COLUMNS: dict[str, tuple[str, ...]] = {
    "sessions": ("seq", "session", "kind", "pid", "command", "at"),
    "meta": ("seq", "session", "key", "value_json", "at"),
    "planned": (
        "seq",
        "session",
        "call_id",
        "chain_id",
        "step",
        "model",
        "benchmark",
        "protocol",
        "item_id",
        "sample",
        "spec_json",
    ),
    "attempts": (
        "seq",
        "ev",
        "session",
        "call_id",
        "attempt",
        "kind",
        "at",
        "request_hash",
        "request_body",
        "http_status",
        "error_class",
        "error_detail",
        "retry_after_s",
        "response_body",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "cached_tokens",
        "latency_ms",
        "request_id",
    ),
    "outcomes": (
        "seq",
        "ev",
        "session",
        "call_id",
        "status",
        "raw_text",
        "parsed_json",
        "parse_path",
        "reason",
        "request_hash",
        "attempts",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "cached_tokens",
        "latency_ms",
        "at",
    ),
    "checkpoints": ("seq", "session", "reason", "at", "heads_json"),
    "verifications": (
        "seq",
        "ev",
        "session",
        "call_id",
        "status",
        "detail_json",
        "reason",
        "verifier",
        "at",
    ),
    **BATCH_HASHED_COLUMNS,
}


_BLOB_COLUMNS = frozenset({"request_body", "response_body"})
BLOB_POSITIONS: dict[str, tuple[int, ...]] = {
    table: tuple(i for i, c in enumerate(cols) if c in _BLOB_COLUMNS)
    for table, cols in HASHED_COLUMNS.items()
}


@functools.lru_cache(maxsize=256)
def insert_sql(table: str, rows: int = 1) -> str:
    """INSERT of `rows` rows (each HASHED_COLUMNS then row_hash) in one statement."""
    cols = (*HASHED_COLUMNS[table], "row_hash")
    marks = "(" + ", ".join("?" for _ in cols) + ")"
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES {', '.join([marks] * rows)}"


def _append_only(table: str) -> tuple[str, str]:
    # BEFORE triggers with RAISE(ABORT) make the database itself refuse edits, whatever client
    # writes to it; only someone who drops the triggers can edit, and the hash chain catches that.
    return (
        f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} BEGIN "
        f"SELECT RAISE(ABORT, 'ledger table {table} is append-only: UPDATE refused'); END",
        f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} BEGIN "
        f"SELECT RAISE(ABORT, 'ledger table {table} is append-only: DELETE refused'); END",
    )


def trigger_names(tables: Iterable[str]) -> list[str]:
    return [f"{t}_no_{op}" for t in tables for op in ("update", "delete")]


# Named (not inline UNIQUE) so the first, bulk plan write can drop them, insert, and rebuild them
# by sorting inside the same transaction: several times faster than 1M random B-tree inserts.
PLANNED_INDEXES: tuple[str, ...] = (
    "CREATE UNIQUE INDEX planned_call ON planned (call_id)",
    "CREATE INDEX planned_chain ON planned (chain_id, step)",
)

_USAGE_COLS = "input_tokens INT, output_tokens INT, reasoning_tokens INT, cached_tokens INT"

_INITIAL: tuple[str, ...] = (
    # migrations itself is created before any migration runs (see store.py); its triggers are here.
    "CREATE TABLE sessions (seq INTEGER PRIMARY KEY, session INT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('start', 'end')), pid INT NOT NULL,"
    " command TEXT NOT NULL, at REAL NOT NULL, row_hash TEXT NOT NULL) STRICT",
    "CREATE TABLE meta (seq INTEGER PRIMARY KEY, session INT NOT NULL, key TEXT NOT NULL,"
    " value_json TEXT NOT NULL, at REAL NOT NULL, row_hash TEXT NOT NULL) STRICT",
    "CREATE TABLE planned (seq INTEGER PRIMARY KEY, session INT NOT NULL,"
    " call_id TEXT NOT NULL, chain_id TEXT NOT NULL, step INT NOT NULL,"
    " model TEXT NOT NULL, benchmark TEXT NOT NULL, protocol TEXT NOT NULL,"
    " item_id TEXT NOT NULL, sample INT NOT NULL, spec_json TEXT NOT NULL,"
    " row_hash TEXT NOT NULL) STRICT",
    # pending_chains walks chains in step order. Export's (model, benchmark, ...) order is
    # left to SQLite's sorter at export time: a second index on long strings would slow every
    # plan write (measured in bench/ledger_scale.py) for a query that runs once per run.
    *(PLANNED_INDEXES),
    "CREATE TABLE attempts (seq INTEGER PRIMARY KEY, ev INT NOT NULL, session INT NOT NULL,"
    " call_id TEXT NOT NULL, attempt INT NOT NULL,"
    " kind TEXT NOT NULL CHECK (kind IN ('start', 'end', 'interrupted')), at REAL NOT NULL,"
    " request_hash TEXT, request_body BLOB, http_status INT, error_class TEXT,"
    f" error_detail TEXT, retry_after_s REAL, response_body BLOB, {_USAGE_COLS},"
    " latency_ms REAL, request_id TEXT, row_hash TEXT NOT NULL) STRICT",
    "CREATE INDEX attempts_call ON attempts (call_id, attempt, kind)",
    "CREATE TABLE outcomes (seq INTEGER PRIMARY KEY, ev INT NOT NULL, session INT NOT NULL,"
    " call_id TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('ok', 'parse_error', 'failed', 'blocked')),"
    " raw_text TEXT, parsed_json TEXT NOT NULL, parse_path TEXT, reason TEXT,"
    f" request_hash TEXT, attempts INT NOT NULL, {_USAGE_COLS}, latency_ms REAL,"
    " at REAL NOT NULL, row_hash TEXT NOT NULL) STRICT",
    "CREATE INDEX outcomes_call ON outcomes (call_id, status)",
    "CREATE TABLE checkpoints (seq INTEGER PRIMARY KEY, session INT NOT NULL,"
    " reason TEXT NOT NULL, at REAL NOT NULL, heads_json TEXT NOT NULL,"
    " row_hash TEXT NOT NULL) STRICT",
    *(
        stmt
        for table in (
            "migrations",
            "sessions",
            "meta",
            "planned",
            "attempts",
            "outcomes",
            "checkpoints",
        )
        for stmt in _append_only(table)
    ),
)

# A benchmark's verdict on an ok answer (benchmarks/base.py, `verification`). The latest row of
# a call is its verdict; a re-grade appends new rows and never replaces old ones.
_VERIFICATIONS: tuple[str, ...] = (
    "CREATE TABLE verifications (seq INTEGER PRIMARY KEY, ev INT NOT NULL, session INT NOT NULL,"
    " call_id TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error')),"
    " detail_json TEXT NOT NULL, reason TEXT, verifier TEXT NOT NULL, at REAL NOT NULL,"
    " row_hash TEXT NOT NULL) STRICT",
    "CREATE INDEX verifications_call ON verifications (call_id, seq)",
    *_append_only("verifications"),
)

MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " applied_at REAL NOT NULL) STRICT"
)

# Provider batch submissions (docs/batch.md): what was uploaded, which calls a batch holds, and
# every state change a poll saw.
_BATCHES: tuple[str, ...] = (
    *BATCH_DDL,
    *(stmt for table in BATCH_TABLES for stmt in _append_only(table)),
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "initial ledger tables",
        _INITIAL,
        tables=("sessions", "meta", "planned", "attempts", "outcomes", "checkpoints"),
        indexes=("planned_call", "planned_chain", "attempts_call", "outcomes_call"),
    ),
    Migration(
        2,
        "verifications",
        _VERIFICATIONS,
        tables=("verifications",),
        indexes=("verifications_call",),
    ),
    Migration(3, "batch submissions", _BATCHES, tables=BATCH_TABLES, indexes=BATCH_INDEXES),
)

SCHEMA_VERSION = MIGRATIONS[-1].version
# Tables whose rows are hash-chained, in the order checkpoints list them.
CHAINED_TABLES: tuple[str, ...] = tuple(t for m in MIGRATIONS for t in m.tables)
LEDGER_TABLES: tuple[str, ...] = ("migrations", *CHAINED_TABLES)


def applied_tables(versions: Iterable[int]) -> tuple[str, ...]:
    """The chained tables a ledger with these migrations applied has."""
    done = set(versions)
    return tuple(t for m in MIGRATIONS if m.version in done for t in m.tables)
