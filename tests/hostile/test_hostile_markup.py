"""Provider and user text is printed as text, never as rich markup (issue 8, item 12)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from hostile_kit import CREDENTIAL_ENV, Model, write_hostile_config
from hostile_server import Answer, HostileServer, error_body

from evaltally.config import Limits
from evaltally.runner.lane import Lane
from evaltally.runner.progress import ProgressReporter
from testkit import tally

KEY = "gpt-4o[t=0]"
MESSAGE = "bad token near [/INST] and [bold red]this[/bold red]"


def test_markup_in_a_provider_message_and_a_model_key_is_printed_as_is(tmp_path: Path) -> None:
    with HostileServer(lambda seen: Answer(401, body=error_body(MESSAGE))) as server:
        config = write_hostile_config(tmp_path, server.base_url, [Model(KEY, "openai", "m")])
        result = tally("run", str(config), env=CREDENTIAL_ENV)
        status = tally("status", str(tmp_path / "runs" / "hostile"))

    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert MESSAGE in result.stderr
    assert f"failed: {KEY} / prompts" in result.stderr
    assert f"  {KEY}: lane stopped: {KEY}: the provider refused" in result.stdout
    assert status.returncode == 0, status.stderr
    assert KEY in status.stdout


def test_an_error_naming_a_path_with_brackets_is_one_plain_line(tmp_path: Path) -> None:
    missing = tmp_path / "sweep[/INST].toml"
    result = tally("plan", str(missing))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {missing}: cannot read the config")
    assert result.stderr.count("\n") == 1


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_the_live_progress_table_shows_model_keys_as_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal, so no cell is cut short
    screen = Terminal()
    reporter = ProgressReporter({KEY: Lane(KEY, Limits())}, screen)
    task = asyncio.create_task(reporter.run())
    await asyncio.sleep(0.05)
    reporter.stop()
    await task
    assert KEY in screen.getvalue()
