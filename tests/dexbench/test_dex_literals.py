"""Backward answers are literals or nothing: every escape form, huge and deep answers, and
text that is not UTF-8 are refused before anything evaluates them."""

from __future__ import annotations

import pytest

from evaltally.benchmarks.dexbench.literals import MAX_CHARS, check_arguments


@pytest.mark.parametrize(
    ("answer", "values"),
    [
        ("'abc', 3", ("abc", 3)),
        ("[1, 2]", ([1, 2],)),
        ("(1, 2)", ((1, 2),)),  # one tuple argument, not two arguments
        ("1, 2,", (1, 2)),
        ("{'a': [1.5, -2]}, None, True", ({"a": [1.5, -2]}, None, True)),
        ("b'\\x00x', 1+2j, -3e2, ...", (b"\x00x", 1 + 2j, -300.0, Ellipsis)),
        ("set(), {1, 2}", (set(), {1, 2})),
        ("[1, 2]  # the list", ([1, 2],)),
        ("'''multi\nline'''", ("multi\nline",)),
    ],
)
def test_literal_arguments_are_read_as_a_tuple(answer: str, values: tuple[object, ...]) -> None:
    args = check_arguments(answer)
    assert args.ok and args.values == values and args.reason == ""


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("__import__('os').system('touch /tmp/pwned')", "a function call is not a literal"),
        ("lambda: 1", "a lambda is not a literal"),
        ("os", "a name is not a literal"),
        ("os.environ", "attribute access is not a literal"),
        ("f'{1 + 1}'", "an f-string is not a literal"),
        ("10**10**10", "an operator (only literals and complex numbers like 1+2j are accepted)"),
        ("[0] * 10_000_000", "an operator (only literals"),
        ("[x for x in range(9)]", "a comprehension is not a literal"),
        ("{'a': 1}['a']", "subscripting is not a literal"),
        ("*[1, 2]", "unpacking is not a literal"),
        ("(y := 1)", "an assignment expression is not a literal"),
        ("1 if True else 2", "a conditional expression is not a literal"),
        ("1 < 2", "a comparison is not a literal"),
        ("set([1])", "a function call is not a literal"),
        ("{[1]: 2}", "not a literal (unhashable type: 'list')"),
        ("", "empty: no argument values"),
        ("   \n", "empty: no argument values"),
        ("1\x002", "contains a NUL character"),
        ("'unterminated", "not Python literal syntax (unterminated string literal"),
        ("9" * 5000, "not Python literal syntax (Exceeds the limit (4300 digits)"),
    ],
)  # fmt: skip
def test_everything_else_is_refused_with_a_reason(answer: str, reason: str) -> None:
    args = check_arguments(answer)
    assert not args.ok and args.reason.startswith(reason) and args.values == ()


def test_a_ten_million_element_list_is_refused_by_size_before_parsing() -> None:
    answer = "[" + "0," * 10_000_000 + "]"
    assert check_arguments(answer).reason == f"longer than {MAX_CHARS} characters ({len(answer)})"


def test_a_100_mb_string_is_refused_by_size_before_parsing() -> None:
    answer = "'" + "a" * 100_000_000 + "'"
    assert check_arguments(answer).reason.startswith(f"longer than {MAX_CHARS} characters")


def test_deep_nesting_is_refused_before_the_parser_sees_it() -> None:
    assert check_arguments("[" * 40 + "]" * 40).reason == "nested deeper than 32 brackets"
    assert check_arguments("[" * 5000 + "]" * 5000).reason == "nested deeper than 32 brackets"
    assert check_arguments("[" * 20 + "]" * 20).ok


def test_many_small_parts_are_refused_within_the_size_limit() -> None:
    answer = ",".join(["0"] * 24_000)
    assert check_arguments(answer).reason == "more than 20000 literal parts"


def test_text_that_is_not_utf8_is_refused() -> None:
    assert check_arguments(b"'\xff\xfe'").reason == "not valid UTF-8 (byte 1)"
    assert check_arguments("'\ud800'").reason == "not valid UTF-8 (lone surrogate at character 1)"
    assert check_arguments("'caf\u00e9'".encode()).values == ("caf\u00e9",)
