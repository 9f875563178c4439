"""Tests and corrections of the estimator (the paper's B.5 conventions; docs/scae.md).

- `permutation_p`: two-sided exact permutation test of a difference in means between two
  samples (every split enumerated up to `EXACT_SPLITS`, beyond that a seeded Monte Carlo
  estimate (1 + hits) / (1 + draws)); two constant, equal samples give p = 1.
- `wilcoxon_p`: exact two-sided Wilcoxon signed-rank test of paired differences against 0
  (zeros dropped, tied magnitudes get average ranks); like the paper's implementation it gives
  no p-value (None) below `WILCOXON_MIN_N` nonzero differences.
- BH-FDR: `report.fdr.bh_adjust`, at `FDR_Q` = 0.10 per family.
- `spearman`: rank correlation with average ranks; None below 3 pairs or for a constant side.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

EXACT_SPLITS = 200_000
MONTE_CARLO_DRAWS = 20_000
WILCOXON_MIN_N = 6
_EPS = 1e-12


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def permutation_p(a: Sequence[float], b: Sequence[float], *, seed: int = 0) -> float | None:
    """Two-sided permutation p-value of mean(a) - mean(b); None when a sample is empty."""
    if not a or not b:
        return None
    pooled = [*a, *b]
    n, k, total = len(pooled), len(a), sum(pooled)
    observed = abs(_mean(a) - _mean(b))

    def extreme(first_sum: float) -> bool:
        diff = first_sum / k - (total - first_sum) / (n - k)
        return abs(diff) >= observed - _EPS

    if math.comb(n, k) <= EXACT_SPLITS:
        hits = splits = 0
        for chosen in itertools.combinations(pooled, k):
            splits += 1
            hits += extreme(sum(chosen))
        return hits / splits
    rng = random.Random(seed)
    hits = sum(extreme(sum(rng.sample(pooled, k))) for _ in range(MONTE_CARLO_DRAWS))
    return (1 + hits) / (1 + MONTE_CARLO_DRAWS)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def wilcoxon_p(differences: Sequence[float]) -> float | None:
    """Exact two-sided signed-rank p-value; None below WILCOXON_MIN_N nonzero differences."""
    d = [x for x in differences if abs(x) > _EPS]
    if len(d) < WILCOXON_MIN_N:
        return None
    # Doubled ranks are integers even with ties, so the null distribution is a count table.
    ranks = [round(2 * r) for r in _ranks([abs(x) for x in d])]
    w = sum(r for r, x in zip(ranks, d, strict=True) if x > 0)
    counts = {0: 1}
    for r in ranks:
        nxt = dict(counts)
        for s, c in counts.items():
            nxt[s + r] = nxt.get(s + r, 0) + c
        counts = nxt
    total = 2 ** len(d)
    low = sum(c for s, c in counts.items() if s <= w) / total
    high = sum(c for s, c in counts.items() if s >= w) / total
    return float(min(1.0, 2 * min(low, high)))


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) != len(y) or len(x) < 3:
        return None
    rx, ry = _ranks(x), _ranks(y)
    mx, my = _mean(rx), _mean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)
