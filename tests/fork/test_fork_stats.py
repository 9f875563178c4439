"""Fork-resampling statistics: entropy at the fork step over buckets, outcome spread and how
often a replay reproduces the recorded continuation."""

from __future__ import annotations

import math

import pytest

from evaltally.benchmarks.fork.report import fork_table
from evaltally.benchmarks.fork.stats import (
    BucketSpec,
    Continuation,
    ForkAnswer,
    bucket,
    entropy,
    fork_summary,
    parse_bucket_spec,
)
from evaltally.report.tables import to_markdown


def cont(*answers: object, outcome: float | None = 1.0) -> Continuation:
    return Continuation(
        tuple(ForkAnswer("ok", a) if a != "PE" else ForkAnswer("parse_error") for a in answers),
        outcome,
    )


READ_A = {"tool": "read", "target": "a.py", "why": "x"}
READ_A2 = {"why": "other words", "target": "a.py", "tool": "read"}
READ_B = {"tool": "read", "target": "b.py"}
SEARCH = {"tool": "search", "target": "q"}


def test_exact_value_buckets_by_default() -> None:
    recorded = cont(READ_A, {"n": 1}, outcome=1.0)
    replays = [
        cont({"tool": "read", "target": "a.py", "why": "x"}, {"n": 1.0}, outcome=1.0),
        cont(READ_A, {"n": 2}, outcome=0.5),
        cont(READ_B, {"n": 1}, outcome=0.0),
        cont("PE", {"n": 1}, outcome=None),
    ]
    s = fork_summary(recorded, replays)
    assert s["replays"] == 4 and s["bucket_spec"] == "value"
    assert list(s["buckets"].values()) == [2, 1, 1]
    assert s["entropy"] == pytest.approx(-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)))
    assert s["share_recorded_bucket"] == 0.5
    assert s["reproduced"] == 1 and s["share_reproduced"] == 0.25  # {"n": 1.0} equals {"n": 1}
    o = s["outcome"]
    assert (o["n"], o["mean"], o["min"], o["max"], o["distinct"]) == (3, 0.5, 0.0, 1.0, 3)
    assert o["variance"] == pytest.approx(((0.5) ** 2 + 0 + (0.5) ** 2) / 3)


def test_field_buckets_follow_the_spec() -> None:
    spec = parse_bucket_spec("tool, target")
    assert spec.describe() == "tool,target"
    replays = [cont(READ_A), cont(READ_A2), cont(SEARCH), cont("PE")]
    s = fork_summary(cont(READ_A), replays, spec)
    assert s["buckets"] == {'["read","a.py"]': 2, "<parse_error>": 1, '["search","q"]': 1}
    assert bucket(ForkAnswer("ok", {"tool": "read"}), spec) == '["read",null]'
    assert bucket(ForkAnswer("failed"), spec) == "<failed>"
    nested = parse_bucket_spec("error.code")
    assert bucket(ForkAnswer("ok", {"error": {"code": "E1"}}), nested) == '["E1"]'
    assert bucket(ForkAnswer("ok", [1, 2]), nested) == "[null]"  # not an object: no fields


def test_a_deterministic_step_has_zero_entropy_and_all_replays_reproduce() -> None:
    s = fork_summary(cont(SEARCH, READ_B), [cont(SEARCH, READ_B) for _ in range(5)])
    assert s["entropy"] == 0.0 and s["share_reproduced"] == 1.0
    assert s["outcome"]["variance"] == 0.0


def test_entropy_in_nats() -> None:
    assert entropy([4]) == 0.0
    assert entropy([1, 1]) == pytest.approx(math.log(2))
    assert entropy([1, 1, 1, 1]) == pytest.approx(math.log(4))  # 1.39 nats, as in Table 9


def test_four_replays_reach_four_nonzero_entropies_not_three() -> None:
    # Every split of 4 replays into buckets (docs/fork.md): 2+2 gives ln 2, which the paper's
    # B.2 list (0.56, 1.04, 1.39) leaves out.
    splits = ([4], [3, 1], [2, 2], [2, 1, 1], [1, 1, 1, 1])
    values = sorted(round(entropy(s), 2) for s in splits)
    assert values == [0.0, 0.56, 0.69, 1.04, 1.39]


@pytest.mark.parametrize("text", ["", "tool,", "a..b", " , "])
def test_a_malformed_bucket_spec_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="bucket spec"):
        parse_bucket_spec(text)


def test_value_spec_and_empty_replays() -> None:
    assert parse_bucket_spec(" value ") == BucketSpec()
    s = fork_summary(cont(SEARCH), [])
    assert s["entropy"] is None and s["share_reproduced"] is None and s["outcome"]["n"] == 0


def test_fork_table() -> None:
    s = fork_summary(cont(SEARCH, outcome=1.0), [cont(SEARCH), cont(READ_B, outcome=0.0)])
    md = to_markdown(fork_table([("chain c1 @ step 3", s)]))
    assert (
        "| chain c1 @ step 3 | 2 | value | 2 | 0.693 | 0.500 | 0.500 | 0.250 | 0..1 | 2 | 0.500 |"
        in md
    )
