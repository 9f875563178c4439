"""Scores in `tally view` while a sweep runs: per model and benchmark (the `prompts` grader's
numbers, from the export rows of the scored benchmarks), and each listed call's score.

Both come from the same code as `tally report`: the rows are the export's (ledger/export.py,
with the run's enrichment), scored by each benchmark's `answer_fields`; a call without an
answer yet has no score and counts as 0 under intention-to-evaluate, as in the report.
"""

from __future__ import annotations

from typing import Any

from evaltally.errors import EvaltallyError
from evaltally.ledger.calls_page import raw_texts
from evaltally.records import PlannedCall
from evaltally.report.section import GradeSettings
from evaltally.view.runs import ViewRun


def _scored_labels(run: ViewRun) -> set[str]:
    config = run.config()
    if config is None:
        return set()
    labels = set()
    for bench in config.benchmarks:
        loaded = run.benchmark(bench.label)
        if loaded is not None and getattr(loaded, "scorer", None) is not None:
            labels.add(bench.label)
    return labels


def live_scores(run: ViewRun) -> list[dict[str, Any]]:
    """One entry per model and scored benchmark: accuracy (ITE), coverage, scored-only
    accuracy (point values; the report adds intervals)."""
    labels = _scored_labels(run)
    config = run.config()
    if not labels or config is None:
        return []
    from evaltally.benchmarks.enrich import export_enricher
    from evaltally.benchmarks.prompts.report import PromptsGrader
    from evaltally.ledger import export_rows

    benchmarks = {label: b for label in labels if (b := run.benchmark(label)) is not None}
    grader = PromptsGrader()
    enrich = export_enricher(config, run.run_dir, benchmarks)
    for row in export_rows(run.run_dir, enrich=enrich):
        if row["benchmark"] in labels:
            grader.add(row)
    data = grader.section(GradeSettings(resamples=0)).data
    out = []
    for bench, models in data.get("scores", {}).items():
        for model, s in models.items():
            out.append(
                {
                    "model": model,
                    "benchmark": bench,
                    "scorer": f"{s['scorer']['name']} v{s['scorer']['version']}",
                    "calls": s["calls"],
                    "scored": s["scored"],
                    **{k: s[k]["value"] for k in ("accuracy_ite", "coverage", "accuracy_scored")},
                }
            )
    return out


def add_row_scores(run: ViewRun, calls: list[dict[str, Any]]) -> None:
    """Set `score` (0-1, or None) on each listed call its benchmark scores."""
    scored = [c for c in calls if c["status"] in ("ok", "parse_error")]
    benches = {c["benchmark"]: run.benchmark(c["benchmark"]) for c in scored}
    wanted = [c["call_id"] for c in scored if getattr(benches[c["benchmark"]], "scorer", None)]
    if not wanted:
        return
    with run.read("read the listed answers") as conn:
        texts = raw_texts(conn, wanted)
    for c in scored:
        bench = benches[c["benchmark"]]
        if bench is None or c["call_id"] not in texts:
            continue
        call = PlannedCall(
            c["call_id"],
            c["chain_id"],
            c["step"],
            c["model"],
            c["benchmark"],
            c["item_id"],
            c["sample"],
            c["protocol"],
            c["spec"],
        )
        row = {**c, "raw_text": texts[c["call_id"]]}
        try:
            value = bench.answer_fields(call, row).get("score")
        except EvaltallyError:
            continue  # the report names the problem; the table just shows no score
        if value is not None:
            c["score"] = value
