"""Several judges: Table 5 on their common episodes and the within-episode permutation test."""

from __future__ import annotations

import random

import pytest
from scae_kit import pair_rows, prov

from evaltally.benchmarks.scae.judges import (
    across_judges,
    common_episodes,
    heterogeneity,
)
from evaltally.benchmarks.scae.rows import JudgeRow

GOLD = prov("-0O0-0-1-0")  # T = 5, gold steps {2, 4}, share 0.4; prefix k = 3


def judges_fixture() -> dict[str, list[JudgeRow]]:
    """Judge "a" moves 2 steps later and blames gold step 4; "b" moves 2 steps earlier and
    blames step 1 (no gold provenance); "c" like "a" but never answers ep7's prefix call."""
    rows: dict[str, list[JudgeRow]] = {"a": [], "b": [], "c": []}
    for i in range(8):
        eid = f"ep{i}"
        rows["a"] += pair_rows(eid, "a", 5, 4, 2, GOLD)
        rows["b"] += pair_rows(eid, "b", 5, 1, 3, GOLD)
        status = "failed" if i == 7 else "ok"
        rows["c"] += pair_rows(eid, "c", 5, 4, 2, GOLD, prefix_status=status)
    return rows


def test_common_episodes_are_those_every_judge_answered_in_both_conditions() -> None:
    assert common_episodes(judges_fixture()) == [f"ep{i}" for i in range(7)]


def test_table5_per_judge_on_the_common_episodes() -> None:
    t5 = across_judges(judges_fixture(), seed=0, resamples=300, permutations=300)
    assert t5 is not None and t5["n_common"] == 7
    assert t5["baseline"] == pytest.approx(0.4)
    a, b = t5["judges"]["a"], t5["judges"]["b"]
    assert a["displacement"]["mean"]["value"] == pytest.approx(0.4)
    assert (a["displacement"]["later"], a["displacement"]["n"]) == (7, 7)
    assert a["displacement"]["sign_p"] == 2 / 2**7
    assert b["displacement"]["mean"]["value"] == pytest.approx(-0.4)
    assert a["enrichment"]["rate"]["value"] == 1.0 and a["enrichment"]["significant"]
    assert b["enrichment"]["rate"]["value"] == 0.0 and b["enrichment"]["significant"]
    # Judges a and c answer identically on common episodes; b differs in both statistics.
    het = t5["heterogeneity"]
    assert het["displacement"]["range"] == pytest.approx(0.8)
    assert het["displacement"]["p"] < 0.01 and het["enrichment"]["p"] < 0.01


def test_one_judge_has_no_across_judges_table() -> None:
    assert (
        across_judges({"a": judges_fixture()["a"]}, seed=0, resamples=10, permutations=10) is None
    )


def test_heterogeneity_with_a_fixed_seed() -> None:
    # 8 episodes, two judges: +0.5 vs -0.5 everywhere. S is maximal only when no episode's pair
    # is swapped or all are, so each permutation is as extreme with probability 2 / 2^8 and the
    # count of extreme ones among 4000 is Binomial(4000, 1/128), mean 31.25.
    matrix = [[0.5, -0.5] for _ in range(8)]
    got = heterogeneity(matrix, seed=11, permutations=4000)
    assert got["statistic"] == pytest.approx(0.5) and got["range"] == 1.0
    assert got["p"] == (1 + 29) / (1 + 4000)  # pinned: seed 11 draws 29 extreme permutations
    assert heterogeneity(matrix, seed=11, permutations=4000) == got  # seeded: reproducible
    for seed in range(5):
        extreme = heterogeneity(matrix, seed=seed, permutations=4000)["p"] * 4001 - 1
        assert 12 <= round(extreme) <= 55  # within about 3.5 sd of 31.25


def test_identical_judges_are_never_heterogeneous() -> None:
    matrix = [[x, x, x] for x in (0.1, 0.5, -0.2, 0.0)]
    got = heterogeneity(matrix, seed=3, permutations=200)
    assert got["statistic"] == 0.0 and got["p"] == 1.0


def test_heterogeneity_p_is_uniformish_under_exchangeable_judges() -> None:
    rng = random.Random(5)
    matrix = [[rng.choice([-0.2, 0.0, 0.3]) for _ in range(3)] for _ in range(30)]
    got = heterogeneity(matrix, seed=1, permutations=999)
    assert got["p"] == 479 / 1000  # pinned for seed 1; no evidence of a difference


def test_degenerate_inputs_give_no_test() -> None:
    assert heterogeneity([], seed=0, permutations=10)["p"] is None
    assert heterogeneity([[0.1], [0.2]], seed=0, permutations=10)["p"] is None
