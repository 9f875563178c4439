"""One report for a run of several benchmark kinds: a section per kind, rows dispatched by
`benchmark_kind`, benchmark labels where two benchmarks of one kind meet, data sources with
their SHA-256."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from evaltally.benchmarks.cte.tables import all_tables
from kinds_kit import tally_kinds
from testkit import write_items


def test_a_run_of_two_kinds_reports_a_section_each(tmp_path: Path, mock_process: Any) -> None:
    mock = mock_process()
    write_items(tmp_path / "items.jsonl", 3)
    write_items(tmp_path / "chains.jsonl", 2, turns=2)
    config = tmp_path / "two.toml"
    config.write_text(
        '[run]\nname = "two"\nruns_dir = "runs"\n[[models]]\nkey = "m1"\nprovider = "openai"\n'
        f'model = "m1-model"\nbase_url = "{mock.base_url}/v1"\n'
        'api_key_env = "EVALTALLY_TEST_KEY"\n'
        '[[benchmarks]]\nkind = "prompts"\nname = "single"\npath = "items.jsonl"\n'
        '[[benchmarks]]\nkind = "prompts"\nname = "chat"\npath = "chains.jsonl"\n'
        '[[benchmarks]]\nkind = "verified"\nitems = 2\n'
    )
    assert tally_kinds("run", str(config)).returncode == 0
    run_dir = tmp_path / "runs" / "two"
    report = tally_kinds("report", str(run_dir), "--resamples", "0")
    assert report.returncode == 0, report.stderr
    data = orjson.loads((run_dir / "report.json").read_bytes())
    assert list(data["sections"]) == ["prompts", "verified"]
    groups = data["sections"]["prompts"]["groups"]
    assert {(g["benchmark"], g["calls"], g["ok"]) for g in groups} == {
        ("single", 3, 3),
        ("chat", 4, 4),
    }
    assert "| model | benchmark | calls |" in (run_dir / "report.md").read_text()
    assert "Prompts" in report.stdout and "Verified answers" in report.stdout
    digest = hashlib.sha256((tmp_path / "items.jsonl").read_bytes()).hexdigest()
    source = data["data_sources"]["single"]
    assert source["kind"] == "prompts" and source["files"][0]["sha256"] == digest
    assert digest in (run_dir / "report.md").read_text()

    export = tmp_path / "e.jsonl"
    assert tally_kinds("export", str(run_dir), "-o", str(export)).returncode == 0
    graded = tally_kinds("grade", str(export), "-o", str(tmp_path / "g"), "--resamples", "0")
    assert graded.returncode == 0, graded.stderr
    again = orjson.loads((tmp_path / "g" / "report.json").read_bytes())
    assert again["sections"] == data["sections"]


def _group(model: str, bench: str) -> dict[str, Any]:
    cell = {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}
    metrics = dict.fromkeys(
        ("effect_step_vm", "all_call_vm", "status_match", "field_match", "field_match_union",
         "all_call_vm_release", "parse_failure_rate", "coverage", "whole_trace_exact",
         "median_first_wrong", "mean_first_wrong", "vm_calls_1_10", "vm_calls_21_40"),
        cell,
    )  # fmt: skip
    summary = {"metrics": metrics, "n_calls": 40, "equal_service": metrics,
               "vm_reading_differs": 0}  # fmt: skip
    return {"model": model, "benchmark": bench, "protocol": "free_rollout", "summary": summary}


def test_cte_tables_name_the_benchmark_only_when_two_could_be_confused() -> None:
    one = all_tables([_group("m", "cte")])
    two = all_tables([_group("m", "core"), _group("m", "fresh")])
    assert all("benchmark" not in t.header for t in one)
    assert all(t.header[:2] == ("model", "benchmark") for t in two)
    assert [row[1] for row in two[0].rows] == ["core", "fresh"]


def test_an_export_of_the_previous_release_is_graded_by_its_fields(tmp_path: Path) -> None:
    from evaltally.benchmarks.grading import grade_export

    rows = [
        {
            "model": "m",
            "benchmark": "cte",
            "protocol": "no_feedback",
            "status": "ok",
            "parsed": {"ok": i == 0},
            "usage": None,
            "scenario_id": "s1",
            "service": "bank",
            "intervention_kind": "clock_jump",
            "future_index": i,
            "target": {"ok": True},
            "no_intervention": {"ok": False},
            "is_effect_step": True,
        }
        for i in range(2)
    ]
    export = tmp_path / "old.jsonl"
    export.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    result = grade_export(export, resamples=0)
    (group,) = result.section("cte")["groups"]
    assert group["summary"]["n_calls"] == 2
    assert group["summary"]["metrics"]["all_call_vm"]["value"] == 0.5
