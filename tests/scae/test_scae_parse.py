"""The judge's answer is read strictly; a step outside the visible range is its own outcome."""

from __future__ import annotations

import pytest

from evaltally.benchmarks.scae.parse import (
    OK,
    OUT_OF_RANGE,
    UNPARSABLE,
    parse_judge,
    recorded_answer,
    to_parse_result,
)


@pytest.mark.parametrize(
    ("text", "outcome", "step", "path"),
    [
        ('{"step": 3, "reason": "it read the wrong file"}', OK, 3, "strict"),
        ('  {"step": 12}\n', OK, 12, "strict"),
        ('```json\n{"step": 2}\n```', OK, 2, "embedded"),
        ('I blame this one: {"step": 1, "reason": "x"}. Done.', OK, 1, "embedded"),
        ('{"step": 13}', OUT_OF_RANGE, 13, "strict"),
        ('{"step": 0}', OUT_OF_RANGE, 0, "strict"),
        ('{"step": -2}', OUT_OF_RANGE, -2, "strict"),
        ('answer: {"step": 40}', OUT_OF_RANGE, 40, "embedded"),
    ],
)
def test_answers_with_one_step(text: str, outcome: str, step: int, path: str) -> None:
    answer = parse_judge(text, visible=12)
    assert (answer.outcome, answer.step, answer.path) == (outcome, step, path)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("Step 3 is to blame.", "no JSON object"),
        ("", "no JSON object"),
        ('{"step": 3} or maybe {"step": 4}', "2 JSON objects in the answer; refusing to choose"),
        ('{"blame": 3}', "no `step` key"),
        ('{"step": "3"}', "`step` must be an integer, got str"),
        ('{"step": 3.0}', "`step` must be an integer, got float"),
        ('{"step": true}', "`step` must be an integer, got bool"),
        ('{"step": null}', "`step` must be an integer, got NoneType"),
        ('[{"step": 3}]', "the answer is JSON but not an object (list)"),
        ("3", "the answer is JSON but not an object (int)"),
        ('{"step": NaN}', "no JSON object"),
    ],
)
def test_nothing_is_guessed(text: str, error: str) -> None:
    answer = parse_judge(text, visible=12)
    assert answer.outcome == UNPARSABLE and answer.step is None
    assert error in (answer.error or "")


def test_the_contract_form_keeps_the_three_outcomes_apart() -> None:
    ok = to_parse_result(parse_judge('{"step": 2}', 5))
    assert (ok.ok, ok.value, ok.path) == (True, {"step": 2}, "strict")
    out = to_parse_result(parse_judge('{"step": 9}', 5))
    assert (out.ok, out.path) == (False, OUT_OF_RANGE)
    assert out.error == "out_of_range: step 9 is outside the visible steps 1-5"
    bad = to_parse_result(parse_judge("no idea", 5))
    assert (bad.ok, bad.path) == (False, None) and (bad.error or "").startswith("unparsable: ")


def test_recorded_answers_are_reread_from_the_raw_text() -> None:
    assert recorded_answer("ok", '{"step": 4}', 6) == (OK, 4)
    assert recorded_answer("parse_error", '{"step": 9}', 6) == (OUT_OF_RANGE, None)
    assert recorded_answer("parse_error", "hmm", 6) == (UNPARSABLE, None)
    assert recorded_answer("failed", None, 6) == ("failed", None)
    assert recorded_answer("blocked", None, 6) == ("blocked", None)
