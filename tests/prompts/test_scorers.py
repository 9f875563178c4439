"""Each scorer's documented behaviour (docs/prompts.md), as pure functions of item and answer."""

from __future__ import annotations

from typing import Any

import pytest

from evaltally.benchmarks.prompts.scorers import ScoreError, parse_number, picked_letter, score


def _score(name: str, target: Any, answer: str, **options: Any) -> float:
    item: dict[str, Any] = {"id": "x", "target": target}
    if "choices" in options:
        item["choices"] = options.pop("choices")
    return score({"name": name, "version": "1", "options": options}, item, answer)


def test_exact_normalises_case_and_whitespace_by_default_and_punctuation_on_request() -> None:
    assert _score("exact", "Paris", "  paris \n") == 1.0
    assert _score("exact", "Paris", "Paris.") == 0.0
    assert _score("exact", "Paris", "Paris.", ignore_punctuation=True) == 1.0
    assert _score("exact", "Paris", "paris", ignore_case=False) == 0.0
    assert _score("exact", "New York", "New  York", ignore_whitespace=False) == 0.0
    assert _score("exact", ["H2O", "water"], "Water") == 1.0


def test_includes_finds_a_target_inside_the_answer() -> None:
    assert _score("includes", "Tokyo", "It is TOKYO, of course") == 1.0
    assert _score("includes", "Tokyo", "Kyoto") == 0.0


def test_regex_compares_the_first_capture_group_or_the_whole_match() -> None:
    assert _score("regex", "42", "so the answer is 42", pattern=r"answer is (\d+)") == 1.0
    assert _score("regex", "42", "answer is 41", pattern=r"answer is (\d+)") == 0.0
    assert _score("regex", "42", "no number here", pattern=r"answer is (\d+)") == 0.0
    assert _score("regex", "42", "x 42 y", pattern=r"\d+") == 1.0


def test_number_reads_the_last_number_with_tolerances() -> None:
    assert parse_number("first 3, then 1,000,000.5") == 1000000.5
    assert parse_number("none") is None
    assert _score("number", "42", "17 + 25 = 42") == 1.0
    assert _score("number", "42", "42 or 43") == 0.0
    assert _score("number", "0.333", "about 0.3333", abs_tol=0.001) == 1.0
    assert _score("number", "0.333", "about 0.3333") == 0.0
    assert _score("number", 1000, "roughly 1040", rel_tol=0.05) == 1.0
    assert _score("number", 1000, "roughly 1060", rel_tol=0.05) == 0.0
    with pytest.raises(ScoreError, match="not a number"):
        _score("number", "many", "12")


def test_choice_reads_the_picked_letter_and_accepts_a_letter_or_text_target() -> None:
    choices = ["red", "green", "blue"]
    assert _score("choice", "B", "B", choices=choices) == 1.0
    assert _score("choice", "green", "(b)", choices=list(choices)) == 0.0  # lower case: not a pick
    assert _score("choice", "green", "The answer is B.", choices=list(choices)) == 1.0
    assert _score("choice", "C", "I pick A) because", choices=list(choices)) == 0.0
    assert picked_letter("D", 3) is None  # not one of the three choices
    assert picked_letter("the answer is a dog", 3) is None
    assert picked_letter("ANSWER: (c)", 3) is None and picked_letter("ANSWER: (C)", 3) == "C"
    with pytest.raises(ScoreError, match="neither a choice letter"):
        _score("choice", "purple", "A", choices=list(choices))


def test_json_gives_the_share_of_matching_fields_booleans_not_numbers() -> None:
    target = {"name": "Ada", "age": 36, "ok": True}
    assert _score("json", target, '{"age": 36, "name": "Ada", "ok": true}') == 1.0
    assert _score("json", target, '```json\n{"name": "Ada", "age": 35, "ok": 1}\n```') == 1 / 3
    assert _score("json", target, "not json") == 0.0
    assert _score("json", {"a": {"b": 1}, "c": 2}, '{"a": {"b": 1}}', fields=["a.b"]) == 1.0


def test_a_user_scorer_is_called_with_item_and_answer() -> None:
    name = "evaltally.benchmarks.prompts.example_scorer:last_word"
    assert _score(name, "Washington", "It was George Washington.") == 1.0
    assert _score(name, "Washington", "Washington it was") == 0.0
    with pytest.raises(ScoreError, match="cannot import"):
        _score("no_such_module_here:f", "a", "a")
