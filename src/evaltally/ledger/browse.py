"""The reads `tally view` makes of a ledger besides the calls page (calls_page.py): one call's
attempts, outcome history and chain, the chain's earlier final answers, the plan's cells, the
live session, and how many calls finished lately. The view shapes them; the SQL stays here.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from evaltally.ledger.current import CURRENT_OUTCOME, PLANNED, join_current
from evaltally.ledger.files import connect_ro, ledger_path, translate

Row = tuple[Any, ...]


def outcome_history(conn: sqlite3.Connection, call_id: str) -> list[Row]:
    """(status, reason, at, attempts) of every outcome row of the call, oldest first."""
    return conn.execute(
        "SELECT status, reason, at, attempts FROM outcomes WHERE call_id = ? ORDER BY seq",
        (call_id,),
    ).fetchall()


def chain_steps(conn: sqlite3.Connection, chain_id: str) -> list[Row]:
    """(call_id, step, current status or None) of each call of the chain, in step order."""
    return conn.execute(
        f"SELECT p.call_id, p.step, o.status FROM planned p {CURRENT_OUTCOME}"
        " WHERE p.chain_id = ? ORDER BY p.step",
        (chain_id,),
    ).fetchall()


def attempt_rows(conn: sqlite3.Connection, call_id: str) -> list[Row]:
    """Every attempt row of the call (start, end or interrupted), in the order recorded."""
    return conn.execute(
        "SELECT attempt, kind, at, request_hash, request_body, http_status, error_class,"
        " error_detail, retry_after_s, response_body, input_tokens, output_tokens,"
        " reasoning_tokens, cached_tokens, latency_ms, request_id"
        " FROM attempts WHERE call_id = ? ORDER BY seq",
        (call_id,),
    ).fetchall()


def final_answers_before(conn: sqlite3.Connection, chain_id: str, step: int) -> list[Row]:
    """(step, status, raw_text, parsed_json) of the final current outcomes of the chain's steps
    before `step`, in step order."""
    return conn.execute(
        "SELECT p.step, f.status, f.raw_text, f.parsed_json FROM planned p"
        f" {join_current('f', final=True)}"
        " WHERE p.chain_id = ? AND p.step < ? AND f.seq IS NOT NULL ORDER BY p.step",
        (chain_id, step),
    ).fetchall()


def plan_cells(conn: sqlite3.Connection) -> list[Row]:
    """The distinct (model, benchmark, protocol) of the plan."""
    return conn.execute(f"SELECT DISTINCT model, benchmark, protocol FROM {PLANNED} p").fetchall()


def live_session(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The session driving the run now: its latest start row, if it has no end row and its
    process is alive. None for a finished run or one whose process died (kill -9)."""
    row = conn.execute(
        "SELECT session, pid, command, at FROM sessions WHERE kind = 'start'"
        " ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    session, pid, command, at = row
    ended = conn.execute(
        "SELECT 1 FROM sessions WHERE kind = 'end' AND session = ?", (session,)
    ).fetchone()
    if ended is not None or not _alive(int(pid)):
        return None
    return {"session": session, "pid": pid, "command": command, "started_at": at}


STATE_NOTES = {
    "running": "a session is driving the run now",
    "interrupted": "the last session did not close (killed, crashed or power lost): resume it "
    "with `tally resume`",
    "finished": "the last session closed",
    "planned": "no session has run yet",
}


def session_state(conn: sqlite3.Connection) -> str:
    """running (a live session), interrupted (the last session has no end row and its process
    is gone), finished (the last session closed) or planned (no session yet)."""
    row = conn.execute(
        "SELECT session, pid FROM sessions WHERE kind = 'start' ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return "planned"
    ended = conn.execute(
        "SELECT 1 FROM sessions WHERE kind = 'end' AND session = ?", (row[0],)
    ).fetchone()
    if ended is not None:
        return "finished"
    return "running" if _alive(int(row[1])) else "interrupted"


def run_state(run_dir: Path) -> str:
    """`session_state` of a run directory's ledger (read-only)."""
    path = ledger_path(run_dir)
    conn = connect_ro(path)
    try:
        return session_state(conn)
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the run's sessions") from exc
    finally:
        conn.close()


def run_progress(conn: sqlite3.Connection) -> tuple[int, int]:
    """(planned calls, calls with a terminal outcome) of the run."""
    planned = conn.execute(f"SELECT count(*) FROM {PLANNED} p").fetchone()[0]
    done = conn.execute(
        "SELECT count(DISTINCT o.call_id) FROM outcomes o"
        f" JOIN {PLANNED} p ON p.call_id = o.call_id"
    ).fetchone()[0]
    return int(planned), int(done)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def finished_since(conn: sqlite3.Connection, since: float) -> int:
    """Outcome rows recorded at or after `since`. Outcome seqs have no gaps and their times
    rise with seq (one writer stamps them in order), so a binary search of a few point
    lookups replaces a scan of the whole table."""
    last = conn.execute("SELECT max(seq) FROM outcomes").fetchone()[0]
    if last is None:
        return 0
    lo, hi = 1, int(last) + 1
    while lo < hi:
        mid = (lo + hi) // 2
        row = conn.execute("SELECT at FROM outcomes WHERE seq = ?", (mid,)).fetchone()
        if row is not None and row[0] >= since:
            hi = mid
        else:
            lo = mid + 1
    return int(last) - lo + 1
