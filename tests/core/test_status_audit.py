"""`tally status`: counts by lane, spend from the configured price, and the reasoning audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from testkit import tally, write_config, write_items


def test_status_flags_reasoning_used_while_requested_off(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process("--reasoning-tokens", "7")
    write_items(tmp_path / "items.jsonl", 5)
    extra = 'reasoning = "off"\nprice = { input_per_mtok = 1.0, output_per_mtok = 2.0 }\n'
    config = write_config(tmp_path, mock.base_url, extra_model=extra)
    assert tally("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "t"

    data = orjson.loads(tally("status", str(run_dir), "--json").stdout)
    (model,) = data["models"]
    assert model["flagged"] and model["reasoning_tokens"] == 35
    assert model["calls_with_reasoning"] == 5 and model["outcomes"] == 5
    expected = (model["input_tokens"] * 1.0 + model["output_tokens"] * 2.0) / 1e6
    assert model["cost_usd"] == expected > 0

    shown = tally("status", str(run_dir))
    assert shown.returncode == 0
    assert "reasoning was requested off" in shown.stderr
    assert "5 of 5 answered calls" in shown.stderr


def test_status_of_a_missing_or_foreign_run(tmp_path: Path) -> None:
    missing = tally("status", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "nope" in missing.stderr
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "config.toml").write_text("[run]\n")
    (tmp_path / "junk" / "ledger.sqlite").write_text("this is not a database")
    junk = tally("status", str(tmp_path / "junk"))
    assert junk.returncode == 2 and "ledger.sqlite" in junk.stderr
    assert (tmp_path / "junk" / "ledger.sqlite").read_text() == "this is not a database"
