"""Displacement, the exact sign test, enrichment, late bias and the zero-LLM rules, on fixtures
whose values are computed by hand.

Fixture (judge "a"; per step: O = operates on a gold object, digit = gold objects revealed;
f = 0.6 so k = 2, 3, 1):

  E1  T=4  -0 O0 -1 -0      gold steps {2, 3}      full 3   prefix 1   d = 2/4 = 0.5
  E2  T=5  -1 -0 -0 O1 -2   gold steps {1, 4, 5}   full 5   prefix 3   d = 2/5 = 0.4
  E3  T=2  -0 -0            gold steps {}          full 2   prefix 1   d = 1/2 = 0.5
"""

from __future__ import annotations

import random

import pytest
from scae_kit import pair_rows, prov

from evaltally.benchmarks.scae.conditions import FULL, PREFIX
from evaltally.benchmarks.scae.rows import JudgeRow, answered, pairs, status_counts
from evaltally.benchmarks.scae.rules import rule_agreement
from evaltally.benchmarks.scae.stats import (
    displacement,
    enrichment,
    late_bias,
    lateness,
    mark_fdr,
    sign_test,
)
from evaltally.errors import DataError
from evaltally.report.bootstrap import percentile

ROWS = (
    pair_rows("E1", "a", 4, 3, 1, prov("-0O0-1-0"))
    + pair_rows("E2", "a", 5, 5, 3, prov("-1-0-0O1-2"))
    + pair_rows("E3", "a", 2, 2, 1, prov("-0-0"))
)
FULL_ROWS = answered(ROWS, FULL)


def test_the_papers_split_gives_the_papers_sign_test_p_value() -> None:
    # Scripted judges: 70 episodes, 59 moved later, 1 earlier, 10 ties (§4.6, Fig. 6a).
    rows = []
    for i in range(70):
        full, prefix = (8, 2) if i < 59 else (1, 3) if i == 59 else (2, 2)
        rows += pair_rows(f"ep{i:02d}", "judge", 10, full, prefix)
    d = displacement(pairs(rows), seed=0, resamples=200)
    assert (d["n"], d["later"], d["earlier"], d["ties"]) == (70, 59, 1, 10)
    assert d["sign_p"] == 122 / 2**60  # 2 * (C(60,0) + C(60,1)) / 2^60
    assert f"{d['sign_p']:.2g}" == "1.1e-16"
    assert d["share_later"] == pytest.approx(59 / 70)


@pytest.mark.parametrize(
    ("later", "earlier", "p"),
    [(0, 0, None), (1, 0, 1.0), (3, 0, 0.25), (5, 5, 1.0), (9, 1, 22 / 1024), (1, 9, 22 / 1024)],
)
def test_sign_test_small_cases(later: int, earlier: int, p: float | None) -> None:
    assert sign_test(later, earlier) == p


def test_sign_test_stays_exact_far_in_the_tail() -> None:
    assert sign_test(200, 0) == 2 / 2**200
    assert sign_test(0, 1000) == pytest.approx(2 / 2**1000, rel=1e-12)


def test_displacement_by_hand() -> None:
    d = displacement(pairs(ROWS), seed=0, resamples=500)
    assert d["n"] == 3
    assert d["pos_full"] == pytest.approx((3 / 4 + 5 / 5 + 2 / 2) / 3)
    assert d["pos_prefix"] == pytest.approx((1 / 4 + 3 / 5 + 1 / 2) / 3)
    assert d["mean"]["value"] == pytest.approx((0.5 + 0.4 + 0.5) / 3)
    assert d["median"] == 0.5
    assert (d["later"], d["earlier"], d["ties"], d["sign_p"]) == (3, 0, 0, 0.25)
    # Uniform null (T - k)/2T with k = prefix_length(T): T = 4, 5, 2 -> k = 2, 3, 1.
    assert d["uniform_null"] == pytest.approx((2 / 8 + 2 / 10 + 1 / 4) / 3)


def test_sign_tests_are_marked_after_bh_fdr_across_the_judges() -> None:
    # n = 2 tested: q = 0.06 * 2 / 1 = 0.12 and 0.2 * 2 / 2 = 0.2: 0.06 < 0.10 uncorrected,
    # but nothing survives; with 0.01 and 0.04 both do (q = 0.02, 0.04).
    family = [{"sign_p": 0.06}, {"sign_p": None}, {"sign_p": 0.2}]
    mark_fdr(family)
    assert [d["sign_q"] for d in family] == [pytest.approx(0.12), None, pytest.approx(0.2)]
    assert not any(d["significant"] for d in family)
    family = [{"sign_p": 0.04}, {"sign_p": 0.01}]
    mark_fdr(family)
    assert [d["sign_q"] for d in family] == [pytest.approx(0.04), pytest.approx(0.02)]
    assert all(d["significant"] for d in family)


def test_the_uniform_null_is_not_zero() -> None:
    # A judge picking uniformly among the visible steps: 0.20 at T = 20 with a 0.6 prefix.
    (pair,) = pairs(pair_rows("e", "j", 20, 1, 1))
    assert pair.prefix_visible == 12 and pair.uniform_null == pytest.approx(0.20)


