"""Benjamini-Hochberg false discovery rate control, shared by every report that tests a family
of hypotheses (the SCAE judges' sign tests, the estimator's segments). The paper's convention
(B.5) is q = 0.10 per family."""

from __future__ import annotations

from collections.abc import Sequence

FDR_Q = 0.10


def bh_adjust(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg q-values, in the input order: q_(i) = min_{j >= i} p_(j) n / j over the
    n tested hypotheses (None entries stay None and do not count in n); a hypothesis is
    significant when its q-value is <= the family's level."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    n = len(tested)
    out: list[float | None] = [None] * len(pvalues)
    running = 1.0
    for rank in range(n, 0, -1):
        p, i = tested[rank - 1]
        running = min(running, p * n / rank)
        out[i] = running
    return out
