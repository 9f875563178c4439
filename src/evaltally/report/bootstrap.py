"""Bootstrap helpers shared by benchmark graders: resample indices and percentile intervals.

A grader draws `n` indices per resample from one `random.Random(seed)`, recomputes its metric
on the resample, and reports the `percentile` interval of the draws (docs of each benchmark
say what is resampled: CTE-Bench resamples scenarios).
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