def test_the_displacement_interval_is_the_documented_bootstrap() -> None:
    d = displacement(pairs(ROWS), seed=7, resamples=500)
    values = [0.5, 0.4, 0.5]  # episodes in id order
    rng = random.Random(7)
    means = sorted(sum(values[rng.randrange(3)] for _ in range(3)) / 3 for _ in range(500))
    assert d["mean"]["ci_low"] == pytest.approx(percentile(means, 0.025))
    assert d["mean"]["ci_high"] == pytest.approx(percentile(means, 0.975))


def test_only_episodes_answered_in_both_conditions_are_paired() -> None:
    rows = (
        ROWS
        + pair_rows("E4", "a", 6, 6, None, prefix_status="out_of_range")
        + pair_rows("E5", "a", 6, None, 2, full_status="unparsable")
        + pair_rows("E6", "a", 6, None, None, full_status="failed", prefix_status="blocked")
    )
    assert [p.episode_id for p in pairs(rows)] == ["E1", "E2", "E3"]
    counts = status_counts(rows)
    assert counts[FULL]["ok"] == 4 and counts[FULL]["unparsable"] == 1
    assert counts[FULL]["failed"] == 1
    assert counts[PREFIX]["ok"] == 4 and counts[PREFIX]["out_of_range"] == 1
    assert counts[PREFIX]["blocked"] == 1


def test_enrichment_and_late_bias_by_hand() -> None:
    e = enrichment(FULL_ROWS, seed=0, resamples=500)
    assert (e["n"], e["hits"]) == (3, 2)
    assert e["rate"]["value"] == pytest.approx(2 / 3)
    assert e["baseline"] == pytest.approx((2 / 4 + 3 / 5 + 0 / 2) / 3)
    assert e["step_share"] == pytest.approx(5 / 11)
    assert e["diff"]["value"] == pytest.approx(2 / 3 - (2 / 4 + 3 / 5) / 3)
    # E1 blames gold step 3, rank 2 of 2: q = 1.5 / 2; E2 blames step 5, rank 3 of 3: 2.5 / 3.
    assert [lateness(r) for r in FULL_ROWS[:2]] == [0.75, 2.5 / 3]
    lb = late_bias(FULL_ROWS, seed=0, resamples=500)
    assert lb["n"] == 2 and lb["mean"] == pytest.approx((0.75 + 2.5 / 3) / 2)
    assert lb["diff"]["value"] == pytest.approx((0.75 + 2.5 / 3) / 2 - 0.5)


def test_lateness_has_a_uniform_null_of_one_half_for_every_class_size() -> None:
    for m in range(1, 9):
        code = "-1" * m
        qs = [
            lateness(JudgeRow("e", "j", FULL, "ok", t, m, m, prov(code))) for t in range(1, m + 1)
        ]
        assert sum(qs) / m == pytest.approx(0.5)


def test_rule_agreement_and_chance_rates_by_hand() -> None:
    r = rule_agreement(FULL_ROWS, seed=0, resamples=500)
    agreement = {name: v["agreement"] for name, v in r["rules"].items()}
    assert agreement == pytest.approx(
        {
            "first_revealing": 1 / 3,  # E1 -> 3 (agrees), E2 -> 1, E3 abstains
            "first_operating": 0.0,  # E1 -> 2, E2 -> 4, E3 abstains
            "first_gold": 0.0,  # E1 -> 2, E2 -> 1
            "last_gold": 2 / 3,  # E1 -> 3, E2 -> 5
            "last_step": 2 / 3,  # E1 -> 4, E2 -> 5, E3 -> 2
            "most_revealing": 2 / 3,  # E1 -> 3, E2 -> 5 (reveals 2)
        }
    )
    assert r["chance"] == pytest.approx((1 / 4 + 1 / 5 + 1 / 2) / 3)
    # Uniform pick inside the class: E1 1/2, E2 1/3, E3 0 (its blamed step is not in class).
    assert r["within_class_chance"] == pytest.approx((1 / 2 + 1 / 3) / 3)
    assert r["gold_steps_per_episode"] == pytest.approx(5 / 3)
    assert r["best_over_within_class"] == pytest.approx((2 / 3) / ((1 / 2 + 1 / 3) / 3))
    last = r["rules"]["last_gold"]["diff"]
    assert last["value"] == pytest.approx(2 / 3 - (1 / 4 + 1 / 5 + 1 / 2) / 3)


def test_inconsistent_rows_are_refused_with_their_names() -> None:
    with pytest.raises(DataError, match=r"episode E1, judge a, condition prefix\): step 3 outside"):
        JudgeRow("E1", "a", PREFIX, "ok", 3, 4, 2)
    with pytest.raises(DataError, match="a step is given exactly when the status is ok"):
        JudgeRow("E1", "a", FULL, "failed", 2, 4, 4)
    with pytest.raises(DataError, match="the full condition shows every step"):
        JudgeRow("E1", "a", FULL, "ok", 2, 4, 3)
    with pytest.raises(DataError, match="unknown status 'parse_error'"):
        JudgeRow("E1", "a", FULL, "parse_error", None, 4, 4)
    with pytest.raises(DataError, match="3 provenance entries for 4 steps"):
        JudgeRow("E1", "a", FULL, "ok", 2, 4, 4, prov("-0-0-0"))
    with pytest.raises(DataError, match="episode E1 has two full rows"):
        pairs(ROWS + ROWS[:1])
