"""The program text a model sees, built from an upstream record (pure; docs/dexbench.md).

CRUXEval: sorted ``import X`` lines for the standard-library modules the code uses as ``X.``
(always ``unittest``), a blank line, the code, two blank lines, then
``unittest.TestCase().assertEqual(f(<input>), <output>)`` with the record's input and output
strings verbatim.

HumanEval and PythonSaga: the solution (prompt + canonical solution) must have control flow;
its triple-quoted strings are removed and runs of blank lines collapsed to one; the script is
the fixed imports, a blank line, the solution, two blank lines and one test assertion (the first
``assert candidate(``, or a later assertion of any form: ``build.py`` says which) turned into a
``unittest`` call (``candidate`` renamed to the entry point; ``==`` -> assertEqual,
``!=`` -> assertNotEqual, ``is False`` -> assertFalse, anything else -> assertTrue). The
assertion is written by ``ast.unparse``, so a multi-line upstream assertion becomes one line.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass

CRUX_CONTROL_FLOW = re.compile(r"\b(if|elif|else|for|while)\b")
_ATTRIBUTE_BASE = re.compile(r"\b([A-Za-z_]\w*)\.")
_TRIPLE_QUOTED = re.compile(r"[rRbBuU]?(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?''')")
SCRIPT_IMPORTS = ("unittest", "sys", "io", "datetime", "math")
CRUX_ENTRY_POINT = "f"
_STDLIB = frozenset(n for n in sys.stdlib_module_names if not n.startswith("_"))


def _join(imports: list[str], body: str, assertion: str) -> str:
    head = "".join(f"import {name}\n" for name in imports)
    return f"{head}\n{body.rstrip()}\n\n\n{assertion}\n"


def has_crux_control_flow(code: str) -> bool:
    return CRUX_CONTROL_FLOW.search(code) is not None


def cruxeval_program(code: str, input_text: str, output_text: str) -> str:
    used = {m for m in _ATTRIBUTE_BASE.findall(code) if m in _STDLIB}
    imports = sorted(used | {"unittest"})
    assertion = f"unittest.TestCase().assertEqual({CRUX_ENTRY_POINT}({input_text}), {output_text})"
    return _join(imports, code, assertion)


def control_flow_count(tree: ast.AST) -> int:
    """Decision points: if/elif/for/while, a non-elif else, except handlers and finally,
    with, each boolean operand beyond the first, conditional expressions."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            count += 1
            elif_ = (
                isinstance(node, ast.If)
                and len(node.orelse) == 1
                and isinstance(node.orelse[0], ast.If)
                and node.orelse[0].col_offset == node.col_offset
            )
            count += int(bool(node.orelse) and not elif_)
        elif isinstance(node, (ast.Try, ast.TryStar)):
            count += len(node.handlers) + int(bool(node.finalbody))
        elif isinstance(node, (ast.With, ast.AsyncWith, ast.IfExp)):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
    return count


def strip_solution(solution: str) -> str:
    """Triple-quoted strings removed, blank runs collapsed, no leading/trailing blank lines."""
    lines = _TRIPLE_QUOTED.sub("", solution).split("\n")
    out: list[str] = []
    for line in lines:
        if line.strip():
            out.append(line)
        elif out and out[-1] != "":
            out.append("")
    return "\n".join(out).strip("\n")


@dataclass(frozen=True)
class Assertion:
    """One upstream test assertion turned into the script's last line."""

    index: int
    """0-based position among the test's ``assert`` statements."""
    assertion: str
    input: str
    """The arguments of the first entry-point call, as written by ``ast.unparse`` ("" when
    the assertion does not call it, like upstream's ``assert True``)."""


class _Rename(ast.NodeTransformer):
    def __init__(self, entry_point: str) -> None:
        self.entry_point = entry_point

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == "candidate":
            return ast.copy_location(ast.Name(id=self.entry_point, ctx=node.ctx), node)
        return node


def _unittest_call(test: ast.expr) -> str:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        left = ast.unparse(test.left)
        if isinstance(op, ast.Eq):
            return f"unittest.TestCase().assertEqual({left}, {ast.unparse(right)})"
        if isinstance(op, ast.NotEq):
            return f"unittest.TestCase().assertNotEqual({left}, {ast.unparse(right)})"
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is False:
            return f"unittest.TestCase().assertFalse({left})"
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is True:
            return f"unittest.TestCase().assertTrue({left})"
    return f"unittest.TestCase().assertTrue({ast.unparse(test)})"


def _call_input(test: ast.expr, entry_point: str) -> str:
    calls = [
        n
        for n in ast.walk(test)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == entry_point
    ]
    if not calls:
        return ""
    first = min(calls, key=lambda c: (c.lineno, c.col_offset))
    parts = [ast.unparse(a) for a in first.args]
    for k in first.keywords:
        parts.append(f"{k.arg}={ast.unparse(k.value)}" if k.arg else f"**{ast.unparse(k.value)}")
    return ", ".join(parts)


def test_calls(test_source: str, entry_point: str) -> Iterator[Assertion]:
    """The test's assertions from its first ``assert candidate(`` on, in source order."""
    lines = test_source.split("\n")
    asserts = sorted(
        (n for n in ast.walk(ast.parse(test_source)) if isinstance(n, ast.Assert)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    started = False
    for index, node in enumerate(asserts):
        started = started or lines[node.lineno - 1].strip().startswith("assert candidate(")
        if started:
            test = _Rename(entry_point).visit(node.test)
            yield Assertion(index, _unittest_call(test), _call_input(test, entry_point))


def script_program(solution: str, assertion: str) -> str:
    return _join(list(SCRIPT_IMPORTS), strip_solution(solution), assertion)
