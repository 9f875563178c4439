"""Several judges on their common episodes (Table 5) and the between-judge heterogeneity test.

Common episodes: those every judge answered `ok` in both conditions. On them each judge gets
its displacement and enrichment (`stats`), with one enrichment baseline for all (it depends on
the episodes only).

Heterogeneity (docs/scae.md): for a per-episode value x_ij (episode i, judge j) — d_ij for
displacement, hit_ij - g_i/T_i for enrichment — the statistic is the spread of the judges'
means, S = sum_j (mean_i x_ij - grand mean)^2. Under the null that the judges are exchangeable
within an episode, permuting each episode's J values among the judges leaves the distribution
of S unchanged; p = (1 + #{S_perm >= S_obs}) / (1 + R) over R permutations drawn with
`random.Random(seed)` (episodes in id order, each row shuffled with `rng.sample`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from .conditions import FULL
from .rows import JudgeRow, answered, pairs
from .stats import displacement, enrichment, gold_steps

#: Float slack when comparing a permuted statistic with the observed one: a permutation that
#: reproduces the observed assignment must count as "at least as extreme".
_EPS = 1e-12


def common_episodes(rows_by_judge: Mapping[str, Sequence[JudgeRow]]) -> list[str]:
    sets = [{p.episode_id for p in pairs(rows)} for rows in rows_by_judge.values()]
    return sorted(set.intersection(*sets)) if sets else []


def spread_statistic(matrix: Sequence[Sequence[float]]) -> float:
    """sum over judges of (judge mean - grand mean)^2; rows are episodes, columns judges."""
    n, judges = len(matrix), len(matrix[0])
    means = [sum(row[j] for row in matrix) / n for j in range(judges)]
    grand = sum(means) / judges
    return sum((m - grand) ** 2 for m in means)


def heterogeneity(
    matrix: Sequence[Sequence[float]], *, seed: int, permutations: int
) -> dict[str, Any]:
    """Within-episode permutation test of equal judge means (see the module docstring)."""
    if len(matrix) < 1 or len(matrix[0]) < 2 or permutations <= 0:
        return {"statistic": None, "p": None, "permutations": permutations}
    observed = spread_statistic(matrix)
    rng = random.Random(seed)
    extreme = 0
    for _ in range(permutations):
        shuffled = [rng.sample(row, len(row)) for row in matrix]
        extreme += spread_statistic(shuffled) >= observed - _EPS
    means = [sum(row[j] for row in matrix) / len(matrix) for j in range(len(matrix[0]))]
    return {
        "statistic": observed,
        "range": max(means) - min(means),
        "p": (1 + extreme) / (1 + permutations),
        "permutations": permutations,
    }


def across_judges(
    rows_by_judge: Mapping[str, Sequence[JudgeRow]],
    *,
    seed: int,
    resamples: int,
    permutations: int,
) -> dict[str, Any] | None:
    """Table 5, or None with fewer than two judges."""
    if len(rows_by_judge) < 2:
        return None
    common = common_episodes(rows_by_judge)
    keep = set(common)
    judges = sorted(rows_by_judge)
    restricted = {j: [r for r in rows_by_judge[j] if r.episode_id in keep] for j in judges}
    with_gold = all(r.provenance for rows in restricted.values() for r in rows)
    out: dict[str, Any] = {"n_common": len(common), "judges": {}}
    d_matrix: list[list[float]] = [[] for _ in common]
    e_matrix: list[list[float]] = [[] for _ in common]
    for j in judges:
        ps = pairs(restricted[j])
        entry: dict[str, Any] = {"displacement": displacement(ps, seed=seed, resamples=resamples)}
        for i, p in enumerate(ps):
            d_matrix[i].append(p.displacement)
        if with_gold:
            full = answered(restricted[j], FULL)
            entry["enrichment"] = enrichment(full, seed=seed, resamples=resamples)
            out["baseline"] = entry["enrichment"]["baseline"]
            for i, r in enumerate(full):
                hit = r.step is not None and r.provenance[r.step - 1].gold
                e_matrix[i].append(float(hit) - len(gold_steps(r)) / r.total_steps)
        out["judges"][j] = entry
    out["heterogeneity"] = {
        "displacement": heterogeneity(d_matrix, seed=seed, permutations=permutations),
        "enrichment": (
            heterogeneity(e_matrix, seed=seed, permutations=permutations) if with_gold else None
        ),
    }
    return out
