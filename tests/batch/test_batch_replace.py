"""`--replace-model` on a batch-mode model whose provider batch is still open is refused: the
batch's answers would come back to superseded calls. The refusal reads the ledger (a batch
not yet collected), not the provider; once `tally resume` has collected it, the replacement
goes through."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from batch_kit import batch_sweep, prompts_benchmark

from testkit import kill_run_when, tally


def _created(db: Path) -> bool:
    if not db.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT count(*) FROM batch_events WHERE kind = 'created'")
            return bool(row.fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return False


def test_replacing_a_model_with_an_open_batch_is_refused(tmp_path: Path, mock_process: Any) -> None:
    (tmp_path / "mock.toml").write_text("[mock]\nbatch_in_progress_s = 5\n")
    mock = mock_process("--config", str(tmp_path / "mock.toml"))
    bench = prompts_benchmark(tmp_path / "items.jsonl", 3)
    config = batch_sweep(
        tmp_path / "b.toml", mock.base_url, name="b", mode="batch", kinds=("openai",),
        benchmark=bench,
    )  # fmt: skip
    run_dir = tmp_path / "runs" / "b"
    kill_run_when(config, lambda: _created(run_dir / "ledger.sqlite"))
    assert _created(run_dir / "ledger.sqlite")

    original = config.read_text()
    config.write_text(original.replace("max_tokens = 64", "max_tokens = 32"))
    refused = tally("run", str(config), "--replace-model", "openai-model")
    assert refused.returncode == 2
    assert "a line of a provider batch still open" in refused.stderr

    assert tally("resume", str(run_dir), timeout=120).returncode == 0
    replaced = tally("run", str(config), "--replace-model", "openai-model", timeout=120)
    assert replaced.returncode == 0, replaced.stderr
    assert "openai-model: 3 recorded call(s) superseded" in replaced.stdout
    assert tally("verify", str(run_dir)).returncode == 0
