"""A spend limit means what it says (`--budget 0`: nothing that costs is sent; nan, inf and
negative limits are refused, from the flag and from the config alike), and errors point to the
next command instead of a dead end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ledger_hostile_kit import error_lines, prompts_sweep, run_tally

PRICE = "price = { input_per_mtok = 1.0, output_per_mtok = 1.0 }\n"


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "-0.01"])
def test_a_budget_flag_that_is_not_a_limit_is_refused(
    tmp_path: Path, mock_process: Any, value: str
) -> None:
    mock = mock_process()
    config = prompts_sweep(tmp_path, mock.base_url, 3, extra_model=PRICE)

    code, _, err = run_tally("run", str(config), "--budget", value)

    assert code == 2, err
    assert error_lines(err) == [
        "error: command line: --budget: must be a finite number >= 0 (USD; 0 means nothing "
        f"may be spent), got {float(value)}"
    ]
    assert mock.stats()["total"] == 0


@pytest.mark.parametrize("value", ["nan", "inf", "-5"])
def test_the_config_budget_follows_the_same_rule(tmp_path: Path, value: str) -> None:
    config = prompts_sweep(tmp_path, "http://127.0.0.1:9", 3)
    config.write_text(config.read_text().replace("[run]\n", f"[run]\nbudget_usd = {value}\n"))

    code, _, err = run_tally("plan", str(config))

    assert code == 2, err
    (line,) = error_lines(err)
    assert f"{config}: run.budget_usd: must be a finite number >= 0" in line


def test_budget_zero_sends_nothing(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    config = prompts_sweep(tmp_path, mock.base_url, 3, extra_model=PRICE)

    code, _, err = run_tally("run", str(config), "--budget", "0")

    assert code == 3, err
    assert mock.stats()["total"] == 0
    code, out, err = run_tally("status", str(tmp_path / "runs" / "t"), "--json")
    assert '"blocked": 3' in out, out + err


def test_report_on_a_run_without_cte_grades_it_and_names_no_temporary_file(
    tmp_path: Path, mock_process: Any
) -> None:
    mock = mock_process()
    code, _, err = run_tally("run", str(prompts_sweep(tmp_path, mock.base_url, 2)))
    assert code == 0, err
    run_dir = tmp_path / "runs" / "t"

    code, out, err = run_tally("report", str(run_dir))

    # Every kind has its report section now; nothing printed names the report's temporary
    # export, which no longer exists once the command ends.
    assert code == 0, err
    assert "tally-report-" not in out + err
    assert (run_dir / "report.md").exists()


def test_a_config_given_to_resume_points_to_run(tmp_path: Path) -> None:
    config = prompts_sweep(tmp_path, "http://127.0.0.1:9", 1)

    code, _, err = run_tally("resume", str(config))

    assert code == 2, err
    assert error_lines(err) == [
        f"error: {config} is a file, not a run directory; to start or continue the run a "
        f"config describes, use `tally run {config}`"
    ]


def test_missing_core_v1_points_to_cte_fetch(tmp_path: Path) -> None:
    config = tmp_path / "core.toml"
    config.write_text(
        '[run]\nname = "core"\n[[models]]\nkey = "replay"\nprovider = "baseline"\n'
        'model = "replay"\n[[benchmarks]]\nkind = "cte"\ndata = "data/core_v1.jsonl"\n'
    )

    code, _, err = run_tally("plan", str(config))

    assert code == 2, err
    (line,) = error_lines(err)
    assert line.endswith(f"for Core-v1, `tally cte fetch -o {tmp_path / 'data'}` writes it there")
