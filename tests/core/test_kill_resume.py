"""kill -9 a running `tally run` at several points, then `tally resume`: exactly one final
outcome per planned call, no recorded answer requested again, and the same export as a run
that was never interrupted."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from testkit import FAKE_KEY, kill_run_when, tally, write_config, write_items

# Fields that legitimately differ between an interrupted and an uninterrupted run.
VOLATILE = {"latency_ms", "attempts"}


def _final_bodies(db_path: Path) -> dict[str, str]:
    """call_id -> request hash of every call with a final outcome so far."""
    if not db_path.exists():
        return {}
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT call_id, request_hash FROM outcomes WHERE status IN ('ok', 'parse_error')"
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return {}
    return dict(rows)


def _open_attempts(db_path: Path) -> set[tuple[str, int]]:
    """Attempts with a start row and no end row (cut off by the kill)."""
    if not db_path.exists():
        return set()
    db = sqlite3.connect(db_path)
    try:
        rows = db.execute(
            "SELECT s.call_id, s.attempt FROM attempts s WHERE s.kind = 'start' AND NOT EXISTS ("
            "SELECT 1 FROM attempts e WHERE e.call_id = s.call_id AND e.attempt = s.attempt"
            " AND e.kind != 'start')"
        ).fetchall()
    except sqlite3.Error:
        return set()
    finally:
        db.close()
    return set(rows)


def _export(run_dir: Path, out: Path) -> list[dict[str, Any]]:
    result = tally("export", str(run_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in rows]


def _setup(tmp_path: Path, base_url: str, name: str) -> Path:
    write_items(tmp_path / "items.jsonl", 40)
    write_items(tmp_path / "chains.jsonl", 8, turns=5)
    config = write_config(tmp_path, base_url, name=name, limits="concurrency = 4")
    config.write_text(
        config.read_text() + '\n[[benchmarks]]\nkind = "prompts"\nname = "chat"\n'
        'path = "chains.jsonl"\n'
    )
    return config


@pytest.mark.parametrize("kill_after", [0, 15, 55])
def test_kill_then_resume_is_exact(tmp_path: Path, mock_process: Any, kill_after: int) -> None:
    mock = mock_process("--latency-ms", "20", "--seed", "5")
    config = _setup(tmp_path, mock.base_url, "killed")
    run_dir = tmp_path / "runs" / "killed"
    db_path = run_dir / "ledger.sqlite"
    kill_run_when(
        config,
        lambda: (
            (kill_after == 0 and db_path.exists()) or len(_final_bodies(db_path)) >= kill_after > 0
        ),
    )

    before = _final_bodies(db_path) if db_path.exists() else {}
    counts_before = mock.stats()["by_body"]
    assert len(before) < 80, "the run finished before it could be killed"

    open_before = _open_attempts(db_path)
    # The config copy is written once the ledger holds its tables: with it, resume continues
    # the run; killed before it, `tally run` again does.
    started = (run_dir / "config.toml").exists()
    resumed = tally("resume", str(run_dir)) if started else tally("run", str(config))
    assert resumed.returncode == 0, resumed.stderr

    after = _final_bodies(db_path)
    db = sqlite3.connect(db_path)
    finals = db.execute(
        "SELECT call_id, COUNT(*) FROM outcomes"
        " WHERE status IN ('ok', 'parse_error') GROUP BY call_id"
    ).fetchall()
    planned = db.execute("SELECT COUNT(*) FROM planned").fetchone()[0]
    assert planned == 80 and len(finals) == 80 and all(n == 1 for _, n in finals)
    # Every attempt the kill cut off is now closed as interrupted, and only those.
    interrupted = db.execute("SELECT call_id, attempt FROM attempts WHERE kind = 'interrupted'")
    assert set(interrupted.fetchall()) == open_before
    counts_after = mock.stats()["by_body"]
    for call_id, body_hash in before.items():
        assert after[call_id] == body_hash
        assert counts_after[body_hash] == counts_before[body_hash], call_id
    assert tally("verify", str(run_dir)).returncode == 0

    # The same sweep, never interrupted, exports the same rows.
    clean = _setup(tmp_path, mock.base_url, "clean")
    assert tally("run", str(clean)).returncode == 0
    assert _export(run_dir, tmp_path / "a.jsonl") == _export(
        tmp_path / "runs" / "clean", tmp_path / "b.jsonl"
    )


def test_ctrl_c_exits_130_and_resume_finishes(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--latency-ms", "50")
    config = _setup(tmp_path, mock.base_url, "interrupted")
    run_dir = tmp_path / "runs" / "interrupted"
    # `tally` starts with SIGINT at its default action, as from a terminal. A suite started in
    # the background of a script inherits SIGINT ignored (POSIX shells do that to background
    # jobs), and so would every `tally` it starts: Ctrl-C could not reach it at all.
    interactive = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", interactive, "-m", "evaltally", "run", str(config)],
        env={**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len(_final_bodies(run_dir / "ledger.sqlite")) < 10 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    # The advice names the run directory the config opened, not a placeholder.
    assert f"interrupted; continue with `tally resume {run_dir}`" in stderr, stderr
    # Ctrl-C lets the writer commit: what was answered is in the ledger, nothing is left open.
    assert tally("verify", str(run_dir)).returncode == 0
    resumed = tally("resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert len(_final_bodies(run_dir / "ledger.sqlite")) == 80


def _started(db_path: Path) -> dict[str, int]:
    """request hash -> attempts the ledger records as started (sent or about to be)."""
    db = sqlite3.connect(db_path)
    try:
        rows = db.execute(
            "SELECT request_hash, COUNT(*) FROM attempts WHERE kind = 'start' GROUP BY 1"
        ).fetchall()
    finally:
        db.close()
    return dict(rows)


def test_kill_leaves_no_request_unrecorded(tmp_path: Path, mock_process: Any) -> None:
    """Record before send: killed while hundreds of requests a second leave, the ledger holds
    a start row for every request the provider received, and resume sends each of those calls
    at most once more."""
    mock = mock_process("--latency-ms", "0")
    write_items(tmp_path / "items.jsonl", 3000)
    config = write_config(tmp_path, mock.base_url, name="fast", limits="concurrency = 32")
    db_path = tmp_path / "runs" / "fast" / "ledger.sqlite"
    kill_run_when(config, lambda: mock.stats()["total"] >= 400)

    seen = mock.stats()["by_body"]
    assert sum(seen.values()) < 3000, "the run finished before it could be killed"
    started = _started(db_path)
    unrecorded = {h: n - started.get(h, 0) for h, n in seen.items() if n > started.get(h, 0)}
    assert not unrecorded, f"{len(unrecorded)} requests reached the provider unrecorded"

    resumed = tally("resume", str(tmp_path / "runs" / "fast"))
    assert resumed.returncode == 0, resumed.stderr
    assert tally("verify", str(tmp_path / "runs" / "fast")).returncode == 0
    assert sum(_started(db_path).values()) >= sum(mock.stats()["by_body"].values())
