"""The answer parser: strict JSON object, the release's tolerant repair path, failures."""

from __future__ import annotations

import pytest

from evaltally.benchmarks.cte.parse import parse_answer


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
