"""The answer parser: strict JSON object, the release's tolerant repair path, failures."""

from __future__ import annotations

import pytest

from evaltally.benchmarks.cte.parse import parse_answer, parse_release


@pytest.mark.parametrize(
    "text",
    ['{"ok": true, "n": 1}', '  {"ok": true, "n": 1}\n', '{"n": 1, "ok": true}'],
)
def test_strict(text: str) -> None:
    r = parse_answer(text)
    assert r.ok and r.path == "strict" and r.value == {"ok": True, "n": 1}


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"ok": true, "n": 1}\n```',
        '```\n{"ok": true, "n": 1}\n```',
        '\ufeff{"ok": true, "n": 1}',
        '{"ok": true, "n": 1,}',
        '{"ok": true, "n": 1, "l": [1, 2,],}'.replace(', "l": [1, 2,]', ""),
        'The response is:\n{"ok": true, "n": 1}\nHope that helps {not json}',
        '\ufeff ```json\n{"ok": true,\n "n": 1,\n}\n``` ',
    ],
)
def test_tolerant(text: str) -> None:
    r = parse_answer(text)
    assert r.ok and r.path == "tolerant" and r.value == {"ok": True, "n": 1}, r


def test_tolerant_keeps_braces_inside_strings() -> None:
    r = parse_answer('sure: {"msg": "a } b {", "items": [1, 2,]} trailing')
    assert r.ok and r.path == "tolerant" and r.value == {"msg": "a } b {", "items": [1, 2]}


@pytest.mark.parametrize(
    "text",
    ["", "no json here", "[1, 2, 3]", "42", '{"a": NaN}', '{"a": 1', "{'a': 1}", '{"a": x}'],
)
def test_failure(text: str) -> None:
    r = parse_answer(text)
    assert not r.ok and r.path is None and r.error


def test_an_array_falls_back_to_its_first_object() -> None:
    # strict needs an object; tolerant takes the first balanced {...} inside, as the release
    r = parse_answer('[{"a": 1}]')
    assert r.ok and r.path == "tolerant" and r.value == {"a": 1}


@pytest.mark.parametrize(
    "text",
    [
        '{"ok": true, "n": 1}',
        '```json\n{"ok": true, "n": 1,}\n```',
        'The response is:\n{"ok": true, "n": 1}\nHope that helps {not json}',
    ],
)
def test_release_mode_reads_ordinary_answers_like_ours(text: str) -> None:
    r = parse_release(text)
    assert r.ok and r.path == "release" and r.value == {"ok": True, "n": 1}
    assert parse_answer(text).value == r.value


def test_release_mode_counts_braces_inside_strings() -> None:
    text = '{"msg": "a } b", "n": 1}'
    assert parse_answer(text).ok
    assert not parse_release(text).ok  # the release cuts the object at the quoted brace


def test_release_mode_drops_commas_inside_strings() -> None:
    text = '{"s": "x,]", "n": [1]}'
    assert parse_answer(text).value == {"s": "x,]", "n": [1]}
    assert parse_release(text).value == {"s": "x]", "n": [1]}


def test_release_mode_still_refuses_nan() -> None:
    assert not parse_release('{"a": NaN}').ok
