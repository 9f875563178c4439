"""The CTXGAP report section from export rows alone: the hand-computed fixture of
test_ctxgap_stats.py, written as a run's export (an observer row and a judge row per unit),
gives the same values through the grader and through `tally grade`; rows that cannot be one
run's export are refused naming the chain."""

from __future__ import annotations

import random
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import orjson
import pytest
from ctxgap_kit import INVALID, export_rows

from evaltally.benchmarks.ctxgap.grade import CtxgapGrader
from evaltally.benchmarks.grading import grade_export
from evaltally.errors import DataError
from evaltally.report.section import GradeSettings, Section

SETTINGS = GradeSettings(resamples=300, seed=0)


def graded(rows: list[dict[str, Any]], settings: GradeSettings = SETTINGS) -> Section:
    grader = CtxgapGrader()
    for row in rows:
        grader.add(row)
    return grader.section(settings)


def approx(value: F) -> Any:
    return pytest.approx(float(value), abs=1e-12)


def test_export_rows_give_the_hand_computed_values() -> None:
    data = graded(export_rows()).data
    assert data["bootstrap"] == {"resamples": 300, "seed": 0, "level": 0.95, "unit": "task"}
    (bench,) = data["benchmarks"]
    assert bench["benchmark"] == "ctxgap" and bench["invalid_probes"] == INVALID
    (binding,) = bench["bindings"]
    assert (binding["observer_model"], binding["judge_model"]) == ("obs", "judge")
    gap = binding["gap"]
    assert gap["views"] == ["U", "T"]
    assert gap["accuracy"]["U"]["value"] == approx(F(11, 26))
    assert gap["accuracy"]["T"]["value"] == approx(F(43, 52))
    assert gap["differences"][0]["value"] == approx(F(21, 52))
    assert gap["pooled"]["U"]["value"] == approx(F(5, 12))
    assert gap["scored_only"]["U"] == approx(F(19, 40))
    assert gap["outcomes"]["U"]["missing"] == 1 and gap["outcomes"]["T"]["invalid_verdict"] == 1
    assert [r["checkpoint"] for r in binding["by_checkpoint"]] == ["c1", "c2"]
    assert [v["views"] for v in binding["by_view"]] == [["U"], ["T"], ["P"]]


def test_row_order_does_not_change_a_number() -> None:
    rows = export_rows() + export_rows("other")
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    assert graded(shuffled).data == graded(rows).data


def test_one_table_set_per_pairing_and_benchmark_labels_when_two() -> None:
    rows = export_rows("obs-a") + export_rows("obs-b") + export_rows(benchmark="second")
    section = graded(rows)
    titles = [t.title for t in section.tables]
    assert "Accuracy by view, % (ctxgap: observer obs-a, judge judge)" in titles
    assert "Accuracy by view, % (ctxgap: observer obs-b, judge judge)" in titles
    assert "Accuracy by view, % (second: observer obs, judge judge)" in titles
    assert "second: Invalid probes, not scored (1)" in titles
    assert [len(b["bindings"]) for b in section.data["benchmarks"]] == [2, 1]
    single = [t.title for t in graded(export_rows()).tables]
    assert "Information gap (observer obs, judge judge): 8 probes valid in both views, 2 tasks" in (
        single
    )


def test_tally_grade_reads_the_same_numbers_from_a_file(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    export.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in export_rows()))
    result = grade_export(export, tmp_path / "report", resamples=300)
    section = result.section("ctxgap")
    assert section.pop("title") == "CTXGAP"
    assert section == graded(export_rows()).data
    assert (tmp_path / "report" / "report.md").read_text().count("### Accuracy by view") == 1


def test_ctxgap_defaults_to_ten_thousand_resamples(tmp_path: Path) -> None:
    export = tmp_path / "export.jsonl"
    export.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in export_rows()))
    assert grade_export(export).section("ctxgap")["bootstrap"]["resamples"] == 10_000


def _without_judge_row(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows[:-1]


def _role_swapped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows[1] = {**rows[1], "role": "observer"}
    return rows


def _disagreeing(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows[1] = {**rows[1], "importance": 0}
    return rows


def _other_analysis(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows[5] = {**rows[5], "analysis": {**rows[5]["analysis"], "gap": ["T", "U"]}}
    return rows


def _bad_verdict(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows[1] = {**rows[1], "parsed": 0.7}
    return rows


def _no_invalid_list(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "invalid_probes": None} for r in rows]


@pytest.mark.parametrize(
    ("break_rows", "error", "message"),
    [
        (_without_judge_row, DataError, "has one of its two steps in the export"),
        (_role_swapped, ValueError, "step 1 answered by role 'observer'"),
        (_disagreeing, ValueError, "the two steps disagree on importance"),
        (_other_analysis, ValueError, "differs from earlier rows"),
        (_bad_verdict, ValueError, "verdict: must be 0, 0.5 or 1, got 0.7"),
        (_no_invalid_list, DataError, "no row carries invalid_probes"),
    ],
)
def test_rows_that_are_not_one_runs_export_are_refused(
    break_rows: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        graded(break_rows(export_rows()))
