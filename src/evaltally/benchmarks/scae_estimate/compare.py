"""The estimator beside the judges of `tally scae cte-judge`, on the chains both scored, from
their two exports alone (docs/scae.md, "Estimator and judges on the same chains").

Both are put in the estimator's units: a judge's blamed step t (1-based) counts for the segment
holding call t - 1, and every selector is scored like the estimator's largest negative
contribution: exact segment, within one segment, signed distance in segments, against the
segment holding the certified first wrong call. A judge's step-level hit (t = c) is kept beside.
Only chains the estimate scored (a wrong call and a negative contribution) and the judge
answered count, so every row of the table is over the same chains as far as answers allow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaltally.benchmarks.scae.parse import recorded_answer
from evaltally.errors import DataError
from evaltally.ledger.export_formats import read_export
from evaltally.report.section import GradeSettings

from .report import EstimateGrader


def _segment(chain: Mapping[str, Any], call: int) -> int | None:
    return next((s["index"] for s in chain["segments"] if s["from"] <= call < s["to"]), None)


def _rows(path: Path, kind: str) -> Iterable[dict[str, Any]]:
    return (r for r in read_export(path) if r.get("benchmark_kind") == kind)


def compare(estimate_export: Path, judge_export: Path) -> list[dict[str, Any]]:
    """One entry per selector: the estimator per model, then each judge and condition."""
    grader = EstimateGrader()
    for row in _rows(estimate_export, "scae_estimate"):
        grader.add(row)
    if not grader.chains:
        raise DataError(f"{estimate_export}: no rows of a `tally scae estimate` run")
    models = grader.section(GradeSettings(resamples=0)).data["models"]
    chains = {c["parent_chain"]: c for m in models.values() for c in m["chains"]}
    scored = {cid: c for cid, c in chains.items() if c["blame"]["scored"]}
    judges: dict[tuple[str, str], dict[str, int]] = {}
    for row in _rows(judge_export, "scae"):
        cid = str(row["episode_id"])
        if cid not in scored or int(row["sample"]) != 0:
            continue
        if int(row["first_wrong"]) != scored[cid]["first_wrong"]:
            raise DataError(
                f"chain {cid}: the judges' first wrong call {row['first_wrong']} is not the "
                f"estimate's {scored[cid]['first_wrong']}: not the same parent run"
            )
        _, step = recorded_answer(str(row["status"]), row["raw_text"],
                                  int(row["visible_steps"]))  # fmt: skip
        if step is not None:
            judges.setdefault((str(row["model"]), str(row["condition"])), {})[cid] = step
    common = sorted(set.intersection(set(scored), *(set(j) for j in judges.values())))
    if not common:
        raise DataError("no chain is scored by the estimate and answered by every judge")
    out = [_score("estimator", [scored[c]["blame"] for c in common])]
    for (judge, condition), steps in sorted(judges.items()):
        marks = []
        for cid in common:
            ref = scored[cid]["blame"]["reference"]
            seg = _segment(scored[cid], steps[cid] - 1)
            d = 0 if seg is None else seg - ref
            marks.append({"exact": float(d == 0), "within_one": float(abs(d) <= 1), "signed": d,
                          "step_hit": float(steps[cid] == scored[cid]["first_wrong"])})  # fmt: skip
        out.append(_score(f"{judge} ({condition})", marks))
    return out


def _score(name: str, marks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    n = len(marks)
    hits = [m["step_hit"] for m in marks if "step_hit" in m]
    return {
        "selector": name,
        "chains": n,
        "exact": sum(m["exact"] for m in marks) / n,
        "within_one": sum(m["within_one"] for m in marks) / n,
        "signed": sum(m["signed"] for m in marks) / n,
        "step_hit": sum(hits) / len(hits) if hits else None,
    }
