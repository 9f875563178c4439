"""The ``tally cte`` typer app: errors, generate delegation."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evaltally.benchmarks.cte.cli import app


def test_data_error_exit_code_and_message(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["replay", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_the_earlier_verify_verb_says_where_it_moved_and_still_replays(tmp_path: Path) -> None:
    # `verify` means one thing, the ledger check of `tally verify RUN`; the data replay is
    # `tally cte replay`, and the old name stays a hidden alias that names its new home.
    listed = CliRunner().invoke(app, ["--help"])
    assert " replay " in listed.output and " verify " not in listed.output
    result = CliRunner().invoke(app, ["verify", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2
    assert "`tally cte verify` is now `tally cte replay`" in result.output
    assert "no such file" in result.output


def test_generate_calls_write_generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, Path]] = []
    fake = types.ModuleType("evaltally.benchmarks.cte.generate")

    def write_generated(seed: int, out: Path) -> int:
        calls.append((seed, out))
        return 12

    fake.write_generated = write_generated  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "evaltally.benchmarks.cte.generate", fake)
    out = tmp_path / "g.jsonl"
    result = CliRunner().invoke(app, ["generate", "--seed", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert calls == [(3, out)] and "12 scenarios" in result.output


def test_stats_builtin_uses_builtin_path(
    official_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType("evaltally.benchmarks.cte.generate")
    fake.builtin_path = lambda: official_path  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "evaltally.benchmarks.cte.generate", fake)
    result = CliRunner().invoke(app, ["stats", "--json"])
    assert result.exit_code == 0, result.output
    assert '"scenarios": 255' in result.output
