"""Collider displacement, the exact sign test, gold-provenance enrichment and late bias.

Definitions (the paper's §3.9, §4.6 and appendix C.9; formulas in docs/scae.md):

- pos(t) = t / T_i (T_i the episode's full length, in both conditions).
- Over the n episodes answered in both conditions (`rows.pairs`): d_i = pos(t_i^full) -
  pos(t_i^prefix); displacement = mean d_i with a percentile-bootstrap 95% interval over
  episodes; its median; later = #{d_i > 0}, earlier = #{d_i < 0}, ties = #{d_i = 0}; share
  later = later / n; the two-sided exact sign test on later vs earlier, ties excluded.
- Over the episodes the full-trace judge answered: hit_i = 1 if the blamed step has gold
  provenance; rate = mean hit_i; baseline = mean g_i / T_i (g_i gold-provenance steps: the
  exact expected rate of a judge blaming a uniform random step); enrichment = rate - baseline
  = mean(hit_i - g_i / T_i) with its bootstrap interval; `step_share` = sum g_i / sum T_i is
  reported beside it.
- Late bias, over hits: with the episode's gold-provenance steps in order and the blamed one
  at rank r of m, q_i = (r - 1/2) / m; a uniform pick within the class has E[q] = 1/2 exactly
  for every m, so late bias = mean q_i against 0.5, diff = mean(q_i - 1/2) with its interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from evaltally.report.bootstrap import mean_interval
from evaltally.report.fdr import FDR_Q, bh_adjust

from .rows import JudgeRow, Pair

Cell = dict[str, float | None]


def sign_test(later: int, earlier: int) -> float | None:
    """Two-sided exact binomial sign test (ties already excluded): p = min(1, 2 * P(X <= k))
    with X ~ Binomial(later + earlier, 1/2) and k = min(later, earlier). Exact in integers, so
    59 vs 1 gives 122 / 2**60 = 1.06e-16. None when there is no untied episode."""
    n = later + earlier
    if n == 0:
        return None
    tail = sum(math.comb(n, i) for i in range(min(later, earlier) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def interval_cell(values: Sequence[float], *, seed: int, resamples: int) -> Cell:
    """{"value": mean, "ci_low", "ci_high"} of per-episode values (None when empty)."""
    lo, hi = mean_interval(values, seed=seed, resamples=resamples)
    return {"value": sum(values) / len(values) if values else None, "ci_low": lo, "ci_high": hi}


def excludes_zero(cell: Cell) -> bool:
    lo, hi = cell["ci_low"], cell["ci_high"]
    return lo is not None and hi is not None and (lo > 0 or hi < 0)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def displacement(pairs: Sequence[Pair], *, seed: int, resamples: int) -> dict[str, Any]:
    d = [p.displacement for p in pairs]
    later = sum(p.full > p.prefix for p in pairs)
    earlier = sum(p.full < p.prefix for p in pairs)
    return {
        "n": len(pairs),
        "pos_full": _mean([p.full / p.total_steps for p in pairs]),
        "pos_prefix": _mean([p.prefix / p.total_steps for p in pairs]),
        "mean": interval_cell(d, seed=seed, resamples=resamples),
        "uniform_null": _mean([p.uniform_null for p in pairs]),
        "median": statistics.median(d) if d else None,
        "later": later,
        "earlier": earlier,
        "ties": len(pairs) - later - earlier,
        "share_later": later / len(pairs) if pairs else None,
        "sign_p": sign_test(later, earlier),
    }


def mark_fdr(displacements: Sequence[dict[str, Any]]) -> None:
    """BH-FDR over a family of displacement sign tests (one per judge): adds `sign_q` and
    `significant` (q <= 0.10, the paper's B.5 convention) to each."""
    for d, q in zip(displacements, bh_adjust([d["sign_p"] for d in displacements]), strict=True):
        d["sign_q"] = q
        d["significant"] = q is not None and q <= FDR_Q


def gold_steps(row: JudgeRow) -> list[int]:
    """The 1-based steps with gold provenance, in order."""
    return [s for s, p in enumerate(row.provenance, 1) if p.gold]


def _hit(row: JudgeRow) -> bool:
    return row.step is not None and row.provenance[row.step - 1].gold


def enrichment(full_rows: Sequence[JudgeRow], *, seed: int, resamples: int) -> dict[str, Any]:
    """`full_rows`: the full-trace judge's `ok` rows of episodes with a gold set."""
    hits = [float(_hit(r)) for r in full_rows]
    shares = [len(gold_steps(r)) / r.total_steps for r in full_rows]
    diff = interval_cell([h - g for h, g in zip(hits, shares, strict=True)], seed=seed,
                         resamples=resamples)  # fmt: skip
    total = sum(r.total_steps for r in full_rows)
    return {
        "n": len(full_rows),
        "hits": int(sum(hits)),
        "rate": interval_cell(hits, seed=seed, resamples=resamples),
        "baseline": _mean(shares),
        "step_share": sum(len(gold_steps(r)) for r in full_rows) / total if total else None,
        "diff": diff,
        "significant": excludes_zero(diff),
    }


def lateness(row: JudgeRow) -> float:
    """q = (r - 1/2) / m for a blamed step at rank r among the m gold-provenance steps."""
    steps = gold_steps(row)
    if row.step not in steps:
        raise ValueError(f"episode {row.episode_id}: step {row.step} has no gold provenance")
    return (steps.index(row.step) + 0.5) / len(steps)


def late_bias(full_rows: Sequence[JudgeRow], *, seed: int, resamples: int) -> dict[str, Any]:
    q = [lateness(r) for r in full_rows if _hit(r)]
    diff = interval_cell([x - 0.5 for x in q], seed=seed, resamples=resamples)
    return {
        "n": len(q),
        "mean": _mean(q),
        "null": 0.5,
        "diff": diff,
        "significant": excludes_zero(diff),
    }
