"""`tally status`: counts by each planned call's latest outcome, overall, per model (lane) and
per benchmark. Read-only; works while a run is live (WAL readers never block the writer)."""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evaltally.ledger.batch_status import batch_summary
from evaltally.ledger.current import CURRENT_OUTCOME, PLANNED
from evaltally.ledger.files import connect_ro, ledger_path, translate
from evaltally.ledger.lock import lock_holder
from evaltally.ledger.supersede import supersessions
from evaltally.ledger.usage import FIELDS, sql_total


@dataclass(slots=True)
class StatusCounts:
    planned: int = 0
    ok: int = 0
    parse_error: int = 0
    failed: int = 0
    blocked: int = 0
    unfinished: int = 0
    """Planned calls without any outcome yet."""

    @property
    def final(self) -> int:
        return self.ok + self.parse_error

    def add(self, status: str, n: int) -> None:
        setattr(self, status, getattr(self, status) + n)
        self.planned += n


@dataclass(slots=True)
class RunStatus:
    run_dir: str
    schema_version: int
    overall: StatusCounts = field(default_factory=StatusCounts)
    by_model: dict[str, StatusCounts] = field(default_factory=dict)
    by_benchmark: dict[str, StatusCounts] = field(default_factory=dict)
    by_model_benchmark: dict[str, dict[str, StatusCounts]] = field(default_factory=dict)
    """model -> benchmark -> counts (the cells of the two breakdowns above)."""
    attempts: int = 0
    """HTTP attempts started, across all sessions."""
    retried_attempts: int = 0
    """Attempts with attempt number > 1."""
    interrupted_attempts: int = 0
    """Attempts cut off by a killed process (closed by mark_interrupted on resume)."""
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    """Token sums over every outcome row (what was spent, including failed calls); each value
    bounded to 0..2^40 (ledger/usage.py)."""
    sessions: int = 0
    live: str | None = None
    """Who drives the run right now (pid, start, command), or None."""
    batches: list[dict[str, Any]] = field(default_factory=list)
    """Every batch of a batch-mode model: state and counts (ledger/batch_status.py)."""
    rounds: list[dict[str, Any]] = field(default_factory=list)
    """Per model and round: batches, requests, share answered, wall time."""
    lane_limits: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Lane -> the rates it adopted (`rpm`, `tpm`, per minute) and the limits the provider
    last advertised (`advertised`: {requests|tokens: [limit, window_s]}), as the latest
    session recorded them."""
    superseded: list[dict[str, Any]] = field(default_factory=list)
    """Every replacement (`tally run --replace-model`): model, session, at, calls, chains,
    changes, command. Superseded calls are in none of the counts above."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_status(run_dir: Path, *, probe_lock: bool = True) -> RunStatus:
    """`probe_lock=False` leaves `live` unset: the probe briefly takes the run lock, which a
    reader polling every few seconds (`tally view`) must never do while a writer may start."""
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    try:
        return _status(conn, Path(run_dir), probe_lock)
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the run status") from exc
    finally:
        conn.close()


def _status(conn: sqlite3.Connection, run_dir: Path, probe_lock: bool) -> RunStatus:
    version = conn.execute("SELECT coalesce(max(version), 0) FROM migrations").fetchone()[0]
    st = RunStatus(run_dir=str(run_dir), schema_version=int(version))
    rows = conn.execute(
        "SELECT p.model, p.benchmark, coalesce(o.status, 'unfinished'), count(*)"
        f" FROM {PLANNED} p {CURRENT_OUTCOME} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    )
    for model, bench, status, n in rows:
        st.overall.add(status, n)
        st.by_model.setdefault(model, StatusCounts()).add(status, n)
        st.by_benchmark.setdefault(bench, StatusCounts()).add(status, n)
        st.by_model_benchmark.setdefault(model, {}).setdefault(bench, StatusCounts()).add(status, n)
    st.attempts, st.retried_attempts, st.interrupted_attempts = conn.execute(
        "SELECT coalesce(sum(kind = 'start'), 0), coalesce(sum(kind = 'start' AND attempt > 1), 0),"
        " coalesce(sum(kind = 'interrupted'), 0) FROM attempts"
    ).fetchone()
    sums = conn.execute(
        f"SELECT {', '.join(sql_total(f) for f in FIELDS)} FROM outcomes"
    ).fetchone()
    st.input_tokens, st.output_tokens, st.reasoning_tokens, st.cached_tokens = map(int, sums)
    st.sessions = conn.execute("SELECT count(*) FROM sessions WHERE kind = 'start'").fetchone()[0]
    st.live = lock_holder(run_dir) if probe_lock else None
    for key, value in conn.execute(
        "SELECT key, value_json FROM meta WHERE key LIKE ? ORDER BY seq", (LANE_RATE_PREFIX + "%",)
    ):
        st.lane_limits[key.removeprefix(LANE_RATE_PREFIX)] = orjson.loads(value)
    st.superseded = [s.as_dict() for s in supersessions(conn)]
    batches, rounds = batch_summary(conn)
    st.batches = [asdict(b) for b in batches]
    st.rounds = [r.as_dict() for r in rounds]
    return st


LANE_RATE_PREFIX = "lane_rate:"
"""Meta key prefix of what a lane learned of its limits (one row per lane and session; the
latest row wins): run/session.py writes them, the next session and `tally status` read them."""


def latest_meta(run_dir: Path, key: str) -> Any:
    """The newest value recorded under `key` in the run's meta table, or None."""
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    try:
        row = conn.execute(
            "SELECT value_json FROM meta WHERE key = ? ORDER BY seq DESC LIMIT 1", (key,)
        ).fetchone()
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the run's meta") from exc
    finally:
        conn.close()
    return None if row is None else orjson.loads(row[0])


@dataclass(slots=True)
class LaneAttempts:
    """HTTP attempts of one model's lane, across all sessions."""

    attempts: int = 0
    retried: int = 0
    """Attempts with attempt number > 1."""
    rate_limited: int = 0
    """Attempts the provider answered with HTTP 429."""
    interrupted: int = 0


def attempts_by_model(run_dir: Path) -> dict[str, LaneAttempts]:
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    try:
        rows = conn.execute(
            "SELECT p.model, coalesce(sum(a.kind = 'start'), 0),"
            " coalesce(sum(a.kind = 'start' AND a.attempt > 1), 0),"
            " coalesce(sum(a.kind = 'end' AND a.http_status = 429), 0),"
            " coalesce(sum(a.kind = 'interrupted'), 0)"
            " FROM attempts a JOIN planned p ON p.call_id = a.call_id GROUP BY p.model"
        ).fetchall()
    except sqlite3.Error as exc:
        raise translate(exc, path, "count the attempts") from exc
    finally:
        conn.close()
    return {model: LaneAttempts(*counts) for model, *counts in rows}
