"""A run refuses a second driver and a changed plan, and accepts a pure extension."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from testkit import FAKE_KEY, tally, write_config, write_items


def test_extension_adds_calls_and_keeps_answers(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    write_items(tmp_path / "items.jsonl", 4)
    config = write_config(tmp_path, mock.base_url)
    assert tally("run", str(config)).returncode == 0
    assert mock.stats()["total"] == 4

    write_items(tmp_path / "items.jsonl", 6)  # two more items
    config = write_config(tmp_path, mock.base_url, samples=2, models=("m1", "m2"))
    result = tally("run", str(config))
    assert result.returncode == 0, result.stderr
    assert "24 (20 new this session)" in result.stdout
    assert mock.stats()["total"] == 24  # the 4 recorded answers were not requested again


def test_changed_plan_is_refused_and_nothing_is_lost(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    write_items(tmp_path / "items.jsonl", 4)
    config = write_config(tmp_path, mock.base_url)
    assert tally("run", str(config)).returncode == 0
    ledger = tmp_path / "runs" / "t" / "ledger.sqlite"
    size = ledger.stat().st_size

    config.write_text(config.read_text().replace("temperature = 0.0", "temperature = 0.7"))
    refused = tally("run", str(config))
    assert refused.returncode == 2
    assert "changing or removing them is not" in refused.stderr
    assert ledger.stat().st_size >= size
    assert tally("verify", str(tmp_path / "runs" / "t")).returncode == 0
    assert mock.stats()["total"] == 4
    # The run still follows the config it was started with.
    assert "temperature = 0.0" in (tmp_path / "runs" / "t" / "config.toml").read_text()
    assert tally("resume", str(tmp_path / "runs" / "t")).returncode == 0


def test_second_process_on_the_same_run_is_refused(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--latency-ms", "300")
    write_items(tmp_path / "items.jsonl", 20)
    config = write_config(tmp_path, mock.base_url, limits="concurrency = 1")
    first = subprocess.Popen(
        [sys.executable, "-m", "evaltally", "run", str(config)],
        env={**os.environ, "EVALTALLY_TEST_KEY": FAKE_KEY},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while mock.stats()["total"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        second = tally("resume", str(tmp_path / "runs" / "t"))
        assert second.returncode == 2
        assert "already being driven by another process" in second.stderr.replace("\n", " ")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
