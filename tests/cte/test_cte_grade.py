"""Every grading metric on a hand-built fixture, with hand-computed expected values.

Fixture (service/kind, future_index: target | no-intervention | prediction):
  A s1/k1  0: {"a":1} | same | {"a":1.0}                       VM, SM, FM 1
           1: {"a":2,"b":[1,2]} | {"a":1,..} | {"a":2,"b":[1],"c":true}
              effect; not VM; SM; leaves a,b.0,b.1 vs a,b.0,c -> 2 matched: FM 2/3 of the
              oracle's 3 leaves, 2/4 of the union
          25: error | {"ok":true} | parse failure             effect; wrong everywhere
  B s1/k2  0: {"ok":true} | same | {"ok":1}                   not VM (bool != 1); SM; FM 0;
                                                              the release's `true == 1` says VM
           1: error E | {"v":3} | error F                     effect; not VM; SM; FM 0/1
          20: {"x":[]} | same | no answer (failed call)       wrong everywhere, not answered
  C s2/k1  0: {} | {} | {}                                    VM; FM 1 (the empty object is a leaf)
           1: {"n":5} | {"n":4} | {"n":5}                     effect; VM
          30: {"n":[1,{"m":2}]} | same | same                 VM
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from evaltally.benchmarks.cte.grade import (
    GradedCall,
    field_match,
    field_match_union,
    flatten,
    percentile,
    status_match,
    summarize,
    value_match,
)

ERR_E = {"error": {"code": "E"}}


def gc(
    sid: str, svc: str, kind: str, i: int, target: Any, base: Any, pred: Any,
    *, parsed: bool = True, answered: bool = True,
) -> GradedCall:  # fmt: skip
    return GradedCall(sid, svc, kind, i, target != base, target, base, pred, parsed, answered)


CALLS = [
    gc("A", "s1", "k1", 0, {"a": 1}, {"a": 1}, {"a": 1.0}),
    gc("A", "s1", "k1", 1, {"a": 2, "b": [1, 2]}, {"a": 1, "b": [1, 2]},
       {"a": 2, "b": [1], "c": True}),
    gc("A", "s1", "k1", 25, {"error": {"code": "X"}}, {"ok": True}, None, parsed=False),
    gc("B", "s1", "k2", 0, {"ok": True}, {"ok": True}, {"ok": 1}),
    gc("B", "s1", "k2", 1, ERR_E, {"v": 3}, {"error": {"code": "F"}}),
    gc("B", "s1", "k2", 20, {"x": []}, {"x": []}, None, parsed=False, answered=False),
    gc("C", "s2", "k1", 0, {}, {}, {}),
    gc("C", "s2", "k1", 1, {"n": 5}, {"n": 4}, {"n": 5}),
    gc("C", "s2", "k1", 30, {"n": [1, {"m": 2}]}, {"n": [1, {"m": 2}]}, {"n": [1, {"m": 2}]}),
]  # fmt: skip

EXPECTED = {
    "all_call_vm": 4 / 9,
    "effect_step_vm": 1 / 4,
    "status_match": 7 / 9,
    "field_match": (4 + 2 / 3) / 9,
    "field_match_union": 4.5 / 9,
    "all_call_vm_release": 5 / 9,
    "parse_failure_rate": 1 / 9,
    "coverage": 8 / 9,
    "vm_calls_1_10": 3 / 6,
    "vm_calls_21_40": 1 / 3,
    "whole_trace_exact": 1 / 3,
    "median_first_wrong": 1.5,  # A first wrong at call 2, B at call 1; C fully right: excluded
    "mean_first_wrong": 1.5,
}
EXPECTED_SCORED_ONLY = {
    "all_call_vm": 4 / 8,
    "effect_step_vm": 1 / 4,
    "status_match": 7 / 8,
    "field_match": (4 + 2 / 3) / 8,
    "field_match_union": 4.5 / 8,
    "parse_failure_rate": 1 / 8,
}
# s1 (A, B): VM 1/6, effect 0/3, SM 4/6, FM (5/3)/6 (union 1.5/6), parse 1/6, coverage 5/6,
# 1-10 1/4, 21-40 0/2, whole 0/2; s2 (C): all 1 except parse 0.
EXPECTED_EQUAL_SERVICE = {
    "all_call_vm": (1 / 6 + 1) / 2,
    "effect_step_vm": 0.5,
    "status_match": (4 / 6 + 1) / 2,
    "field_match": (5 / 18 + 1) / 2,
    "field_match_union": (0.25 + 1) / 2,
    "parse_failure_rate": (1 / 6) / 2,
    "coverage": (5 / 6 + 1) / 2,
    "vm_calls_1_10": (0.25 + 1) / 2,
    "vm_calls_21_40": 0.5,
    "whole_trace_exact": 0.5,
}


def test_per_call_functions() -> None:
    assert value_match({"a": 1, "b": 2}, {"b": 2.0, "a": 1})
    assert not value_match({"ok": 1}, {"ok": True})
    assert not value_match(None, {})
    assert status_match({"error": {"code": "A"}}, ERR_E) and not status_match(None, ERR_E)
    assert flatten({"a": {"b": [1, {}]}, "c": []}) == {("a", "b", 0): 1, ("a", "b", 1): {},
                                                        ("c",): []}  # fmt: skip
    assert field_match_union({"a": 2, "b": [1], "c": True}, {"a": 2, "b": [1, 2]}) == 0.5
    assert field_match_union({}, {}) == 1.0 and field_match_union(None, {"a": 1}) == 0.0
    assert field_match_union({"a": 1}, {"a": 1, "b": 2}) == 0.5  # a missing leaf costs one
    assert field_match_union({"a": 1, "z": 0}, {"a": 1}) == 0.5  # so does an extra one
    # The paper's reading: the oracle's fields are the denominator.
    assert field_match({"a": 2, "b": [1], "c": True}, {"a": 2, "b": [1, 2]}) == 2 / 3
    assert field_match({}, {}) == 1.0 and field_match(None, {"a": 1}) == 0.0
    assert field_match({"a": 1}, {"a": 1, "b": 2}) == 0.5  # a missing leaf costs one
    assert field_match({"a": 1, "z": 0}, {"a": 1}) == 1.0  # an extra one costs nothing
    err = {"error": {"code": "NOT_FOUND"}}
    assert field_match({"error": {"code": "NOT_FOUND", "message": "no such key"}}, err) == 1.0


def test_release_reading_of_booleans_is_counted() -> None:
    s = summarize(CALLS, resamples=0)
    assert s["vm_reading_differs"] == 1  # B's {"ok": 1} for {"ok": true}
    assert s["metrics"]["all_call_vm_release"]["value"] == pytest.approx(5 / 9)


def test_summary_point_values() -> None:
    s = summarize(CALLS, resamples=0)
    assert (s["n_scenarios"], s["n_calls"], s["n_effect_steps"]) == (3, 9, 4)
    for name, want in EXPECTED.items():
        assert s["metrics"][name]["value"] == pytest.approx(want), name
    for name, want in EXPECTED_SCORED_ONLY.items():
        assert s["scored_only"][name]["value"] == pytest.approx(want), name
    for name, want in EXPECTED_EQUAL_SERVICE.items():
        assert s["equal_service"][name]["value"] == pytest.approx(want), name
    assert s["metrics"]["all_call_vm"]["ci_low"] is None  # no resamples, no interval
    s1, s2 = s["by_service"]["s1"]["metrics"], s["by_service"]["s2"]["metrics"]
    assert s1["all_call_vm"]["value"] == pytest.approx(1 / 6)
    assert s1["median_first_wrong"]["value"] == 1.5 and s2["median_first_wrong"]["value"] is None
    assert s["by_kind"]["k2"]["metrics"]["status_match"]["value"] == pytest.approx(2 / 3)
    assert s["by_kind"]["k1"]["n_effect_steps"] == 3


def test_bootstrap_interval_matches_an_independent_computation() -> None:
    # per scenario, in id order A, B, C: (VM count, calls), whole-trace, first wrong call
    vm = [(1, 3), (0, 3), (3, 3)]
    first_wrong = [2, 1, None]
    seed, rounds = 7, 2000
    rng = random.Random(seed)
    vm_draws, fw_draws = [], []
    for _ in range(rounds):
        idx = [rng.randrange(3) for _ in range(3)]
        vm_draws.append(sum(vm[i][0] for i in idx) / sum(vm[i][1] for i in idx))
        wrong = sorted(w for i in idx if (w := first_wrong[i]) is not None)
        if wrong:  # undefined when only C was drawn: that resample is skipped
            mid = len(wrong) // 2
            fw_draws.append(wrong[mid] if len(wrong) % 2 else (wrong[mid - 1] + wrong[mid]) / 2)

    def interval(d: list[float]) -> tuple[float, float]:
        d = sorted(d)

        def q(p: float) -> float:
            pos = p * (len(d) - 1)
            lo = int(pos)
            return d[lo] + (d[min(lo + 1, len(d) - 1)] - d[lo]) * (pos - lo)

        return q(0.025), q(0.975)

    s = summarize(CALLS, seed=seed, resamples=rounds)
    got = s["metrics"]["all_call_vm"]
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(interval(vm_draws))
    fw = s["metrics"]["median_first_wrong"]
    assert (fw["ci_low"], fw["ci_high"]) == pytest.approx(interval(fw_draws))
    # pinned: with three scenarios the 2.5%/97.5% draws are the extreme mixes (0/9 and 9/9)
    assert (got["ci_low"], got["ci_high"]) == (0.0, 1.0)
    assert s["bootstrap"] == {
        "resamples": 2000,
        "seed": 7,
        "level": 0.95,
        "method": s["bootstrap"]["method"],
    }
    assert summarize(CALLS, seed=seed, resamples=rounds) == s  # deterministic


def test_percentile_interpolates() -> None:
    assert percentile([0.0, 10.0], 0.25) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    assert percentile([4.0], 0.975) == 4.0


def test_call_order_and_empty_input() -> None:
    assert summarize(list(reversed(CALLS)), resamples=50) == summarize(CALLS, resamples=50)
    empty = summarize([], resamples=10)
    assert empty["n_calls"] == 0 and empty["metrics"]["all_call_vm"]["value"] is None


def test_graded_call_from_a_scenario(official: list[Any]) -> None:
    from evaltally.benchmarks.cte.grade import graded_call

    sc = official[0]
    i = sc.effect_steps()[0]
    c = graded_call(sc, i, {"raw": "ignored"}, parsed_ok=False, answered=True)
    assert c.is_effect_step and c.prediction is None and c.target == sc.counterfactual[i].response
    assert c.no_intervention == sc.original[i].response and c.scenario_id == sc.item_id
