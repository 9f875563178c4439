"""`tally dex answers`: a mock-server script of the oracle's answers for a config, so a
rehearsal against the mock shows verification at work (docs/dexbench.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from testkit import REPO, tally


def test_the_scripted_rehearsal_scores_like_the_oracle(tmp_path: Path, mock_process: Any) -> None:
    answers = tmp_path / "dex-answers.jsonl"
    rehearsal = REPO / "configs" / "dexbench-rehearsal.toml"
    made = tally("dex", "answers", str(rehearsal), "-o", str(answers))
    assert made.returncode == 0, made.stderr
    assert "wrote 40 scripted answers" in made.stdout
    mock = mock_process("--answers-file", str(answers))
    # The rehearsal as shipped, on this test's mock port, one sample, one model.
    text = rehearsal.read_text().replace("http://127.0.0.1:8787", mock.base_url)
    text = text.replace("samples = 5", "samples = 1").replace(
        'runs_dir = "../runs"', 'runs_dir = "runs"'
    )
    config = tmp_path / "rehearsal.toml"
    config.write_text(text)
    ran = tally("run", str(config), env={"EVALTALLY_MOCK_KEY": "anything"}, timeout=300)
    assert ran.returncode == 0, ran.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    assert tally("report", str(run_dir), "--resamples", "0").returncode == 0
    data = orjson.loads((run_dir / "report.json").read_bytes())["sections"]["dexbench"]
    # The oracle's numbers (docs/dexbench.md): forward 100%; backward 100% on HumanEval, where
    # a known-good input exists, 0% on CRUXEval; every backward answer went through the sandbox.
    for group in data["groups"]:
        assert group["forward"]["pass@1"] == 1.0
        backward = group["backward"]
        assert backward["pass@1"] == (1.0 if group["source"] == "humaneval" else 0.0)
        assert sum(backward["verification"]["verdicts"].values()) == group["instances"]
    again = tally("dex", "answers", str(rehearsal), "-o", str(answers))
    assert again.returncode == 2 and "--force" in again.stderr
