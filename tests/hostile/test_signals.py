"""SIGTERM (containers, schedulers, `timeout`) stops a run like Ctrl-C does, and `tally verify`
tells a run that was merely interrupted (exit 5) from one whose history was altered (exit 4)."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path
from typing import Any

from ledger_hostile_kit import (
    count_rows,
    interrupt_run,
    prompts_sweep,
    run_tally,
    set_mock,
)

OPEN_ATTEMPTS = (
    "SELECT count(*) FROM attempts s WHERE s.kind = 'start' AND NOT EXISTS (SELECT 1 FROM"
    " attempts e WHERE e.call_id = s.call_id AND e.attempt = s.attempt AND e.kind != 'start')"
)


def start_slow_run(tmp_path: Path, mock_process: Any, sig: signal.Signals) -> Path:
    """A run whose calls take 1.5 s each; `sig` arrives while four of them are in flight."""
    mock = mock_process("--latency-ms", "1500")
    config = prompts_sweep(tmp_path, mock.base_url, 12, limits="concurrency = 4")
    run_dir = tmp_path / "runs" / "t"
    db = run_dir / "ledger.sqlite"
    code, _, stderr = interrupt_run(
        "run",
        str(config),
        until=lambda: count_rows(db, OPEN_ATTEMPTS) >= 4,
        what="four attempts in flight",
        act=lambda proc: proc.send_signal(sig),
        timeout=30,
    )
    set_mock(mock.base_url, latency_ms=0)  # the resumes that follow need not wait
    if sig is signal.SIGTERM:
        assert code == 130, stderr
        assert "terminated (SIGTERM)" in stderr and f"tally resume {run_dir}" in stderr, stderr
        assert "Traceback" not in stderr, stderr
    return run_dir


def test_sigterm_closes_attempts_and_the_ledger(tmp_path: Path, mock_process: Any) -> None:
    run_dir = start_slow_run(tmp_path, mock_process, signal.SIGTERM)
    db = run_dir / "ledger.sqlite"
    assert count_rows(db, OPEN_ATTEMPTS) == 0
    assert count_rows(db, "SELECT count(*) FROM attempts WHERE kind = 'interrupted'") >= 4
    assert count_rows(db, "SELECT count(*) FROM sessions WHERE kind = 'end'") == 1

    code, out, err = run_tally("verify", str(run_dir))
    assert code == 0, out + err
    code, _, err = run_tally("resume", str(run_dir))
    assert code == 0, err


def test_verify_tells_an_interrupted_run_from_a_tampered_one(
    tmp_path: Path, mock_process: Any
) -> None:
    run_dir = start_slow_run(tmp_path, mock_process, signal.SIGKILL)

    code, out, err = run_tally("verify", str(run_dir))
    assert code == 5, out + err
    assert "violation" not in err
    assert "interrupted: attempts seq" in err and "started but has no end" in err, err
    assert "interrupted: sessions: the newest session" in err, err
    assert f"continue with `tally resume {run_dir}`" in err

    # The same interrupted ledger with one edited row is a violation: 4 wins over 5.
    edited = tmp_path / "edited"
    edited.mkdir()
    source = sqlite3.connect(run_dir / "ledger.sqlite")
    source.execute(f"VACUUM INTO '{edited / 'ledger.sqlite'}'")
    source.close()
    conn = sqlite3.connect(edited / "ledger.sqlite")
    conn.execute("DROP TRIGGER planned_no_update")
    conn.execute("UPDATE planned SET item_id = 'forged' WHERE seq = 1")
    conn.commit()
    conn.close()
    code, out, err = run_tally("verify", str(edited))
    assert code == 4, out + err
    assert "violation: planned seq 1" in err and "interrupted:" in err, err

    code, _, err = run_tally("resume", str(run_dir))
    assert code == 0, err
    code, out, err = run_tally("verify", str(run_dir))
    assert code == 0, out + err
