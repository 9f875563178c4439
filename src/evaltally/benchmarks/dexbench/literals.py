"""Read a backward answer as an argument tuple of Python literals, or say why not.

Model output is data: it is never evaluated as code. The text is checked before anything
parses it (size, UTF-8, NUL, bracket depth by tokenizing, which needs no recursion), then parsed
as ``(<answer>\\n,)``, every node of the tree is checked against the literal forms
``ast.literal_eval`` accepts (constants, tuples, lists, sets, dicts, signed numbers, complex
``a+bj``, the empty ``set()``), with a node budget, and only then evaluated by
``ast.literal_eval``. Refusals carry a one-line reason naming the first offending form.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass

MAX_CHARS = 50_000
MAX_DEPTH = 32
MAX_NODES = 20_000

_CONTAINERS = (ast.Tuple, ast.List, ast.Set, ast.Dict)
_PLAIN = (ast.Expression, ast.Constant, ast.expr_context, ast.UAdd, ast.USub, ast.Add, ast.Sub)
_NAMED_REFUSALS: dict[type[ast.AST], str] = {
    ast.Name: "a name",
    ast.Attribute: "attribute access",
    ast.Call: "a function call",
    ast.Lambda: "a lambda",
    ast.JoinedStr: "an f-string",
    ast.FormattedValue: "an f-string",
    ast.Subscript: "subscripting",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.Starred: "unpacking",
    ast.NamedExpr: "an assignment expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.IfExp: "a conditional expression",
    ast.BoolOp: "a boolean operator",
    ast.Compare: "a comparison",
}


@dataclass(frozen=True)
class Arguments:
    """A checked argument tuple: ``source`` is what ``ast.literal_eval`` reads back as
    ``values`` (a tuple); on refusal ``reason`` says why and the rest is empty."""

    ok: bool
    source: str = ""
    values: tuple[object, ...] = ()
    reason: str = ""


def _refuse(reason: str) -> Arguments:
    return Arguments(ok=False, reason=reason)


def _decode(answer: str | bytes) -> str | Arguments:
    if isinstance(answer, bytes):
        try:
            return answer.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _refuse(f"not valid UTF-8 (byte {exc.start})")
    try:
        answer.encode("utf-8")
    except UnicodeEncodeError as exc:
        return _refuse(f"not valid UTF-8 (lone surrogate at character {exc.start})")
    return answer


def _depth_problem(text: str) -> str | None:
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
                if depth > MAX_DEPTH:
                    return f"nested deeper than {MAX_DEPTH} brackets"
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
    except (tokenize.TokenError, SyntaxError) as exc:
        return f"not Python literal syntax ({exc.args[0] if exc.args else exc})"
    return None


def _node_problem(tree: ast.AST) -> str | None:
    count = 0
    for node in ast.walk(tree):
        count += 1
        if count > MAX_NODES:
            return f"more than {MAX_NODES} literal parts"
        if isinstance(node, _PLAIN + _CONTAINERS):
            continue
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            continue  # literal_eval accepts only real +/- complex constants here
        if _is_empty_set(node) or (isinstance(node, ast.Name) and node.id == "set"):
            continue
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            return "an operator (only literals and complex numbers like 1+2j are accepted)"
        what = _NAMED_REFUSALS.get(type(node), type(node).__name__)
        return f"{what} is not a literal"
    return None


def _is_empty_set(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "set"
        and not node.args
        and not node.keywords
    )


def _parse(text: str) -> tuple[ast.Expression, str] | str:
    """The answer as a tuple expression and its source, or a reason (a trailing comma is
    allowed; the newline keeps a trailing comment from swallowing the closing bracket)."""
    forms = [f"({text}\n,)"]
    if text.rstrip().endswith(","):
        forms.append(f"({text}\n)")
    reason = "not Python literal syntax"
    for source in forms:
        try:
            tree = ast.parse(source, mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            reason = f"not Python literal syntax ({exc.args[0] if exc.args else exc})"
            continue
        if isinstance(tree.body, ast.Tuple):
            return tree, source
    return reason


def check_arguments(answer: str | bytes) -> Arguments:
    """The answer's argument tuple, or the reason it is refused (never evaluated as code)."""
    text = _decode(answer)
    if isinstance(text, Arguments):
        return text
    if "\0" in text:
        return _refuse("contains a NUL character")
    if len(text) > MAX_CHARS:
        return _refuse(f"longer than {MAX_CHARS} characters ({len(text)})")
    if not text.strip():
        return _refuse("empty: no argument values")
    problem = _depth_problem(text)
    if problem:
        return _refuse(problem)
    parsed = _parse(text)
    if isinstance(parsed, str):
        return _refuse(parsed)
    tree, source = parsed
    problem = _node_problem(tree)
    if problem:
        return _refuse(problem)
    try:
        values = ast.literal_eval(tree)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        return _refuse(f"not a literal ({exc})")
    return Arguments(ok=True, source=source, values=values)
