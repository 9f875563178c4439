"""Judges against CTE's certified first wrong call, on scripted free rollouts whose first wrong
call is planted by hand."""

from __future__ import annotations

from typing import Any

import pytest

from evaltally.benchmarks.cte.records import Call, Intervention, Scenario
from evaltally.benchmarks.scae.conditions import FULL, PREFIX, judge_messages, prefix_length
from evaltally.benchmarks.scae.cte_judge import (
    FIRST_WRONG_RUBRIC,
    certified_reference,
    reference_counts,
    rollout_trajectory,
    rollouts,
    score_judges,
)
from evaltally.benchmarks.scae.rows import JudgeRow
from evaltally.benchmarks.scae.tables import cte_judge_table, displacement_table
from evaltally.errors import DataError
from evaltally.prompts import scae as prompts
from evaltally.report.tables import to_markdown

SOURCE = (
    "class Counter:\n    def bump(self, by):\n        self.n += by\n        return {'n': self.n}\n"
)
TARGETS = [{"n": 1}, {"n": 2}, {"ok": True}, {"n": 4}, {"ok": True}, {"n": 6}]


def scenario() -> Scenario:
    requests = [Call("bump", {"by": 1}, t) for t in TARGETS]
    return Scenario(
        item_id="s1",
        domain="counter",
        intervention=Intervention(
            kind="clock_jump", description="", path=("clock",), from_value=0, to_value=60
        ),
        prefix=(Call("bump", {"by": 0}, {"n": 0}),),
        original=tuple(requests),
        counterfactual=tuple(requests),
        patched_source=None,
        original_source=SOURCE,
        final_state_original={},
        final_state_cf={},
    )


def row(chain: str, i: int, status: str, parsed: Any = None, **extra: Any) -> dict[str, Any]:
    out = {
        "model": "subject", "benchmark": "cte", "protocol": "free_rollout", "chain_id": chain,
        "item_id": "s1", "scenario_id": "s1", "future_index": i, "status": status,
        "parsed": parsed if status == "ok" else None, "target": TARGETS[i],
    }  # fmt: skip
    out.update(extra)
    return out


def export_rows() -> list[dict[str, Any]]:
    c1 = [row("c1", i, "ok", t) for i, t in enumerate(TARGETS)]
    c1[1] = row("c1", 1, "ok", {"n": 2.0})  # 2.0 == 2 under value match: still right
    c1[4] = row("c1", 4, "ok", {"ok": 1})  # planted: 1 is not true -> first wrong call = 5
    c1[5] = row("c1", 5, "parse_error")
    c2 = [row("c2", i, "ok", t) for i, t in enumerate(TARGETS)]
    c2[0] = row("c2", 0, "parse_error")  # a parse failure is wrong: first wrong call = 1
    c3 = [row("c3", i, "ok", t) for i, t in enumerate(TARGETS)]  # all right: nothing to blame
    c4 = [row("c4", 0, "ok", TARGETS[0]), row("c4", 1, "failed")] + [
        row("c4", i, "blocked") for i in range(2, 6)
    ]  # cut short by the transport: no model-made trace
    other = [
        {**row("x", 0, "ok", {"n": 1}), "protocol": "answers_revealed"},
        {"model": "subject", "benchmark": "p", "protocol": "default", "chain_id": "y"},
    ]
    return c4 + c2 + other + c1 + c3


def test_certified_first_wrong_call_uses_ctes_value_match() -> None:
    found = {r.chain_id: r for r in rollouts(export_rows())}
    assert sorted(found) == ["c1", "c2", "c3", "c4"]
    assert found["c1"].first_wrong == 5 and found["c1"].judgeable
    assert found["c2"].first_wrong == 1 and found["c2"].judgeable
    assert found["c3"].first_wrong is None and not found["c3"].judgeable
    assert found["c4"].first_wrong == 2 and not found["c4"].judgeable
    assert reference_counts(list(found.values())) == {
        "chains": 4, "judged": 2, "all_correct": 1, "incomplete": 1,
    }  # fmt: skip


