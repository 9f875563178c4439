"""Polling forever (issue 23, item 6): a state word no batch API documents was read as "in
progress" and polled without end; `poll_s = 1e308` was accepted. Unknown states now end the
wait after `unknown_state_s` (the batch stays open for resume, the run says which word), and
the poll settings are range-checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_batch import BatchProvider, batch_config, ok_lines, run_batch
from hostile_server import HostileServer

STATES = {"openai": "paused_for_audit", "anthropic": "frozen", "gemini": "BATCH_STATE_LIMBO"}


@pytest.mark.parametrize("kind", sorted(STATES))
def test_unknown_state_ends_the_wait_with_the_word(tmp_path: Path, kind: str) -> None:
    provider = BatchProvider(kind, ok_lines(kind), state=STATES[kind])
    with HostileServer(provider) as server:
        config = batch_config(tmp_path, server.base_url, kind, batch="unknown_state_s = 0.2")
        done = run_batch(config)
    assert done.returncode != 0
    assert STATES[kind] in done.stdout and "unknown_state_s" in done.stdout, done.stdout
    assert "lane stopped" in done.stdout and "Traceback" not in done.stderr
    assert 10 <= provider.polls <= 40  # 0.2 s of 10 ms polls, not forever
    status = run_batch(config, command="status")
    assert "Traceback" not in status.stderr + status.stdout


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("poll_s = 1e308", "models[0].batch.poll_s: must be between 0.01 and 3600 seconds"),
        ("poll_s = 0.0001", "models[0].batch.poll_s: must be between 0.01 and 3600 seconds"),
        ("poll_s = nan", "models[0].batch.poll_s: must be a finite number"),
        ("unknown_state_s = -1", "models[0].batch.unknown_state_s: must be between"),
        ("unknown_state_s = 1e300", "models[0].batch.unknown_state_s: must be between"),
    ],
)
def test_poll_settings_are_range_checked(tmp_path: Path, line: str, message: str) -> None:
    config = batch_config(tmp_path, "http://127.0.0.1:9", "openai", batch=line)
    done = run_batch(config, command="run")
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
