"""Percentile bootstrap pieces shared by every benchmark's grader.

Convention (docs/cte.md, docs/scae.md): units (scenarios, episodes) in a stable order;
`rng = random.Random(seed)`; each of `resamples` rounds draws n indices with
`rng.randrange(n)`; the interval is the (1 - level)/2 and (1 + level)/2 percentiles of the
resampled statistic, with linear interpolation at `p * (R - 1)`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear-interpolation percentile (``p`` in [0, 1]) of already sorted values."""
    pos = p * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def draw_indices(rng: random.Random, n: int) -> list[int]:
    """n indices uniform in [0, n): the same numbers as `[rng.randrange(n) for _ in range(n)]`
    (CPython draws randrange(n) by rejection on getrandbits(n.bit_length())), without the
    per-call argument checks that made the bootstrap spend a fifth of its time in randrange."""
    bits = n.bit_length()
    getrandbits = rng.getrandbits
    out = []
    for _ in range(n):
        r = getrandbits(bits)
        while r >= n:
            r = getrandbits(bits)
        out.append(r)
    return out


def mean_interval(
    values: Sequence[float], *, seed: int, resamples: int, level: float = 0.95
) -> tuple[float | None, float | None]:
    """Percentile-bootstrap interval of the mean of `values` (None, None when empty)."""
    n = len(values)
    if not n or resamples <= 0:
        return None, None
    rng = random.Random(seed)
    means = sorted(sum(values[i] for i in draw_indices(rng, n)) / n for _ in range(resamples))
    alpha = (1 - level) / 2
    return percentile(means, alpha), percentile(means, 1 - alpha)


def ratio_interval(
    numerators: Sequence[float],
    denominators: Sequence[float],
    *,
    seed: int,
    resamples: int,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """Percentile-bootstrap interval of sum(numerators) / sum(denominators) over units drawn
    together (a scored-only rate whose units hold different numbers of scored calls); rounds
    whose draw has a zero denominator are left out."""
    n = len(numerators)
    if not n or resamples <= 0:
        return None, None
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        idx = draw_indices(rng, n)
        den = sum(denominators[i] for i in idx)
        if den:
            ratios.append(sum(numerators[i] for i in idx) / den)
    if not ratios:
        return None, None
    ratios.sort()
    alpha = (1 - level) / 2
    return percentile(ratios, alpha), percentile(ratios, 1 - alpha)
