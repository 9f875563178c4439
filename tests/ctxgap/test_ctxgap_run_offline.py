"""configs/ctxgap-example.toml through the real runner, as `make demo` runs CTE: no key, no
network. The stand-ins' numbers are known in advance (the ceiling 100%, the floor 0%) or
recomputed here from the data by an independent reading of the formulas (the verbatim reader);
`tally report RUN` and `tally grade EXPORT` give identical sections."""

from __future__ import annotations

from fractions import Fraction as F
from pathlib import Path
from typing import Any

import orjson
import pytest
from ctxgap_kit import accuracy, write_sweep

from evaltally.benchmarks.ctxgap.data import Dataset, Probe, View, load_dataset
from testkit import REPO, tally


def _run_example(tmp_path: Path) -> Path:
    text = (REPO / "configs" / "ctxgap-example.toml").read_text()
    config = tmp_path / "ctxgap-example.toml"
    config.write_text(text.replace('runs_dir = "../runs"', 'runs_dir = "runs"'))
    result = tally("run", str(config))
    assert result.returncode == 0, result.stderr
    assert "exact_match: 294 finished this session: ok 294" in result.stdout
    return tmp_path / "runs" / "ctxgap-example"


def _flat(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .")


def _verbatim(p: Probe, v: View) -> F:
    """The verbatim reader's score under the exact-match judge."""
    return F(int(_flat(p.reference) in _flat(v.text)))


def _verbatim_accuracy(ds: Dataset, views: tuple[str, ...], scored: str) -> F:
    return accuracy(ds, views, scored, _verbatim)


def _binding(section: dict[str, Any], observer: str) -> dict[str, Any]:
    (bench,) = section["benchmarks"]
    found = [b for b in bench["bindings"] if b["observer_model"] == observer]
    assert len(found) == 1 and found[0]["judge_model"] == "exact_match"
    return dict(found[0])


def test_example_run_reports_the_stand_ins_known_numbers(tmp_path: Path) -> None:
    run_dir = _run_example(tmp_path)
    report = tally("report", str(run_dir))
    assert report.returncode == 0, report.stderr
    doc = orjson.loads((run_dir / "report.json").read_bytes())
    section = doc["sections"]["ctxgap"]
    assert section["bootstrap"]["resamples"] == 10_000
    for observer, expected in (("reference", 1.0), ("dont_know", 0.0)):
        b = _binding(section, observer)
        for analysis in (*b["by_view"], b["gap"], b["variants"]):
            for v in analysis["views"]:
                assert analysis["accuracy"][v]["value"] == expected
                assert analysis["coverage"][v] == 1.0
    ds = load_dataset("example")
    b = _binding(section, "verbatim")
    for one in b["by_view"]:
        (v,) = one["views"]
        assert one["accuracy"][v]["value"] == pytest.approx(float(_verbatim_accuracy(ds, (v,), v)))
    gap = b["gap"]
    want = _verbatim_accuracy(ds, ("U", "T_full"), "T_full") - _verbatim_accuracy(
        ds, ("U", "T_full"), "U"
    )
    assert gap["differences"][0]["value"] == pytest.approx(float(want))
    variants = b["variants"]
    assert variants["views"] == ["U", "public", "T_full"] and variants["n_probes"] == 28
    trio = ("U", "public", "T_full")
    assert variants["accuracy"]["public"]["value"] == pytest.approx(
        float(_verbatim_accuracy(ds, trio, "public"))
    )
    (bench,) = section["benchmarks"]
    assert [i["probe_id"] for i in bench["invalid_probes"]] == [
        "t1-cp2-latency", "t2-final-duration", "t3-final-warning"
    ]  # fmt: skip
    sources = doc["data_sources"]["ctxgap"]
    assert sources["kind"] == "ctxgap" and len(sources["files"]) == 9
    md = (run_dir / "report.md").read_text()
    assert "## CTXGAP" in md and "### Information gap (observer verbatim, judge exact_match)" in md
    # the actor arm: the same probes (cp1's), the same judge, beside the observers' views
    actor = next(a for a in b["by_view"] if a["views"] == ["actor"])
    assert actor["n_probes"] == 12 and actor["coverage"]["actor"] == 1.0
    side = md.split("### Observers side by side, %", 1)[1].split("###", 1)[0]
    assert "| A(U) [95% CI] | A(T_full) [95% CI] | A(public) [95% CI] | A(actor) [95% CI] |" in side

    export = tmp_path / "export.jsonl"
    assert tally("export", str(run_dir), "-o", str(export)).returncode == 0
    graded = tally("grade", str(export), "-o", str(tmp_path / "graded"))
    assert graded.returncode == 0, graded.stderr
    again = orjson.loads((tmp_path / "graded" / "report.json").read_bytes())
    assert again["sections"] == doc["sections"]


def _two_observers_two_judges(tmp_path: Path, extra: str = "") -> tuple[Any, dict[str, Any]]:
    """Run the example's U and T_full with observers reference and dont_know and two
    exact-match judges; (the report's process result, its ctxgap benchmark section)."""
    models = "".join(
        f'[[models]]\nkey = "{key}"\nprovider = "baseline"\nmodel = "{model}"\n'
        for key, model in (
            ("reference", "reference"),
            ("dont_know", "dont_know"),
            ("judge-a", "exact_match"),
            ("judge-b", "exact_match"),
        )
    )
    config = write_sweep(
        tmp_path,
        'data = "example"\nviews = ["U", "T_full"]' + extra,
        models=models,
        observers=("reference", "dont_know"),
        judges=("judge-a", "judge-b"),
    )
    assert tally("run", str(config)).returncode == 0
    report = tally("report", str(tmp_path / "runs" / "cg"), "--resamples", "200")
    assert report.returncode == 0, report.stderr
    doc = orjson.loads((tmp_path / "runs" / "cg" / "report.json").read_bytes())
    (bench,) = doc["sections"]["ctxgap"]["benchmarks"]
    return report, bench


def test_observers_by_judges_get_a_table_set_per_pairing(tmp_path: Path) -> None:
    report, bench = _two_observers_two_judges(tmp_path)
    pairs = {(b["observer_model"], b["judge_model"]): b for b in bench["bindings"]}
    assert sorted(pairs) == [
        ("dont_know", "judge-a"), ("dont_know", "judge-b"),
        ("reference", "judge-a"), ("reference", "judge-b"),
    ]  # fmt: skip
    for (observer, _), b in pairs.items():
        assert b["gap"]["accuracy"]["T_full"]["value"] == (observer == "reference")
        assert b["gap"]["n_probes"] == 29
    for observer, judge in pairs:
        assert f"Information gap (observer {observer}, judge {judge})" in report.stdout


def test_failed_steps_stay_in_the_denominator(tmp_path: Path) -> None:
    # The judge stand-in bound as observer fails every observer step with the reason; the
    # judge steps are then blocked. Every planned unit is still reported: 0%, coverage 0.
    config = write_sweep(tmp_path, observers=("exact_match",), judges=("exact_match",))
    run = tally("run", str(config))
    assert run.returncode == 3, run.stderr
    assert "answers judge steps only" in run.stdout + run.stderr
    report = tally("report", str(tmp_path / "runs" / "cg"), "--resamples", "0")
    assert report.returncode == 0, report.stderr
    doc = orjson.loads((tmp_path / "runs" / "cg" / "report.json").read_bytes())
    ((binding,),) = [b["bindings"] for b in doc["sections"]["ctxgap"]["benchmarks"]]
    for one in binding["by_view"]:
        (v,) = one["views"]
        assert one["accuracy"][v]["value"] == 0.0 and one["coverage"][v] == 0.0
        assert one["outcomes"][v]["failed"] == one["n_probes"]
        assert one["scored_only"][v] is None


def test_repeated_judgments_are_pooled_and_observers_compared_side_by_side(
    tmp_path: Path,
) -> None:
    """Two judge models and two samples per unit through the runner: each observer's four
    judgments per unit pool into one analysis, and one table holds every observer's views and
    gap side by side."""
    _, bench = _two_observers_two_judges(tmp_path, "\nsamples = 2")
    pooled = {p["observer_model"]: p for p in bench["pooled"]}
    assert sorted(pooled) == ["dont_know", "reference"]
    for observer, p in pooled.items():
        assert (p["judges"], p["samples"]) == (["judge-a", "judge-b"], 2)
        assert p["gap"]["accuracy"]["T_full"]["value"] == (observer == "reference")
        assert sum(p["gap"]["outcomes"]["U"].values()) == 4 * p["gap"]["n_probes"]
    md = (tmp_path / "runs" / "cg" / "report.md").read_text()
    side = md.split("### Observers side by side, %", 1)[1].split("###", 1)[0]
    assert "| observer | judge | A(U) [95% CI] | A(T_full) [95% CI] | gap A(T_full) - A(U)" in side
    assert "| reference | pooled: judge-a, judge-b x 2 sample(s) | 100.0" in side
    assert side.count("| dont_know |") == 3 and side.count("| reference |") == 3
    assert md.index("Observers side by side") < md.index("Information gap")
