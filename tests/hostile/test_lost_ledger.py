"""A run directory whose ledger was emptied (0 bytes) or lost its WAL: `resume` and `run` refuse,
say what is left, and start again only when told to (--start-over). Nothing is re-sent quietly."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from ledger_hostile_kit import (
    count_rows,
    error_lines,
    interrupt_run,
    prompts_sweep,
    run_tally,
    set_mock,
)


def test_an_emptied_ledger_is_refused_until_start_over(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    config = prompts_sweep(tmp_path, mock.base_url, 5)
    code, _, err = run_tally("run", str(config))
    assert code == 0, err
    run_dir = tmp_path / "runs" / "t"
    (run_dir / "ledger.sqlite").write_bytes(b"")

    for args in (("resume", str(run_dir)), ("run", str(config))):
        code, _, err = run_tally(*args)
        assert code == 2, err
        (line,) = error_lines(err)
        assert "the ledger is lost (ledger.sqlite is 0 bytes)" in line, line
        assert "left: .config_dir, .lock, config.toml" in line, line
        assert f"`tally resume {run_dir} --start-over`" in line, line
    assert mock.stats()["total"] == 5  # nothing was sent again

    code, _, err = run_tally("status", str(run_dir))
    assert code == 2 and "ledger.sqlite is 0 bytes" in err, err

    code, _, err = run_tally("resume", str(run_dir), "--start-over")
    assert code == 0, err
    assert mock.stats()["total"] == 10
    assert [p.stat().st_size for p in run_dir.glob("ledger.sqlite.lost-*")] == [0]
    code, out, err = run_tally("verify", str(run_dir))
    assert code == 0, out + err

    code, _, err = run_tally("resume", str(run_dir), "--start-over")
    assert code == 2 and "--start-over is only for a run whose ledger was lost" in err, err


def test_a_ledger_that_lost_its_wal_is_refused(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--latency-ms", "500")
    config = prompts_sweep(tmp_path, mock.base_url, 20, limits="concurrency = 2")
    run_dir = tmp_path / "runs" / "t"
    db = run_dir / "ledger.sqlite"
    interrupt_run(
        "run",
        str(config),
        until=lambda: count_rows(db, "SELECT count(*) FROM outcomes") >= 2,
        what="two answers",
        act=lambda proc: proc.send_signal(signal.SIGKILL),
    )
    set_mock(mock.base_url, latency_ms=0)
    sent = mock.stats()["total"]
    for sidecar in ("ledger.sqlite-wal", "ledger.sqlite-shm"):
        (run_dir / sidecar).unlink()

    code, _, err = run_tally("resume", str(run_dir))

    assert code == 2, err
    (line,) = error_lines(err)
    assert "holds no ledger tables and there is no ledger.sqlite-wal" in line, line
    assert mock.stats()["total"] == sent
