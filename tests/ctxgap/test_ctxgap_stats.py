"""CTXGAP statistics on a fixture small enough to compute by hand (values in the comments).

Weights (views U and T on all 8 probes): category X has probes a1 a2 b1 with important atoms
a1 b1 -> w_X = 2/3; category Y has probes a3 b2 b3 b4, important atoms a3 and B's atom f
(shared by b3 and b4) -> w_Y = 2/4; category Z (task C only) has no important atom -> w_Z = 0,
so task C carries no weight and is left out of the equal-task mean.
"""

from __future__ import annotations

from fractions import Fraction as F
from typing import Any

import pytest
from ctxgap_kit import rows

from evaltally.benchmarks.ctxgap.stats import POOLED_NOTE, Options, analyze
from evaltally.benchmarks.ctxgap.units import units_from_rows
from evaltally.errors import DataError


def result(**opts: Any) -> dict[str, Any]:
    units = units_from_rows(rows())
    return analyze(units, Options(resamples=200, **opts))["bindings"][0]  # type: ignore[no-any-return]


def approx(value: F) -> Any:
    return pytest.approx(float(value), abs=1e-12)


def test_weights_count_important_atoms_over_probes() -> None:
    gap = result()["gap"]
    weights = {
        w["category"]: (w["n_probes"], w["n_important_atoms"], w["weight"]) for w in gap["weights"]
    }
    assert weights == {"X": (3, 2, approx(F(2, 3))), "Y": (4, 2, 0.5), "Z": (1, 0, 0.0)}


def test_gap_equal_task_pooled_scored_only_and_coverage_by_hand() -> None:
    gap = result()["gap"]
    assert gap["views"] == ["U", "T"] and gap["n_probes"] == 8 and gap["n_tasks"] == 2
    assert gap["tasks_without_weight"] == ["C"]
    # A_A(U) = (2/3 + 1/4) / (11/6) = 1/2, A_B(U) = (1/2 + 1/4) / (13/6) = 9/26
    # A_A(T) = 1, A_B(T) = (2/3 + 1/4 + 1/2) / (13/6) = 17/26
    assert gap["accuracy"]["U"]["value"] == approx(F(11, 26))
    assert gap["accuracy"]["T"]["value"] == approx(F(43, 52))
    (diff,) = gap["differences"]
    assert (diff["from"], diff["to"]) == ("U", "T")
    assert diff["value"] == approx(F(21, 52))
    # Pooled: (11/12 + 3/4) / 4 = 5/12 and (11/6 + 17/12) / 4 = 13/16; their difference is not
    # the gap.
    assert gap["pooled"]["U"]["value"] == approx(F(5, 12))
    assert gap["pooled"]["T"]["value"] == approx(F(13, 16))
    assert diff["pooled_difference"] == approx(F(19, 48)) != diff["value"]
    # Scored-only drops b3 from U and b4 from T: task B becomes (3/4) / (5/3) = 9/20 for U and
    # (17/12) / (5/3) = 17/20 for T.
    assert gap["scored_only"]["U"] == approx(F(19, 40))
    assert gap["scored_only"]["T"] == approx(F(37, 40))
    assert gap["coverage"] == {"U": approx(F(7, 8)), "T": approx(F(7, 8))}
    assert gap["outcomes"]["U"] == {"scored": 7, "empty_answer": 0, "invalid_verdict": 0,
                                    "failed": 0, "missing": 1}  # fmt: skip
    assert gap["outcomes"]["T"]["invalid_verdict"] == 1


def test_per_view_tables_use_the_probes_valid_in_that_view() -> None:
    by_view = {v["views"][0]: v for v in result()["by_view"]}
    assert list(by_view) == ["U", "T", "P"]
    assert by_view["U"]["accuracy"]["U"]["value"] == approx(F(11, 26))
    # P has no probe at c2, so Y's weight over P's probes is 1/3 (important atom f of 3 probes):
    # A_A(P) = (2/3) / (4/3) = 1/2, A_B(P) = (2/3 + 1/3 + 1/3) / (5/3) = 4/5.
    assert by_view["P"]["n_probes"] == 7
    assert by_view["P"]["accuracy"]["P"]["value"] == approx(F(13, 20))


