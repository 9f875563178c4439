"""DexBench prompts (wording ours; task structure as the paper's one-shot prompts).

Pure: plain data in (program text, line numbers, input text), chat messages out; nothing from
``evaltally.benchmarks`` is imported. Every prompt is a system message, one worked example (a
user turn and the assistant's answer) and the task, with the program numbered ``%3d | ``.

- forward: predict the executed lines of the program as shown (the call with its input and the
  expected output is the last line); answer ``{"executed_lines": [...]}`` in an answer block.
- backward, ``mutate`` (the paper's task): given the target line and the current input, change
  the input so that the target is reached; answer only the comma-separated argument values as
  Python literals in an answer block.
- backward, ``generate`` (the paper's ablation): the same without the current input.

``PROMPT_VERSION`` changes whenever a rendered byte changes, so ledgers say which wording
produced an answer.
"""

from __future__ import annotations

from evaltally.records import Message

PROMPT_VERSION = "dexbench-v2"
#: dexbench-v1's forward line rule said a line counts when it runs, which the ground truth
#: contradicts on lines Python compiles to no code (HumanEval/150's `break` after a `return`,
#: HumanEval/156's continuation lines of constant lists count though they never run), and that
#: an except line counts only when its handler is entered. It still renders, so runs planned
#: with it resume with their recorded bytes (`prompt_version = "dexbench-v1"`); the backward
#: prompt is the same in both.
PROMPT_VERSIONS = ("dexbench-v1", "dexbench-v2")
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"
BACKWARD_MODES = ("mutate", "generate")
RULE_BODY = "body"

_LINE_RULE_V1 = (
    "A line counts as executed when a statement or expression on it runs at least once: "
    "imports, assignments, if/elif/while conditions, for headers, try lines, except lines whose "
    "handler is entered, return lines and the final assertion line. A def line counts only "
    "when it holds annotations or default values (they are evaluated when the function is "
    "defined); class lines, else: lines, finally: lines and blank lines never count."
)

#: Exactly how the ground truth counts lines (benchmarks/dexbench/lines.py, docs/dexbench.md;
#: tests/dexbench/test_dex_line_rule.py checks all shipped ground truths against this text).
LINE_RULE = (
    "Line rule. Only a line that holds part of a statement or an expression can count. Such a "
    "line counts as executed when Python runs code written on it at least once: imports, "
    "assignments, expression statements, if/elif/while conditions, for headers (also when the "
    "loop ends), try: lines, return/raise/break/continue/pass lines and the final assertion "
    "line; a statement written over several lines counts on each of its lines whose code "
    "runs. An except line counts when an exception reaches it and its type is tested, even if "
    "a later handler is the one entered. A def or class line counts only when an expression "
    "is written on it (a default value, an annotation, a base class), evaluated when the def "
    "or class statement runs; a def or class line without one, else: and finally: lines, "
    "blank lines and comments never count. One exception: a line that holds part of a "
    "statement or expression but for which Python generates no code counts as executed even "
    "when execution never reaches it. Two such cases: a continuation line of a list or tuple "
    "written only with constants (Python folds it into the line where the literal starts), "
    "and a statement right after a return, raise, break or continue in the same block "
    "(Python drops it as unreachable)."
)


def forward_system(version: str = PROMPT_VERSION) -> str:
    rule = _LINE_RULE_V1 if version == "dexbench-v1" else LINE_RULE
    return (
        "You reason about the execution of Python programs. You are given a program with "
        "numbered lines; it runs from top to bottom, and its last line calls the function "
        "under test with a concrete input and checks the expected output. Work out which "
        "lines are executed. "
        + rule
        + " End your reply with the sorted list of executed line numbers as a JSON object "
        f'{{"executed_lines": [...]}} inside {ANSWER_OPEN}...{ANSWER_CLOSE}.'
    )


