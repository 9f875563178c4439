"""Reading the `verifications` table: the answers still to verify, and each call's verdict.

A verdict is appended by the verification hook (runner/verification.py) after the call's ok
outcome; the latest row of a call is its verdict. Ledgers written before the table existed
(schema version 1) are upgraded in place when a run or resume opens them; until then these
reads find no table and report no verdicts.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from evaltally.ledger.current import CURRENT_OUTCOME, PLANNED
from evaltally.ledger.files import connect_ro, ledger_path, translate
from evaltally.ledger.results import ToVerify
from evaltally.records import PlannedCall


def has_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'verifications'"
    ).fetchone()
    return row is not None


def answers_to_verify(path: Path, labels: tuple[str, ...], unverified_only: bool) -> list[ToVerify]:
    if not labels:
        return []
    conn = connect_ro(path)
    try:
        marks = ",".join("?" * len(labels))
        latest = "(SELECT max(v.seq) FROM verifications v WHERE v.call_id = p.call_id)"
        rows = conn.execute(
            "SELECT p.call_id, p.chain_id, p.step, p.model, p.benchmark, p.item_id, p.sample,"
            " p.protocol, p.spec_json, o.raw_text, o.parsed_json,"
            f" (SELECT status FROM verifications WHERE seq = {latest})"
            f" FROM {PLANNED} p {CURRENT_OUTCOME}"
            f" WHERE o.status = 'ok' AND p.benchmark IN ({marks}) ORDER BY p.seq",
            labels,
        ).fetchall()
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the answers to verify") from exc
    finally:
        conn.close()
    out = []
    for cid, chain, step, model, bench, item, sample, proto, spec, raw, parsed, verdict in rows:
        if unverified_only and verdict is not None:
            continue
        call = PlannedCall(cid, chain, step, model, bench, item, sample, proto, orjson.loads(spec))
        out.append(ToVerify(call, raw, orjson.loads(parsed), verdict))
    return out


def latest_verdicts(run_dir: Path) -> dict[str, dict[str, object]]:
    """call_id -> its newest verdict `{"status", "detail", "reason", "verifier"}`, for the
    calls that have one (the export's `verification` field)."""
    path = ledger_path(Path(run_dir))
    conn = connect_ro(path)
    try:
        if not has_table(conn):
            return {}
        rows = conn.execute(
            "SELECT call_id, status, detail_json, reason, verifier FROM verifications"
            " WHERE seq IN (SELECT max(seq) FROM verifications GROUP BY call_id)"
        ).fetchall()
    except sqlite3.Error as exc:
        raise translate(exc, path, "read the verdicts") from exc
    finally:
        conn.close()
    return {cid: _verdict(st, detail, reason, ver) for cid, st, detail, reason, ver in rows}


def call_verdict(conn: sqlite3.Connection, call_id: str) -> dict[str, object] | None:
    """One call's newest verdict (as `latest_verdicts` gives it), or None."""
    if not has_table(conn):
        return None
    row = conn.execute(
        "SELECT status, detail_json, reason, verifier FROM verifications WHERE call_id = ?"
        " ORDER BY seq DESC LIMIT 1",
        (call_id,),
    ).fetchone()
    return None if row is None else _verdict(*row)


def _verdict(status: str, detail: str, reason: str | None, verifier: str) -> dict[str, object]:
    return {
        "status": status,
        "detail": orjson.loads(detail),
        "reason": reason,
        "verifier": verifier,
    }
