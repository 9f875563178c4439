"""Grading from export rows alone: exact and Jaccard, backward success, the three dual
readings, intention-to-evaluate denominators, parse outcomes, tables and the plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evaltally.benchmarks.dexbench.grade import grade_rows, jaccard, unbiased_pass_at
from evaltally.benchmarks.dexbench.report import breakdown_plot, tables
from evaltally.errors import DataError
from evaltally.report.tables import to_markdown

TRUTH = [1, 4, 5]


def fwd(item: str, sample: int, lines: list[int] | None, status: str = "ok") -> dict[str, Any]:
    return {
        "model": "m", "benchmark": "dex", "item_id": item, "sample": sample, "task": "forward",
        "source": "cruxeval", "status": status, "covered_lines": TRUTH,
        "parsed": None if lines is None else {"executed_lines": lines},
        "raw_text": "no block here" if status == "parse_error" else "<answer>...</answer>",
    }  # fmt: skip


def bwd(item: str, sample: int, passed: bool | None, status: str = "ok") -> dict[str, Any]:
    verification = None
    if passed is not None:
        code = "reached" if passed else "not_reached"
        verification = {
            "status": "passed" if passed else "failed",
            "detail": {"code": code, "message": ""},
            "reason": None,
            "verifier": "evaltally.benchmarks.dexbench.verify:check",
        }
    return {
        "model": "m", "benchmark": "dex", "item_id": item, "sample": sample, "task": "backward",
        "source": "cruxeval", "status": status, "parsed": {"input": "1"},
        "verification": verification, "target_line": 4, "raw_text": "",
    }  # fmt: skip


SANDBOX_ERROR = {
    "status": "error",
    "detail": None,
    "reason": "the check raised SandboxError('the sandbox failed')",
    "verifier": "evaltally.benchmarks.dexbench.verify:check",
}


def test_jaccard_and_the_unbiased_estimator() -> None:
    assert jaccard([1, 2], [2, 3]) == pytest.approx(1 / 3)
    assert jaccard([], []) == 1.0
    assert unbiased_pass_at(5, 1, 1) == pytest.approx(0.2)
    assert unbiased_pass_at(5, 1, 5) == 1.0
    assert unbiased_pass_at(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert unbiased_pass_at(5, 0, 5) == 0.0
    assert unbiased_pass_at(1, 1, 5) is None


def test_the_three_dual_readings_differ_where_they_should() -> None:
    # item a: forward exact only in sample 1, backward only in sample 2 -> any-any, not same
    # item b: both in sample 3 -> same-sample and any-any at pass@5, not at pass@1
    rows = []
    for s in range(5):
        rows.append(fwd("a", s, TRUTH if s == 1 else [1]))
        rows.append(bwd("a", s, s == 2))
        rows.append(fwd("b", s, TRUTH if s == 3 else [9]))
        rows.append(bwd("b", s, s == 3))
    [g] = grade_rows(rows)["groups"]
    assert g["instances"] == 2 and g["samples"] == 5
    assert g["dual"]["same_sample"] == {"pass@1": 0.0, "pass@5": 0.5}
    assert g["dual"]["any_any"] == {"pass@1": 0.0, "pass@5": 1.0}
    assert g["dual"]["unbiased"] == {"pass@1": pytest.approx(0.1), "pass@5": 0.5}
    assert g["forward"]["pass@1"] == 0.0 and g["forward"]["pass@5"] == 1.0
    assert g["forward"]["unbiased@1"] == pytest.approx(0.2)
    assert g["backward"]["pass@5"] == 1.0
    # Jaccard: sample 1 of a = {1} vs {1,4,5}; of b = {9} -> 0; best = 1.0 for both
    assert g["forward"]["jaccard@1"] == pytest.approx((1 / 3 + 0) / 2)
    assert g["forward"]["jaccard_best"] == 1.0


def test_failed_unparsed_and_unverified_answers_stay_in_the_denominator() -> None:
    rows = [
        fwd("a", 0, TRUTH), bwd("a", 0, True),
        fwd("b", 0, None, "failed"), bwd("b", 0, None, "blocked"),
        fwd("c", 0, None, "parse_error"), bwd("c", 0, None),  # ok but not verified yet
        fwd("d", 0, [1, 4, 5, 6]), bwd("d", 0, False),
        fwd("e", 0, TRUTH), dict(bwd("e", 0, None), verification=SANDBOX_ERROR),
    ]  # fmt: skip
    [g] = grade_rows(rows)["groups"]
    assert g["instances"] == 5 and g["samples"] == 1
    assert g["forward"]["pass@1"] == 0.4 and g["forward"]["pass@5"] is None
    assert g["backward"]["pass@1"] == 0.2
    assert g["dual"]["same_sample"]["pass@1"] == 0.2
    assert g["forward"]["coverage"] == 0.8 and g["forward"]["parse_failure_rate"] == 0.2
    assert g["forward"]["parse_outcomes"] == {"no_answer_block": 1}
    assert g["backward"]["coverage"] == 0.8
    assert g["backward"]["verification"] == {
        "verdicts": {"error": 1, "failed": 1, "passed": 1, "unverified": 1},
        "reasons": {"error": 1, "not_reached": 1, "reached": 1},
        "sandboxes": {},  # these verdicts predate the sandbox field
    }


def test_groups_are_per_model_and_source_in_source_order() -> None:
    rows = [dict(fwd("a", 0, TRUTH), source="humaneval"), fwd("b", 0, TRUTH),
            dict(fwd("a", 0, [1]), model="k", source="pythonsaga")]  # fmt: skip
    keys = [(g["model"], g["source"]) for g in grade_rows(rows)["groups"]]
    assert keys == [("k", "pythonsaga"), ("m", "cruxeval"), ("m", "humaneval")]
    assert all(g["backward"] is None and g["dual"] is None for g in grade_rows(rows)["groups"])


def test_a_row_without_the_oracle_fields_is_named() -> None:
    row = fwd("a", 0, TRUTH)
    del row["task"]
    with pytest.raises(DataError, match="row 1: a DexBench export row lacks task"):
        grade_rows([row])


def test_tables_and_plot(tmp_path: Path) -> None:
    rows = [r for s in range(5) for r in (fwd("a", s, TRUTH), bwd("a", s, s == 0))]
    rows += [dict(r, source="humaneval") for r in rows]
    result = grade_rows(rows)
    rendered = [to_markdown(t) for t in tables(result)]
    assert rendered[0].splitlines()[:5] == [
        "### DexBench: dual pass@5 (%)",
        "",
        "| model | cruxeval | humaneval |",
        "| --- | --- | --- |",
        "| m | 100.0 | 100.0 |",
    ]
    assert "| m | cruxeval | 1 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 |" in rendered[1]
    png = breakdown_plot(result, tmp_path / "dexbench.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_benchmarks_of_the_kind_get_a_benchmark_column_and_pass_at_1_below_5_samples() -> None:
    rows = [fwd("a", 0, TRUTH), bwd("a", 0, True)]
    rows += [dict(r, benchmark="dex-generate") for r in rows]
    main = to_markdown(tables(grade_rows(rows))[0]).splitlines()
    assert main[0] == "### DexBench: dual pass@1 (%)"
    assert main[2:6] == [
        "| benchmark | model | cruxeval |",
        "| --- | --- | --- |",
        "| dex | m | 100.0 |",
        "| dex-generate | m | 100.0 |",
    ]
