"""The paper's table layouts (Tables 1-3 and parse failures) from graded groups."""

from __future__ import annotations

from typing import Any

from evaltally.benchmarks.cte.grade import GradedCall, summarize
from evaltally.benchmarks.cte.paper_tables import paper_tables, table_2, table_3

T, B = {"n": 2}, {"n": 1}  # target and no-intervention response: every call is an effect step


def calls(hits: list[bool | None]) -> list[GradedCall]:
    """One scenario per call; None is a parse failure."""
    out = []
    for i, hit in enumerate(hits):
        pred = None if hit is None else (T if hit else B)
        out.append(GradedCall(f"s{i}", "svc", "k", 0, True, T, B, pred, hit is not None, True))
    return out


def group(model: str, protocol: str, hits: list[bool | None], bench: str = "cte") -> dict[str, Any]:
    summary = summarize(calls(hits), resamples=0)
    return {"model": model, "benchmark": bench, "protocol": protocol, "summary": summary}


GROUPS = [
    group("m1", "answers_revealed", [True, True, True, False]),
    group("m1", "no_feedback", [True, False, False, None]),
    group("m1", "free_rollout", [True, True, False, False]),
    group("replay", "answers_revealed", [False, False, False, False]),
    group("replay", "free_rollout", [False, False, False, False]),
]


def test_layouts() -> None:
    t1, t2, t3, pf = paper_tables(GROUPS, predictors={"replay"})
    assert t1.rows == [("replay", "0.0", "0.0", "100.0")]  # shown once, not per protocol
    assert t2.header[1:] == (
        "answers revealed: effect-step VM",
        "no feedback: effect-step VM",
        "free rollout: effect-step VM",
        "answers revealed: all-call VM",
    )
    assert t2.rows == [("m1", "75.0", "25.0", "50.0", "75.0")]  # no resamples: no ± shown
    # one wrong scenario at call 1 each (s2, s3): median 1, mean 1; 2 of 4 scenarios exact
    assert t3.rows == [("m1", "50.0", "1.0", "1.0", "50.0", "-")]
    assert pf.rows == [("m1", "0.0", "25.0", "0.0")]


def test_two_cte_benchmarks_of_one_model_stay_apart() -> None:
    groups = [group("m1", "free_rollout", [True]), group("m1", "free_rollout", [False], "probe")]
    t3 = table_3(groups)
    assert t3 is not None and [r[0] for r in t3.rows] == ["m1 (cte)", "m1 (probe)"]


def test_intervals_are_half_widths() -> None:
    g = {"model": "m", "benchmark": "cte", "protocol": "answers_revealed",
         "summary": summarize(calls([True, False] * 10), resamples=200)}  # fmt: skip
    t2 = table_2([g])
    assert t2 is not None and " ± " in t2.rows[0][1]
