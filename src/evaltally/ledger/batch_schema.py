"""The batch tables (migration 4, "batch submissions"): append-only and hash-chained like every
ledger table (schema.py adds them to its lists).

    batches        one row per batch, written before anything reaches the provider: which model,
                   which round, the API shape, how many requests, the submission's size and
                   sha256 (the uploaded file, or the create request's body)
    batch_calls    the calls a batch holds, in submission order, each with the attempt number
                   its line is (the attempt's start row carries the request body and hash)
    batch_events   the batch's life, in order: planned, uploaded (file id), creating (the create
                   request is about to leave), created (provider id; also when found again after
                   a crash), state (a poll that saw a new state), downloading, closed (every
                   held attempt has its end row; nothing of this batch is pending any more)

A batch is open from `planned` until `closed`. While it is open, the attempts it holds may still
be answered: resume never marks them interrupted and never sends those calls again.
"""

from __future__ import annotations

BATCH_TABLES: tuple[str, ...] = ("batches", "batch_calls", "batch_events")

BATCH_HASHED_COLUMNS: dict[str, tuple[str, ...]] = {
    "batches": (
        "seq",
        "session",
        "batch_key",
        "model",
        "round",
        "kind",
        "requests",
        "payload_bytes",
        "payload_hash",
        "at",
    ),
    "batch_calls": ("seq", "session", "batch_key", "call_id", "attempt", "position"),
    "batch_events": (
        "seq",
        "session",
        "batch_key",
        "kind",
        "provider_id",
        "state",
        "counts_json",
        "detail",
        "at",
    ),
}

EVENT_KINDS = ("planned", "uploaded", "creating", "created", "state", "downloading", "closed")

BATCH_DDL: tuple[str, ...] = (
    "CREATE TABLE batches (seq INTEGER PRIMARY KEY, session INT NOT NULL,"
    " batch_key TEXT NOT NULL UNIQUE, model TEXT NOT NULL, round INT NOT NULL,"
    " kind TEXT NOT NULL, requests INT NOT NULL, payload_bytes INT NOT NULL,"
    " payload_hash TEXT NOT NULL, at REAL NOT NULL, row_hash TEXT NOT NULL) STRICT",
    "CREATE TABLE batch_calls (seq INTEGER PRIMARY KEY, session INT NOT NULL,"
    " batch_key TEXT NOT NULL, call_id TEXT NOT NULL, attempt INT NOT NULL,"
    " position INT NOT NULL, row_hash TEXT NOT NULL) STRICT",
    "CREATE INDEX batch_calls_call ON batch_calls (call_id, attempt)",
    "CREATE INDEX batch_calls_batch ON batch_calls (batch_key, position)",
    "CREATE TABLE batch_events (seq INTEGER PRIMARY KEY, session INT NOT NULL,"
    " batch_key TEXT NOT NULL,"
    f" kind TEXT NOT NULL CHECK (kind IN ({', '.join(repr(k) for k in EVENT_KINDS)})),"
    " provider_id TEXT, state TEXT, counts_json TEXT, detail TEXT, at REAL NOT NULL,"
    " row_hash TEXT NOT NULL) STRICT",
    "CREATE INDEX batch_events_batch ON batch_events (batch_key, kind)",
)
BATCH_INDEXES: tuple[str, ...] = ("batch_calls_call", "batch_calls_batch", "batch_events_batch")


def held_by_open_batch(alias: str) -> str:
    """SQL: the attempt row `alias` (call_id, attempt) is a line of a batch not yet closed."""
    return (
        f"EXISTS (SELECT 1 FROM batch_calls m WHERE m.call_id = {alias}.call_id"
        f" AND m.attempt = {alias}.attempt AND NOT EXISTS (SELECT 1 FROM batch_events c"
        " WHERE c.batch_key = m.batch_key AND c.kind = 'closed'))"
    )
