"""Offline predictors through a real `tally run` on every shipped instance (answers parsed,
backward answers verified by the hook's workers, graded): their scores are the ones
predictors.py, docs/dexbench.md and README state, and `tally report RUN` equals
`tally grade EXPORT`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from testkit import tally

CONFIG = """
[run]
name = "offline"
runs_dir = "runs"
{models}
[[benchmarks]]
kind = "dexbench"
"""
MODEL = '[[models]]\nkey = "{0}"\nprovider = "baseline"\nmodel = "{0}"\n'


def _section(report_json: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(report_json.read_bytes())
    return dict(data["sections"]["dexbench"])


def test_offline_predictors_score_as_documented_and_report_equals_grade(tmp_path: Path) -> None:
    models = "".join(MODEL.format(name) for name in ("oracle", "unchanged", "no-answer"))
    config = tmp_path / "offline.toml"
    config.write_text(CONFIG.format(models=models))
    run = tally("run", str(config), timeout=300)
    assert run.returncode == 0, run.stderr
    # backward answers that parsed: oracle 398, unchanged 390 (8 empty inputs); no-answer none
    assert "verified this session: passed 95, failed 693, error 0" in run.stdout
    run_dir = tmp_path / "runs" / "offline"
    report = tally("report", str(run_dir), "--resamples", "0")
    assert report.returncode == 0, report.stderr
    section = _section(run_dir / "report.json")
    groups = {(g["model"], g["source"]): g for g in section["groups"]}
    assert {k: g["instances"] for k, g in groups.items() if k[0] == "oracle"} == {
        ("oracle", "cruxeval"): 298,
        ("oracle", "humaneval"): 100,
    }
    for (model, source), g in groups.items():
        fwd, bwd, dual = g["forward"], g["backward"], g["dual"]["same_sample"]["pass@1"]
        if model == "no-answer":
            for block in (fwd, bwd):
                assert block["pass@1"] == 0.0 and block["parse_failure_rate"] == 1.0
                assert block["parse_outcomes"] == {"no_answer_block": block["calls"]}
            assert dual == 0.0
            continue
        assert fwd["pass@1"] == 1.0 and fwd["jaccard@1"] == 1.0 and fwd["coverage"] == 1.0
        expected = 0.95 if (model, source) == ("oracle", "humaneval") else 0.0
        assert bwd["pass@1"] == expected and dual == expected
    assert groups[("oracle", "humaneval")]["backward"]["verification"] == {
        "verdicts": {"failed": 5, "passed": 95},
        "reasons": {"not_reached": 5, "reached": 95},
        "sandboxes": {"os": 100},
    }
    unchanged = groups[("unchanged", "humaneval")]["backward"]
    assert unchanged["parse_outcomes"] == {"empty_answer": 8}
    assert unchanged["verification"]["reasons"] == {"not_reached": 92}
    md = (run_dir / "report.md").read_text()
    assert "DexBench: dual pass@1 (%)" in md and (run_dir / "dexbench_breakdown.png").exists()

    export = tmp_path / "e.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    graded = tally("grade", str(export), "-o", str(tmp_path / "g"), "--resamples", "0")
    assert graded.returncode == 0, graded.stderr
    assert _section(tmp_path / "g" / "report.json") == section
