"""CTE service code from a data file runs inside the OS boundary: it sees its own uid and PID
namespace and no environment, and without bwrap nothing runs (one line saying how to get it)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from typer.testing import CliRunner

from evaltally.benchmarks.cte.cli import app
from evaltally.benchmarks.cte.records import Scenario, unedited_sources
from evaltally.benchmarks.cte.sandbox import Limits, replay_in_sandbox
from evaltally.sandbox.boundary import BWRAP_ENV, SandboxUnavailable

PROBE = (
    "import os\n"
    "raise ValueError(f'uid={os.getuid()} env={sorted(os.environ)} '\n"
    "                 f'pids={[int(p) for p in os.listdir(\"/proc\") if p.isdigit()]}')\n"
)


def _probe(official: list[Scenario]) -> dict[str, Any]:
    record: dict[str, Any] = dict(official[0].raw)
    record["item_id"] = "probe"
    record["patched_source"] = PROBE + record["patched_source"]
    line = record["intervention"]["line_number"] + 3  # three lines added above the class
    record["intervention"] = dict(record["intervention"], line_number=line)
    return record


def test_a_service_from_a_data_file_sees_only_its_sandbox(official: list[Scenario]) -> None:
    [out] = replay_in_sandbox(
        [_probe(official)], unedited_sources=unedited_sources(official), jobs=1
    )
    assert out.result is None
    error = str(out.error)
    assert "uid=65534 env=['LC_CTYPE', 'PWD', 'PYTHONPATH']" in error, error
    pids = [int(p) for p in error.split("pids=[")[1].split("]")[0].split(",")]
    assert max(pids) < 10 and os.getpid() not in pids


def test_without_bwrap_nothing_runs(
    official: list[Scenario], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BWRAP_ENV, "/nonexistent/bwrap")
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        replay_in_sandbox([_probe(official)], unedited_sources=unedited_sources(official))
    [out] = replay_in_sandbox(
        [_probe(official)],
        unedited_sources=unedited_sources(official),
        limits=Limits(sandbox="process"),
    )
    assert f"uid={os.getuid()} " in str(out.error)  # the weaker mode: the caller's own uid


def test_cte_verify_refuses_without_bwrap_and_warns_in_process_mode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv(BWRAP_ENV, "/nonexistent/bwrap")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    refused = CliRunner().invoke(app, ["verify", str(empty)])
    assert refused.exit_code != 0 and "apt-get install bubblewrap" in refused.output
    weak = CliRunner().invoke(app, ["verify", str(empty), "--sandbox", "process"])
    assert "weaker process-only sandbox" in weak.output
