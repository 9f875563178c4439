"""The executable-line rule, coverage as measured in the sandbox, and the backward target."""

from __future__ import annotations

import ast
import textwrap

from evaltally.benchmarks.dexbench.coverage import Trace, new_pool, trace
from evaltally.benchmarks.dexbench.lines import (
    RULE_BODY,
    RULE_LINE,
    RULE_RETURN,
    Target,
    choose_target,
    executable_lines,
)

EDGES = textwrap.dedent(
    """\
    import unittest

    class Box:
        size = 1

        def grow(self, n: int) -> int:
            if n > 0:
                return n
            else:
                return 0


    def never():
        global counter
        counter = 1


    def f(x, y=2):
        return Box().grow(x)


    unittest.TestCase().assertEqual(f(3), 3)
    """
)


def test_class_else_and_plain_def_lines_are_not_executable_annotated_and_default_ones_are() -> None:
    lines = executable_lines(ast.parse(EDGES))
    assert 3 not in lines  # class Box:
    assert 6 in lines  # def grow(self, n: int) -> int:  (annotations are expressions)
    assert 9 not in lines  # else:
    assert 13 not in lines  # def never():
    assert 18 in lines  # def f(x, y=2):  (a default value is an expression)
    assert lines == {1, 4, 6, 7, 8, 10, 14, 15, 18, 19, 22}


async def test_a_line_without_bytecode_is_never_missing_so_it_counts_as_covered() -> None:
    async with new_pool(1) as pool:
        run = await trace(pool, EDGES)
    assert isinstance(run, Trace) and run.error is None
    # `global counter` (14) has no bytecode: never reported missing, so covered although
    # never() is not called; its body line 15 is uncovered, as is the else branch (10).
    assert run.uncovered == {10, 15}
    assert 14 in run.covered and {6, 7, 8, 18, 19, 22} <= run.covered


async def test_a_failing_assertion_is_an_error_with_the_lines_run_before_it() -> None:
    program = EDGES.replace("assertEqual(f(3), 3)", "assertEqual(f(3), 4)")
    async with new_pool(1) as pool:
        run = await trace(pool, program)
    assert isinstance(run, Trace)
    assert run.error is not None and run.error.startswith("AssertionError: 3 != 4")
    assert {7, 8} <= run.covered


def _target(source: str, uncovered: set[int]) -> Target | None:
    return choose_target(ast.parse(textwrap.dedent(source)), frozenset(uncovered))


def test_target_is_the_uncovered_branch_with_most_body_lines() -> None:
    source = """\
    def f(x):
        if x > 10:
            a = 1
        for i in range(x):
            b = 2
            c = 3
        return 0
    """
    assert _target(source, {3, 5, 6}) == Target(4, RULE_BODY, (5, 6))
    tie = "\n".join(line for line in source.split("\n") if "c = 3" not in line)
    # the if and the loop have one body line each: the first in source order wins
    assert _target(tie, {3, 5}) == Target(2, RULE_BODY, (3,))


def test_if_body_includes_else_for_candidacy_but_success_needs_the_body() -> None:
    source = """\
    def f(x):
        if x:
            a = 1
        else:
            a = 2
        return a
    """
    assert _target(source, {3, 5}) == Target(2, RULE_BODY, (3,))
    # the else ran, so the if is no candidate; the uncovered line is inside its body
    assert _target(source, {3}) == Target(3, RULE_LINE, (3,))


def test_nested_uncovered_branches_pick_the_outer_one() -> None:
    source = """\
    def f(x):
        while x:
            if x > 1:
                x -= 2
            x -= 1
        return x
    """
    assert _target(source, {3, 4, 5}) == Target(2, RULE_BODY, (3, 4, 5))


def test_try_and_with_targets_need_their_header_line() -> None:
    source = """\
    def f(x):
        if x:
            return 1
        try:
            y = 1 / x
        except ZeroDivisionError:
            y = 0
        return y
    """
    # the try ran (its handler did not), so only the if can be a candidate
    assert _target(source, {3, 5, 8}) == Target(2, RULE_BODY, (3,))
    assert _target(source, {4, 5, 6, 7, 8}) == Target(4, RULE_LINE, (4,))


def test_without_candidates_the_smallest_uncovered_line_outside_bodies_then_any() -> None:
    source = """\
    def f(x):
        if x:
            y = 1
            return y
        return 2
    """
    assert _target(source, {4, 5}) == Target(5, RULE_RETURN, (5,))
    assert _target(source, {4}) == Target(4, RULE_RETURN, (4,))
    assert _target(source, set()) is None