BACKWARD_SYSTEM = (
    "You reason about the execution of Python programs. You are given a program with numbered "
    "lines whose last line calls the function under test, and a target line that the current "
    "call does not reach. Find arguments for that function that make the execution reach the "
    "target. End your reply with only the comma-separated argument values, written as Python "
    f"literals (no names, calls or expressions), inside {ANSWER_OPEN}...{ANSWER_CLOSE}."
)

EXAMPLE_PROGRAM = """\
import unittest

def f(nums):
    total = 0
    for n in nums:
        if n % 2 == 0:
            total += n
        else:
            total -= 1
    return total


unittest.TestCase().assertEqual(f([2, 4]), 6)
"""
EXAMPLE_EXECUTED = (1, 4, 5, 6, 7, 10, 13)
EXAMPLE_ENTRY = "f"
EXAMPLE_INPUT = "[2, 4]"
EXAMPLE_TARGET_LINE = 9
EXAMPLE_TARGET_RULE = "line"
EXAMPLE_BACKWARD_ANSWER = "[2, 3]"


def program_lines(program: str) -> list[str]:
    """The lines as Python numbers them (split on newlines only, unlike ``str.splitlines``)."""
    lines = program.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def numbered(program: str) -> str:
    """The program as shown to the model: every line prefixed with ``%3d | ``."""
    return "\n".join(f"{n:3d} | {line}" for n, line in enumerate(program_lines(program), 1))


def _block(text: str) -> str:
    return f"{ANSWER_OPEN}{text}{ANSWER_CLOSE}"


def _forward_task(program: str) -> str:
    return f"Program:\n{numbered(program)}\n\nWhich lines are executed?"


def forward_messages(program: str, version: str = PROMPT_VERSION) -> list[Message]:
    example_answer = '{"executed_lines": [' + ", ".join(map(str, EXAMPLE_EXECUTED)) + "]}"
    return [
        {"role": "system", "content": forward_system(version)},
        {"role": "user", "content": _forward_task(EXAMPLE_PROGRAM)},
        {"role": "assistant", "content": _block(example_answer)},
        {"role": "user", "content": _forward_task(program)},
    ]


def _goal(target_line: int, target_rule: str, program: str) -> str:
    text = program_lines(program)[target_line - 1].strip()
    if target_rule == RULE_BODY:
        return (
            f"Target: line {target_line} (`{text}`). Make its body run: at least one line "
            "inside the body of this branch must execute (for an if, its else does not count)."
        )
    return f"Target: line {target_line} (`{text}`). Make this line execute."


def _backward_task(
    program: str, entry_point: str, target_line: int, target_rule: str, current: str | None
) -> str:
    parts = [f"Program:\n{numbered(program)}", _goal(target_line, target_rule, program)]
    if current is None:
        parts.append(f"Give arguments for `{entry_point}` that reach the target.")
    else:
        shown = current if current else "(no arguments: the last line does not call it)"
        parts.append(
            f"Current arguments of `{entry_point}` (last line): {shown}\n"
            "Change them so that the execution reaches the target."
        )
    return "\n\n".join(parts)


def backward_messages(
    program: str,
    *,
    entry_point: str,
    target_line: int,
    target_rule: str,
    current_input: str,
    mode: str = "mutate",
) -> list[Message]:
    """The backward prompt; ``mode = "generate"`` leaves the current input out (ablation)."""
    if mode not in BACKWARD_MODES:
        raise ValueError(f"backward mode must be one of {', '.join(BACKWARD_MODES)}: {mode!r}")
    keep = mode == "mutate"
    example = _backward_task(
        EXAMPLE_PROGRAM,
        EXAMPLE_ENTRY,
        EXAMPLE_TARGET_LINE,
        EXAMPLE_TARGET_RULE,
        EXAMPLE_INPUT if keep else None,
    )
    task = _backward_task(
        program, entry_point, target_line, target_rule, current_input if keep else None
    )
    return [
        {"role": "system", "content": BACKWARD_SYSTEM},
        {"role": "user", "content": example},
        {"role": "assistant", "content": _block(EXAMPLE_BACKWARD_ANSWER)},
        {"role": "user", "content": task},
    ]
