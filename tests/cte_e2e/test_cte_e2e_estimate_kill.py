"""kill -9 `tally scae estimate` mid-run, then `tally resume`: one final outcome per planned
call, the parent untouched, and the same export as an estimate never interrupted."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson
from cte_e2e_kit import builtin_records, record_rollouts, write_records

from testkit import tally, tally_background

VOLATILE = {"latency_ms", "attempts"}
CALLS = 2 * sum((40 - p) + (39 - p) for p in (0, 8, 16, 24, 32))


def _finals(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _export(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    done = tally("export", str(run_dir), "-o", str(out))
    assert done.returncode == 0, done.stderr
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


def test_kill_mid_estimate_then_resume_is_exact(tmp_path: Path, mock_process: Any) -> None:
    # The mock's generated answers are a function of the request body: a deterministic model.
    mock = mock_process("--latency-ms", "20", "--seed", "3")
    data = write_records(tmp_path / "one.jsonl", builtin_records(1, domains=("cart",)))
    parent = record_rollouts(tmp_path, mock.base_url, data, "concurrency = 4")
    before = (parent / "ledger.sqlite").read_bytes()
    killed = tmp_path / "killed"
    args = ("scae", "estimate", str(parent), "--replays", "2")
    proc = tally_background(*args, "-o", str(killed))
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if _finals(killed / "ledger.sqlite") >= 60:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate()
    assert 0 < _finals(killed / "ledger.sqlite") < CALLS, err

    resumed = tally("resume", str(killed))
    assert resumed.returncode == 0, resumed.stderr
    conn = sqlite3.connect(killed / "ledger.sqlite")
    finals = conn.execute(
        "SELECT call_id, COUNT(*) FROM outcomes WHERE status IN ('ok', 'parse_error') "
        "GROUP BY call_id"
    ).fetchall()
    planned = conn.execute("SELECT COUNT(*) FROM planned").fetchone()[0]
    conn.close()
    assert planned == CALLS and len(finals) == CALLS and all(n == 1 for _, n in finals)
    assert tally("verify", str(killed)).returncode == 0
    assert (parent / "ledger.sqlite").read_bytes() == before

    clean = tmp_path / "clean"
    assert tally(*args, "-o", str(clean)).returncode == 0
    assert _export(killed, tmp_path / "a.jsonl") == _export(clean, tmp_path / "b.jsonl")
    assert tally("report", str(killed)).returncode == 0
    assert tally("report", str(clean)).returncode == 0
    a = orjson.loads((killed / "report.json").read_bytes())["sections"]["scae_estimate"]
    b = orjson.loads((clean / "report.json").read_bytes())["sections"]["scae_estimate"]
    assert a == b
