"""The paper's table layouts (Tables 1-3, parse failures, readings) and the probe tables."""

from __future__ import annotations

from typing import Any

import pytest

from evaltally.benchmarks.cte.grade import GradedCall, summarize
from evaltally.benchmarks.cte.paper_tables import paper_tables, probe_tables, table_2, table_3

T, B = {"n": 2}, {"n": 1}  # target and no-intervention response: every call is an effect step


def calls(hits: list[bool | None]) -> list[GradedCall]:
    """One scenario per call; None is a parse failure."""
    out = []
    for i, hit in enumerate(hits):
        pred = None if hit is None else (T if hit else B)
        out.append(GradedCall(f"s{i}", "svc", "k", 0, True, T, B, pred, hit is not None, True))
    return out


def group(
    model: str,
    protocol: str,
    hits: list[bool | None],
    bench: str = "cte",
    *,
    provider: str = "openai",
    scenario_set: str = "main",
    reasoning: str = "off",
    tokens: int = 0,
) -> dict[str, Any]:
    return {
        "model": model,
        "benchmark": bench,
        "protocol": protocol,
        "summary": summarize(calls(hits), resamples=0),
        "provider": provider,
        "reasoning": reasoning,
        "scenario_set": scenario_set,
        "reasoning_tokens": tokens,
    }


GROUPS = [
    group("m1", "answers_revealed", [True, True, True, False]),
    group("m1", "no_feedback", [True, False, False, None]),
    group("m1", "free_rollout", [True, True, False, False]),
    group("replay", "answers_revealed", [False, False, False, False], provider="baseline"),
    group("replay", "free_rollout", [False, False, False, False], provider="baseline"),
]


def test_layouts() -> None:
    t1, t2, t3, pf, readings = paper_tables(GROUPS, labelled=False)
    assert t1.rows == [("replay", "0.0", "0.0", "100.0")]  # shown once, not per protocol
    assert t2.header[1:] == (
        "answers revealed: effect-step VM",
        "no feedback: effect-step VM",
        "free rollout: effect-step VM",
        "answers revealed: all-call VM",
    )
    assert t2.rows == [("m1", "75.0", "25.0", "50.0", "75.0")]  # no resamples: no ± shown
    # s2 and s3 wrong at call 1 (median 1, mean 1); s0, s1 exact: 50%
    assert ("m1", "50.0", "1.0", "1.0", "50.0", "-") in t3.rows
    assert pf.rows == [("m1", "0.0", "25.0", "0.0")]
    assert readings.rows[0] == ("m1", "answers_revealed", "75.0", "75.0", "75.0", "75.0", "0")


def test_the_release_reading_of_effect_step_vm() -> None:
    """`{"ok": 1}` against `{"ok": true}`: wrong for strict VM, right for the release's Python
    equality, on effect steps as on all calls."""
    target, base = {"ok": True}, {"ok": False}
    graded = [
        GradedCall("s0", "svc", "k", 0, True, target, base, {"ok": 1}, True, True),
        GradedCall("s0", "svc", "k", 1, True, target, base, target, True, True),
        GradedCall("s0", "svc", "k", 2, False, base, base, {"ok": 0}, True, True),
    ]
    m = {k: v["value"] for k, v in summarize(graded, resamples=0)["metrics"].items()}
    assert (m["effect_step_vm"], m["effect_step_vm_release"]) == (0.5, 1.0)
    assert m["all_call_vm"] == 1 / 3 and m["all_call_vm_release"] == 1.0
    g = {**group("m", "answers_revealed", [True]), "summary": summarize(graded, resamples=0)}
    readings = paper_tables([g], labelled=False)[-1]
    assert readings.header[2:6] == (
        "all-call VM", "all-call, release reading (true == 1)", "effect-step VM",
        "effect-step, release reading",
    )  # fmt: skip
    assert readings.rows == [("m", "answers_revealed", "33.3", "100.0", "50.0", "100.0", "2")]


@pytest.mark.parametrize(
    ("source", "title"),
    [
        ("core-v1", "Table 1 (Core-v1): non-model predictors (%)"),
        ("builtin", "Non-model predictors (%) on the built-in generated scenario set, in the "
                    "layout of the paper's Table 1 (not the paper's numbers)"),
        ("other", "Non-model predictors (%) on a non-Core-v1 scenario file, in the layout of "
                  "the paper's Table 1 (not the paper's numbers)"),
        (None, "Non-model predictors (%) on these scenarios (not identified as Core-v1), in the "
               "layout of the paper's Table 1 (not the paper's numbers)"),
    ],
)  # fmt: skip
def test_paper_layouts_are_titled_by_their_scenario_set(source: str | None, title: str) -> None:
    groups = [{**g, "scenario_source": source} for g in GROUPS]
    t1, t2, t3, *_ = paper_tables(groups, labelled=False)
    assert t1.title == title
    assert t2.title.startswith("Table 2 (Core-v1)") == (source == "core-v1")
    assert ("not the paper's numbers" in t3.title) == (source != "core-v1")


def test_two_cte_benchmarks_of_one_model_get_a_benchmark_column() -> None:
    groups = [group("m1", "free_rollout", [True]), group("m1", "free_rollout", [False], "probe")]
    t3 = table_3(groups, labelled=True)
    assert t3 is not None and [r[:2] for r in t3.rows] == [("m1", "cte"), ("m1", "probe")]


def test_intervals_are_half_widths() -> None:
    g = group("m", "answers_revealed", [True, False] * 10)
    g["summary"] = summarize(calls([True, False] * 10), resamples=200)
    t2 = table_2([g], labelled=False)
    assert t2 is not None and " ± " in t2.rows[0][1]


def test_probe_tables_stand_apart() -> None:
    groups = [
        group("m", "answers_revealed", [True, False], scenario_set="no_effect_probe"),
        group("q-on", "answers_revealed", [True], scenario_set="reasoning_probe",
              reasoning="on", tokens=1234),
        group("q-off", "answers_revealed", [False], scenario_set="reasoning_probe"),
    ]  # fmt: skip
    no_effect, reasoning = probe_tables(groups, labelled=False)
    assert no_effect.rows == [("m", "answers_revealed", "50.0", "100.0", "0.0", "2")]
    assert reasoning.rows == [
        ("q-off", "off", "answers_revealed", "0.0", "0.0", "0.0", "0"),
        ("q-on", "on", "answers_revealed", "100.0", "100.0", "0.0", "1,234"),
    ]
    assert paper_tables(groups[:1], labelled=False)  # the caller picks the main set