def test_the_judge_sees_the_models_own_predictions_as_the_trajectory() -> None:
    rollout = {r.chain_id: r for r in rollouts(export_rows())}["c1"]
    trajectory = rollout_trajectory(rollout, scenario())
    assert [s.output for s in trajectory.steps] == [
        '{"n": 1}', '{"n": 2.0}', '{"ok": true}', '{"n": 4}', '{"ok": 1}',
        '{"error": {"code": "MODEL_INVALID_JSON"}}',
    ]  # fmt: skip
    assert trajectory.steps[0].tool == "bump" and trajectory.steps[0].target == '{"by": 1}'
    assert trajectory.outcome == "4 of 6 predicted responses equal the service's true responses."
    assert 'bump({"by": 0}) -> {"n": 0}' in trajectory.task and "self.n += by" in trajectory.task
    full = judge_messages(trajectory, FULL, rubric=FIRST_WRONG_RUBRIC)[1]["content"]
    prefix = judge_messages(trajectory, PREFIX, rubric=FIRST_WRONG_RUBRIC)[1]["content"]
    assert (
        prompts.RUBRICS[FIRST_WRONG_RUBRIC] in full
        and prompts.RUBRICS[FIRST_WRONG_RUBRIC] in prefix
    )
    assert "steps 1-6\n" in full and "4 of 6 predicted" in full
    assert f"steps 1-{prefix_length(6)}\n" in prefix and "of 6" not in prefix
    assert "### Step 4" not in prefix


def judge_rows() -> list[JudgeRow]:
    k = prefix_length(6)  # 3: the planted call 5 of c1 is beyond the prefix
    return [
        JudgeRow("c1", "j1", FULL, "ok", 5, 6, 6),
        JudgeRow("c2", "j1", FULL, "ok", 1, 6, 6),
        JudgeRow("c1", "j1", PREFIX, "ok", 3, 6, k),
        JudgeRow("c2", "j1", PREFIX, "ok", 1, 6, k),
        JudgeRow("c1", "j2", FULL, "ok", 6, 6, 6),
        JudgeRow("c2", "j2", FULL, "out_of_range", None, 6, 6),
        JudgeRow("c1", "j2", PREFIX, "ok", 2, 6, k),
        JudgeRow("c2", "j2", PREFIX, "unparsable", None, 6, k),
    ]


def test_judges_are_scored_against_the_certified_call() -> None:
    reference = certified_reference(rollouts(export_rows()))
    assert reference == {"c1": 5, "c2": 1}
    scores = score_judges(judge_rows(), reference, seed=0, resamples=200)
    j1, j2 = scores["j1"], scores["j2"]
    assert j1["conditions"][FULL] == {
        "planned": 2, "answered": 2, "reference_visible": 2, "hits": 2, "hit_rate": 1.0,
        "hit_rate_planned": 1.0, "within_one": 1.0, "mean_signed_distance": 0.0,
        "mean_abs_distance": 0.0,
    }  # fmt: skip
    p = j1["conditions"][PREFIX]
    assert (p["reference_visible"], p["hits"], p["hit_rate"]) == (1, 1, 0.5)
    assert (p["within_one"], p["mean_signed_distance"], p["mean_abs_distance"]) == (0.5, -1, 1)
    d = j1["displacement"]
    assert d["mean"]["value"] == pytest.approx((2 / 6 + 0) / 2)
    assert (d["later"], d["earlier"], d["ties"]) == (1, 0, 1)
    f2 = j2["conditions"][FULL]
    assert (f2["answered"], f2["hits"], f2["hit_rate_planned"], f2["within_one"]) == (
        1,
        0,
        0.0,
        1.0,
    )
    assert f2["mean_signed_distance"] == 1
    assert j2["conditions"][PREFIX]["mean_signed_distance"] == -3
    md = to_markdown(cte_judge_table(scores)) + to_markdown(displacement_table({"judges": scores}))
    assert "| j1 | prefix | 2 | 2 | 1 | 0.500 | 0.500 | -1.000 | 1.000 |" in md
    assert "| j1 | 2 | 0.333 | 0.500 | +0.167 |" in md
    assert "It is not the step most responsible for the outcome" in md


def test_rows_that_do_not_make_a_rollout_are_refused() -> None:
    with pytest.raises(DataError, match="chain c1 repeats call 0"):
        rollouts([row("c1", 0, "ok", {}), row("c1", 0, "ok", {})])
    with pytest.raises(DataError, match=r"chain c1: future_index values are not 0..1"):
        rollouts([row("c1", 0, "ok", {}), row("c1", 2, "ok", {})])
    with pytest.raises(DataError, match="export row 1: free-rollout row without field target"):
        rollouts([{k: v for k, v in row("c1", 0, "ok", {}).items() if k != "target"}])
    with pytest.raises(DataError, match="chain c9 has no certified reference"):
        score_judges([JudgeRow("c9", "j", FULL, "ok", 1, 2, 2)], {}, seed=0, resamples=1)
