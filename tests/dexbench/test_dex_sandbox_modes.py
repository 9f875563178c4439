"""No sandbox, no verification: `tally run` without bwrap refuses before anything is sent, in one
line saying how to install it; `sandbox = "process"` runs with a warning on every run and the
verdicts and report say so; an unknown mode is a config error naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from evaltally.benchmarks.dexbench.instances import dumps, load_builtin
from testkit import tally

MISSING_BWRAP = {"EVALTALLY_BWRAP": "/nonexistent/bwrap"}


INSTANCE = next(i for i in load_builtin() if i.known_good_input is not None)
KNOWN_GOOD = f"<answer>{INSTANCE.known_good_input}</answer>"


def _config(tmp_path: Path, url: str, sandbox: str) -> Path:
    instance = INSTANCE
    data = tmp_path / "instances.jsonl"
    data.write_text(dumps([instance]))
    path = tmp_path / "modes.toml"
    path.write_text(
        '[run]\nname = "modes"\nruns_dir = "runs"\n\n'
        '[[models]]\nkey = "m"\nprovider = "openai"\nmodel = "m-model"\n'
        f'base_url = "{url}/v1"\napi_key_env = "EVALTALLY_TEST_KEY"\n\n'
        f'[[benchmarks]]\nkind = "dexbench"\ndata = "{data}"\ntasks = ["backward"]\n{sandbox}\n'
    )
    return path


def test_without_bwrap_the_run_refuses_before_sending_anything(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process()
    refused = tally("run", str(_config(tmp_path, mock.base_url, "")), env=MISSING_BWRAP)
    assert refused.returncode != 0
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, refused.stderr
    assert "(bwrap) not found" in lines[0] and "apt-get install bubblewrap" in lines[0]
    assert mock.stats()["total"] == 0


def test_process_mode_warns_on_every_run_and_the_report_states_it(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process("--default-answer", KNOWN_GOOD)
    config = _config(tmp_path, mock.base_url, 'sandbox = "process"')
    run_dir = tmp_path / "runs" / "modes"
    run = tally("run", str(config), env=MISSING_BWRAP)
    assert run.returncode == 0, run.stderr
    regrade = tally("regrade", str(run_dir), env=MISSING_BWRAP)
    assert regrade.returncode == 0, regrade.stderr
    for result in (run, regrade):
        assert "warning: dexbench: DexBench backward verification runs in the weaker" in (
            result.stderr
        )
    export = tmp_path / "e.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    [row] = [orjson.loads(line) for line in export.read_bytes().splitlines()]
    assert row["verification"]["status"] == "passed", row
    assert row["verification"]["detail"]["sandbox"] == "process"
    report = tally("report", str(run_dir), "--resamples", "0")
    assert "WARNING: 1 backward verdict(s) ran in the weaker process-only" in report.stdout


def test_an_unknown_sandbox_mode_is_a_config_error(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    result = tally("run", str(_config(tmp_path, mock.base_url, 'sandbox = "docker"')))
    assert result.returncode != 0
    assert "sandbox" in result.stderr and "must be one of: os, process" in result.stderr
    assert mock.stats()["total"] == 0


def test_dex_build_refuses_without_bwrap(tmp_path: Path) -> None:
    out = tmp_path / "instances.jsonl"
    refused = tally("dex", "build", "-o", str(out), env=MISSING_BWRAP)
    assert refused.returncode != 0
    assert "apt-get install bubblewrap" in refused.stderr and not out.exists()
