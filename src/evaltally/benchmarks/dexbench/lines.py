"""Line analysis of a DexBench program: executable lines, branches, the backward target.

Pure functions of the program text and the measured lines (docs/dexbench.md, "Coverage rule"
and "Backward target"):

- executable lines: the line of every AST node that has one, except the module, ``def``/``class``
  nodes and parameters (``ast.arg``). So a ``def`` line counts only when an expression sits on
  it (an annotation or a default value), ``class`` lines count only through their bases, and
  ``else:`` and ``finally:`` lines, which hold no node, never count.
- covered = executable lines minus missing lines, where missing = lines that have bytecode and
  never ran. A line without bytecode (``global``, a multi-line literal folded into one constant)
  is therefore never missing: it counts as covered whenever it is executable.
- branches: every if/for/while/try/with statement, nested ones included. Body lines: the
  executable lines under its body (plus ``else`` for if; handlers, ``else`` and ``finally`` for
  try). Candidates: branches whose body lines are all uncovered. Target: the header line of the
  candidate with the most body lines (ties: first in source order). Without a candidate: the
  smallest uncovered line outside every branch body, else the smallest uncovered line.
- success rule of the target: ``body`` (an if/for/while header: some line of its body, not its
  ``else``, runs), ``return`` (a return statement: that line runs), ``line`` (that line runs).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_NOT_EXECUTABLE = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.arg)
_LOOPS_AND_IFS = (ast.If, ast.For, ast.AsyncFor, ast.While)
_BRANCHES = (*_LOOPS_AND_IFS, ast.Try, ast.TryStar, ast.With, ast.AsyncWith)
_BODY_RULE_KINDS = frozenset(t.__name__ for t in _LOOPS_AND_IFS)

RULE_BODY = "body"
RULE_RETURN = "return"
RULE_LINE = "line"
RULES = (RULE_BODY, RULE_RETURN, RULE_LINE)


@dataclass(frozen=True)
class Branch:
    line: int
    col: int
    kind: str
    body_lines: frozenset[int]
    """Every executable line under the branch (the candidate test)."""
    success_lines: frozenset[int]
    """The lines whose execution reaches the branch (body only for if/for/while)."""


@dataclass(frozen=True)
class Target:
    line: int
    rule: str
    success_lines: tuple[int, ...]
    """Lines of which at least one must run for a backward answer to succeed."""


def _node_lines(nodes: Iterable[ast.AST]) -> set[int]:
    lines: set[int] = set()
    for top in nodes:
        for node in ast.walk(top):
            if not isinstance(node, _NOT_EXECUTABLE) and hasattr(node, "lineno"):
                lines.add(node.lineno)
    return lines


def executable_lines(tree: ast.Module) -> frozenset[int]:
    return frozenset(_node_lines([tree]))


def covered_lines(
    executable: Iterable[int], code_lines: Iterable[int], executed: Iterable[int]
) -> frozenset[int]:
    """Executable lines minus the missing ones (lines with bytecode that never ran)."""
    missing = set(code_lines) - set(executed)
    return frozenset(set(executable) - missing)


def _parts(node: ast.AST) -> tuple[list[ast.stmt], list[ast.AST]]:
    """(success part, whole body) of a branch statement."""
    if isinstance(node, ast.If):
        return node.body, [*node.body, *node.orelse]
    if isinstance(node, (ast.Try, ast.TryStar)):
        whole: list[ast.AST] = [*node.body, *node.handlers, *node.orelse, *node.finalbody]
        return node.body, whole
    assert isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith))
    return node.body, list(node.body)


def branches(tree: ast.Module) -> list[Branch]:
    """Every branch statement, in source order (line, then column)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, _BRANCHES):
            success, whole = _parts(node)
            found.append(
                Branch(
                    line=node.lineno,
                    col=node.col_offset,
                    kind=type(node).__name__,
                    body_lines=frozenset(_node_lines(whole)),
                    success_lines=frozenset(_node_lines(success)),
                )
            )
    return sorted(found, key=lambda b: (b.line, b.col))


def _returns(tree: ast.Module) -> set[int]:
    return {n.lineno for n in ast.walk(tree) if isinstance(n, ast.Return)}


def choose_target(tree: ast.Module, uncovered: Sequence[int] | frozenset[int]) -> Target | None:
    """The backward target for a program whose ``uncovered`` lines are given (None if none)."""
    missing = frozenset(uncovered)
    if not missing:
        return None
    all_branches = branches(tree)
    candidates = [b for b in all_branches if b.body_lines and b.body_lines <= missing]
    if candidates:
        best = max(candidates, key=lambda b: len(b.body_lines))  # max keeps the first of ties
        if best.kind in _BODY_RULE_KINDS:
            return Target(best.line, RULE_BODY, tuple(sorted(best.success_lines)))
        return Target(best.line, RULE_LINE, (best.line,))
    in_bodies = frozenset().union(*(b.body_lines for b in all_branches))
    outside = missing - in_bodies
    line = min(outside) if outside else min(missing)
    rule = RULE_RETURN if line in _returns(tree) else RULE_LINE
    return Target(line, rule, (line,))


def reached(target_lines: Iterable[int], covered: Iterable[int]) -> bool:
    """True when some line of ``target_lines`` is covered."""
    return not set(target_lines).isdisjoint(covered)
