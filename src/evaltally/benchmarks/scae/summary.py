"""Every SCAE judge statistic from judge rows at once, JSON-ready (what the report prints)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .conditions import FULL
from .judges import across_judges
from .rows import JudgeRow, answered, mean_positions, pairs, status_counts
from .rules import rule_agreement
from .stats import displacement, enrichment, late_bias, mark_fdr

SUMMARY_VERSION = 1


def judge_summary(rows: list[JudgeRow], *, seed: int, resamples: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "counts": status_counts(rows),
        "positions": mean_positions(rows),
        "displacement": displacement(pairs(rows), seed=seed, resamples=resamples),
    }
    full = answered(rows, FULL)
    if full and all(r.provenance for r in full):
        out["enrichment"] = enrichment(full, seed=seed, resamples=resamples)
        out["late_bias"] = late_bias(full, seed=seed, resamples=resamples)
        out["rules"] = rule_agreement(full, seed=seed, resamples=resamples)
    return out


def summarize(
    rows: Iterable[JudgeRow],
    *,
    seed: int = 0,
    resamples: int = 2000,
    permutations: int = 2000,
) -> dict[str, Any]:
    """`judges`: per judge (sorted) its status counts, mean position of every `ok` answer per
    condition, displacement and — when the episodes
    carry gold sets — enrichment, late bias and rule agreement; `across_judges`: Table 5 and
    the heterogeneity tests (None with one judge)."""
    by_judge: dict[str, list[JudgeRow]] = {}
    for r in rows:
        by_judge.setdefault(r.judge, []).append(r)
    judges = {
        j: judge_summary(by_judge[j], seed=seed, resamples=resamples) for j in sorted(by_judge)
    }
    mark_fdr([s["displacement"] for s in judges.values()])
    across = across_judges(by_judge, seed=seed, resamples=resamples, permutations=permutations)
    if across:
        mark_fdr([s["displacement"] for s in across["judges"].values()])
    return {
        "summary_version": SUMMARY_VERSION,
        "judges": judges,
        "across_judges": across,
        "settings": {
            "seed": seed,
            "resamples": resamples,
            "permutations": permutations,
            "level": 0.95,
            "bootstrap": "percentile, episodes resampled in id order, random.Random(seed)",
        },
    }
