"""The estimator's tests and corrections against hand-worked values (docs/scae.md)."""

from __future__ import annotations

import math

import pytest

from evaltally.benchmarks.scae_estimate.estimate import blame
from evaltally.benchmarks.scae_estimate.outcome import _perturbed, outcome
from evaltally.benchmarks.scae_estimate.source import equidistant_points
from evaltally.benchmarks.scae_estimate.stats import permutation_p, spearman, wilcoxon_p
from evaltally.report.fdr import bh_adjust


def test_bh_against_a_hand_worked_family() -> None:
    # Sorted p: 0.02, 0.07, 0.09, 0.5 (n = 4); p * n / rank = 0.08, 0.14, 0.12, 0.5; the
    # running minimum from the top gives 0.08, 0.12, 0.12, 0.5. At q = 0.10 only the first
    # survives (the step-up rule: 0.02 <= 0.025, 0.07 > 0.05, 0.09 > 0.075, 0.5 > 0.1).
    q = bh_adjust([0.5, 0.07, None, 0.02, 0.09])
    assert q[2] is None
    assert [round(x, 12) for x in q if x is not None] == [0.5, 0.12, 0.08, 0.12]
    assert [x is not None and x <= 0.10 for x in q] == [False, False, False, True, False]


def test_wilcoxon_declines_below_six_and_is_exact_from_six() -> None:
    assert wilcoxon_p([0.1, 0.2, 0.3, 0.4, 0.5]) is None
    assert wilcoxon_p([0.0] * 8 + [1.0] * 5) is None  # zeros do not count
    # Six positive differences: W+ = 21 only when every sign is +: P = 1/64, two-sided 2/64.
    assert wilcoxon_p([1, 2, 3, 4, 5, 6]) == pytest.approx(2 / 64)
    # Ties get average ranks (doubled internally): 1,1,2,2,3,3 -> ranks 1.5,1.5,3.5,3.5,5.5,5.5.
    assert wilcoxon_p([1, -1, 2, -2, 3, -3]) == 1.0


def test_permutation_is_exact_for_small_arms() -> None:
    # 20 splits of six values into 3 + 3; only the two extreme ones reach |diff| = 3.
    assert permutation_p([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)
    # Two constant arms of four: 2 of the 70 splits are as extreme.
    assert permutation_p([1.0] * 4, [0.975] * 4) == pytest.approx(2 / 70)
    assert permutation_p([0.5] * 3, [0.5] * 3) == 1.0
    assert permutation_p([], [1.0]) is None


def test_spearman_and_points() -> None:
    assert spearman([0.1, 0.2, 0.3, 0.4], [0, 0.5, 0.7, 1.1]) == pytest.approx(1.0)
    assert spearman([0.1, 0.2, 0.3], [0, 0, 0]) is None
    assert equidistant_points(40, 5) == (0, 8, 16, 24, 32)
    assert equidistant_points(3, 5) == (0, 1, 2)


def test_outcomes_and_the_plausible_wrong_answer() -> None:
    hits = [True, False, True, True]
    assert outcome("share", hits) == 0.75
    assert outcome("final", hits) == 1.0 and outcome("exact", hits) == 0.0
    assert _perturbed({"ok": True, "balance": 5}) == ({"ok": True, "balance": 6}, True)
    assert _perturbed({"b": [None]}) == ({"b": [0]}, True)
    assert _perturbed({}) == ({}, False)


def test_blame_ties_take_the_expectation_over_a_uniform_tie_break() -> None:
    segs = [{"index": i, "from": 8 * i, "to": 8 * i + 8, "delta": d}
            for i, d in enumerate([-0.025, 0.0, -0.025, 0.01])]  # fmt: skip
    # First wrong call 12 (1-based) is call 11, in segment 1; the minimum ties at 0 and 2.
    b = blame(segs, 12)
    assert b["exact"] == 0.0 and b["within_one"] == 1.0 and b["signed"] == 0.0
    assert b["chosen"] == [0, 2] and math.isclose(b["chance_exact"], 0.25)
    assert blame(segs, None)["scored"] is False