def test_variants_are_compared_on_probes_valid_in_all_with_identical_weights() -> None:
    variants = result(variants=("U", "P"))["variants"]
    assert variants["n_probes"] == 7
    assert {w["category"]: w["weight"] for w in variants["weights"]}["Y"] == approx(F(1, 3))
    # U on the same probes: A_A = (2/3)/(4/3) = 1/2, A_B = (1/3 + 1/6)/(5/3) = 3/10.
    assert variants["accuracy"]["U"]["value"] == approx(F(2, 5))
    assert variants["accuracy"]["P"]["value"] == approx(F(13, 20))
    (diff,) = variants["differences"]
    assert (diff["from"], diff["to"], diff["value"]) == ("U", "P", approx(F(1, 4)))


def test_three_variants_give_every_pair() -> None:
    variants = result(variants=("U", "T", "P"))["variants"]
    pairs = [(d["from"], d["to"]) for d in variants["differences"]]
    assert pairs == [("U", "T"), ("U", "P"), ("T", "P")]


def test_checkpoint_and_category_tables_keep_the_analysis_weights() -> None:
    r = result()
    by_cp = {row["checkpoint"]: row for row in r["by_checkpoint"]}
    assert list(by_cp) == ["c1", "c2"]
    # c2 holds only a3 (task A): U 0.5, T 1.
    assert by_cp["c2"]["n_tasks"] == 1
    assert by_cp["c2"]["accuracy"]["U"]["ci_low"] is None  # one task: no interval
    assert by_cp["c1"]["accuracy"]["U"]["ci_low"] is not None
    assert by_cp["c2"]["differences"][0]["value"] == approx(F(1, 2))
    # c1, task A: a1 a2 -> U 1/2, T 1; task B unchanged (9/26, 17/26).
    assert by_cp["c1"]["accuracy"]["U"]["value"] == approx(F(11, 26))
    by_cat = {row["category"]: row for row in r["by_category"]}
    assert by_cat["X"]["accuracy"]["U"]["value"] == approx(F(1, 4))
    assert by_cat["Y"]["accuracy"]["T"]["value"] == approx(F(3, 4))
    # No important atom in Z: no weight, so no accuracy, rather than a made-up one.
    assert by_cat["Z"]["accuracy"]["U"] == {"value": None, "ci_low": None, "ci_high": None}
    assert by_cat["Z"]["tasks_without_weight"] == ["C"]


