"""Prompts (pure, versioned, numbered programs, the generate ablation) and answer parsing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evaltally.benchmarks.dexbench.coverage import Call, Trace, new_pool, trace
from evaltally.benchmarks.dexbench.lines import choose_target
from evaltally.benchmarks.dexbench.parse import (
    EMPTY_ANSWER,
    NO_ANSWER_BLOCK,
    NOT_JSON,
    NOT_LINE_NUMBERS,
    WRONG_SHAPE,
    outcome_of,
    parse_backward,
    parse_forward,
)
from evaltally.prompts import dexbench as prompts

PROGRAM = (
    "import unittest\n\ndef f(x):\n    if x:\n        return 1\n    return 0\n\n\n"
    "unittest.TestCase().assertEqual(f(0), 0)\n"
)


def test_prompts_module_imports_nothing_from_benchmarks() -> None:
    tree = ast.parse(Path(prompts.__file__).read_text())
    modules = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    modules += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in modules if m and m.startswith("evaltally.benchmarks")]


def test_the_program_is_numbered_with_a_three_wide_prefix() -> None:
    assert prompts.numbered(PROGRAM).split("\n")[:4] == [
        "  1 | import unittest",
        "  2 | ",
        "  3 | def f(x):",
        "  4 |     if x:",
    ]
    assert len(prompts.numbered(PROGRAM).split("\n")) == 9


def test_forward_prompt_is_one_shot_and_deterministic() -> None:
    messages = prompts.forward_messages(PROGRAM)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == '<answer>{"executed_lines": [1, 4, 5, 6, 7, 10, 13]}</answer>'
    assert prompts.numbered(PROGRAM) in messages[3]["content"]
    assert messages == prompts.forward_messages(PROGRAM)
    assert prompts.PROMPT_VERSION == "dexbench-v2"


def test_backward_prompt_shows_target_and_input_and_the_generate_mode_hides_the_input() -> None:
    mutate = prompts.backward_messages(
        PROGRAM, entry_point="f", target_line=4, target_rule="body", current_input="0"
    )
    task = mutate[3]["content"]
    assert "Target: line 4 (`if x:`). Make its body run" in task
    assert "Current arguments of `f` (last line): 0" in task
    assert "Current arguments of `f` (last line): [2, 4]" in mutate[1]["content"]
    generate = prompts.backward_messages(
        PROGRAM, entry_point="f", target_line=4, target_rule="body", current_input="0",
        mode="generate",
    )  # fmt: skip
    assert "Current arguments" not in generate[1]["content"] + generate[3]["content"]
    assert "Give arguments for `f` that reach the target." in generate[3]["content"]
    with pytest.raises(ValueError, match="backward mode"):
        prompts.backward_messages(
            PROGRAM, entry_point="f", target_line=4, target_rule="body", current_input="0",
            mode="other",
        )  # fmt: skip


async def test_the_worked_examples_are_right_under_the_benchmark_rules() -> None:
    async with new_pool(1) as pool:
        forward = await trace(pool, prompts.EXAMPLE_PROGRAM)
        assert isinstance(forward, Trace)
        assert sorted(forward.covered) == list(prompts.EXAMPLE_EXECUTED)
        target = choose_target(ast.parse(prompts.EXAMPLE_PROGRAM), forward.uncovered)
        assert target is not None
        assert (target.line, target.rule) == (
            prompts.EXAMPLE_TARGET_LINE,
            prompts.EXAMPLE_TARGET_RULE,
        )
        backward = await trace(
            pool, prompts.EXAMPLE_PROGRAM, Call("f", f"({prompts.EXAMPLE_BACKWARD_ANSWER},)")
        )
    assert isinstance(backward, Trace) and target.line in backward.covered


@pytest.mark.parametrize(
    ("text", "path", "lines"),
    [
        ('<answer>{"executed_lines": [3, 1, 3]}</answer>', "json", [1, 3]),
        ('Thinking\n<answer>\n```json\n{"executed_lines": [1, 2]}\n```\n</answer>', "json", [1, 2]),
        ('<ANSWER>The lines: {"executed_lines": [1, 2,],} done</ANSWER>', "tolerant", [1, 2]),
        ("<answer>[4, 2]</answer>", "list", [2, 4]),
        ('<answer>{"executed_lines": [9]}</answer> then <answer>{"executed_lines": [1]}</answer>',
         "json", [1]),
    ],
)  # fmt: skip
def test_forward_answers_that_parse_record_their_path(
    text: str, path: str, lines: list[int]
) -> None:
    result = parse_forward(text)
    assert (result.ok, result.path, result.value) == (True, path, {"executed_lines": lines})


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        ('The executed lines are 1, 2 and 3. {"executed_lines": [1, 2, 3]}', NO_ANSWER_BLOCK),
        ("<answer>  </answer>", EMPTY_ANSWER),
        ("<answer>lines one and two</answer>", NOT_JSON),
        ('<answer>{"lines": [1]}</answer>', WRONG_SHAPE),
        ('<answer>{"executed_lines": "1,2"}</answer>', WRONG_SHAPE),
        ('<answer>{"executed_lines": [1, "2"]}</answer>', NOT_LINE_NUMBERS),
        ('<answer>{"executed_lines": [1, 2.0]}</answer>', NOT_LINE_NUMBERS),
        ('<answer>{"executed_lines": [true]}</answer>', NOT_LINE_NUMBERS),
        ('<answer>{"executed_lines": [NaN]}</answer>', NOT_JSON),
    ],
)
def test_forward_failures_have_their_own_outcomes(text: str, outcome: str) -> None:
    result = parse_forward(text)
    assert not result.ok and result.path is None and outcome_of(result) == outcome


def test_backward_answers_are_the_block_text_and_a_missing_block_is_its_own_outcome() -> None:
    assert parse_backward("So: <answer> 'abc', [1, 2] </answer>").value == {
        "input": "'abc', [1, 2]"
    }
    fenced = parse_backward("<answer>\n```python\n5\n```\n</answer>")
    assert (fenced.ok, fenced.path, fenced.value) == (True, "fenced", {"input": "5"})
    assert outcome_of(parse_backward("the answer is f(5)")) == NO_ANSWER_BLOCK
    assert outcome_of(parse_backward("<answer></answer>")) == EMPTY_ANSWER
    hostile = parse_backward("<answer>__import__('os').system('echo pwned')</answer>")
    assert hostile.ok  # text only: the literal rule is applied by verification