def test_gap_views_are_chosen_by_name_and_order_follows_options() -> None:
    r = result(gap=("P", "T"), views=("T", "P"))
    assert r["views"] == ["T", "P", "U"]
    assert r["gap"]["views"] == ["P", "T"] and r["gap"]["n_probes"] == 7
    assert result(views=("T",))["gap"]["views"] == ["T", "U"]


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"gap": ("U", "Q")}, "gap: no view 'Q' in the scored units (views: U, T, P)"),
        ({"gap": ("U", "U")}, "gap: a view is named twice"),
        ({"variants": ("U",)}, "variants: name at least two views to compare"),
        ({"variants": ("U", "T", "W")}, "variants: no view 'W'"),
    ],
)
def test_bad_view_names_are_refused(opts: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        result(**opts)


@pytest.mark.parametrize("outcome", ["failed", "missing", "invalid_verdict", "empty_answer"])
def test_intention_to_evaluate_keeps_every_unit_in_the_denominator(outcome: str) -> None:
    units = units_from_rows(rows() + rows("other", outcome))
    bindings = analyze(units, Options(resamples=50))["bindings"]
    assert [(b["observer_model"], b["judge_model"]) for b in bindings] == [
        ("obs", "judge"),
        ("other", "judge"),
    ]
    gap = bindings[1]["gap"]
    assert gap["accuracy"]["U"]["value"] == 0.0 and gap["n_probes"] == 8
    assert gap["outcomes"]["U"][outcome] == 8
    covered = outcome == "empty_answer"
    assert gap["coverage"]["U"] == (1.0 if covered else 0.0)
    assert gap["scored_only"]["U"] == (0.0 if covered else None)


def test_pooled_note_says_the_difference_is_not_the_gap() -> None:
    assert "not the gap" in POOLED_NOTE


BAD_ROWS: list[tuple[dict[str, Any], str]] = [
    ({"importance": 5}, "rows:1: importance: must be an integer 0-3, got 5"),
    ({"verdict": 0.7}, "rows:1: verdict: must be 0, 0.5 or 1, got 0.7"),
    ({"verdict": True}, "rows:1: verdict: must be 0, 0.5 or 1, got True"),
    ({"judge_status": "parse_error"}, "rows:1: verdict: must be null unless both steps are ok"),
    ({"observer_status": "done"}, "rows:1: observer_status: must be one of ok, parse_error"),
    ({"view": ""}, "rows:1: view: must be a non-empty string"),
    ({"atom_id": 3}, "rows:1: atom_id: must be a non-empty string"),
]


@pytest.mark.parametrize(("change", "message"), BAD_ROWS)
def test_unit_rows_are_validated(change: dict[str, Any], message: str) -> None:
    with pytest.raises(DataError, match=message.replace("(", r"\(")):
        units_from_rows([{**rows()[0], **change}])


def test_a_unit_twice_or_a_probe_described_two_ways_is_refused() -> None:
    first = rows()[0]
    with pytest.raises(DataError, match=r"rows:2: view: .* is already given at rows:1"):
        units_from_rows([first, dict(first)])
    with pytest.raises(DataError, match=r"rows:2: probe_id: probe 'a1' has task"):
        units_from_rows([first, {**first, "view": "T", "importance": 2}])


def test_several_judges_and_samples_pool_per_unit_with_the_task_bootstrap() -> None:
    """Judge 2 scores every unit 0 (all answered and judged), and each unit is asked twice with
    the same verdicts: every pooled unit scores half of judge 1's score, so the pooled
    accuracies, gap and (same tasks drawn, statistics linear in the scores) interval bounds are
    exactly half of judge 1's, and coverage counts judgments."""
    first = rows()
    second = [{**r, "sample": 1} for r in first]
    zero = [
        {**r, "judge_model": "judge2", "observer_status": "ok", "judge_status": "ok", "verdict": 0}
        for r in first
    ]
    zero += [{**r, "sample": 1} for r in zero]
    found = analyze(units_from_rows(first + second + zero), Options(resamples=200))
    alone = analyze(units_from_rows(first), Options(resamples=200))["bindings"][0]["gap"]
    by_judge = {b["judge_model"]: b for b in found["bindings"]}
    assert by_judge["judge"]["gap"]["accuracy"] == alone["accuracy"]  # samples pooled: same
    (pooled,) = found["pooled"]
    assert pooled["judge_model"] == "pooled: judge, judge2 x 2 sample(s)"
    assert (pooled["judges"], pooled["samples"]) == (["judge", "judge2"], 2)
    gap = pooled["gap"]
    # judge 1's two samples and judge 2's two samples: (s + s + 0 + 0) / 4 = s / 2
    assert gap["accuracy"]["U"]["value"] == approx(F(11, 52))
    assert gap["accuracy"]["T"]["value"] == approx(F(43, 104))
    assert gap["differences"][0]["value"] == approx(F(21, 104))
    for view in ("U", "T"):
        for bound in ("ci_low", "ci_high"):
            assert gap["accuracy"][view][bound] == pytest.approx(alone["accuracy"][view][bound] / 2)
    # U: judge 1 covers 7 of 8 units in each sample, judge 2 all 8
    assert gap["coverage"]["U"] == approx(F(7 + 7 + 8 + 8, 32))
    assert gap["outcomes"]["U"]["missing"] == 2 and gap["outcomes"]["U"]["scored"] == 30


def test_one_judgment_per_unit_has_no_pooled_analysis() -> None:
    assert analyze(units_from_rows(rows()), Options(resamples=0))["pooled"] == []
