"""Reading DexBench answers. Never ``eval``: JSON for forward answers, and for backward
answers only the text of the answer block (the literal check is part of verification).

Both parsers look for the last ``<answer>...</answer>`` block (an earlier one is usually an
example or a draft). Without one the outcome is ``no_answer_block``: nothing outside a block is
read, so a stray number in the reasoning is never taken for an answer.

Forward, inside the block (a surrounding markdown fence is dropped first):
  ``json``      a JSON object ``{"executed_lines": [...]}``
  ``tolerant``  the first balanced ``{...}`` in the block, with trailing commas removed
  ``list``      a bare JSON list of line numbers
The list must hold integers only (``true`` and ``3.0`` are not line numbers), at most
``MAX_LINES`` of them; the parsed value is ``{"executed_lines": sorted unique lines}``.

Backward: ``block`` or ``fenced`` (a markdown fence was dropped); the value is
``{"input": text}``. An empty block is ``empty_answer``.

Failures carry ``error = "<outcome>: <detail>"``; ``outcome_of`` returns the outcome code.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evaltally.benchmarks.base import ParseResult
from evaltally.benchmarks.cte.parse import first_object
from evaltally.prompts.dexbench import ANSWER_CLOSE, ANSWER_OPEN

NO_ANSWER_BLOCK = "no_answer_block"
EMPTY_ANSWER = "empty_answer"
NOT_JSON = "not_json"
WRONG_SHAPE = "wrong_shape"
NOT_LINE_NUMBERS = "not_line_numbers"
OUTCOMES = (NO_ANSWER_BLOCK, EMPTY_ANSWER, NOT_JSON, WRONG_SHAPE, NOT_LINE_NUMBERS)
MAX_LINES = 10_000

_BLOCK = re.compile(re.escape(ANSWER_OPEN) + r"(.*?)" + re.escape(ANSWER_CLOSE), re.S | re.I)
_FENCE = re.compile(r"^```[A-Za-z0-9_+-]*[ \t]*\r?\n(.*?)\r?\n?```$", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _fail(outcome: str, detail: str) -> ParseResult:
    return ParseResult(ok=False, error=f"{outcome}: {detail}")


def outcome_of(result: ParseResult) -> str:
    """``ok`` or the failure's outcome code."""
    if result.ok:
        return "ok"
    return (result.error or "").split(":", 1)[0]


def answer_block(text: str) -> tuple[str, bool] | None:
    """The last answer block's content (stripped) and whether a markdown fence was dropped."""
    blocks = _BLOCK.findall(text)
    if not blocks:
        return None
    content = blocks[-1].strip()
    fence = _FENCE.match(content)
    return (fence.group(1).strip(), True) if fence else (content, False)


def _loads(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _lines(value: Any, path: str) -> ParseResult:
    if isinstance(value, dict):
        if set(value) != {"executed_lines"}:
            return _fail(WRONG_SHAPE, 'expected exactly one key, "executed_lines"')
        value = value["executed_lines"]
    if not isinstance(value, list):
        return _fail(WRONG_SHAPE, "executed_lines is not a list")
    if not all(type(v) is int for v in value):
        bad = next(v for v in value if type(v) is not int)
        return _fail(NOT_LINE_NUMBERS, f"not an integer line number: {json.dumps(bad)[:40]}")
    if len(value) > MAX_LINES:
        return _fail(NOT_LINE_NUMBERS, f"more than {MAX_LINES} line numbers")
    return ParseResult(ok=True, value={"executed_lines": sorted(set(value))}, path=path)


def parse_forward(text: str) -> ParseResult:
    found = answer_block(text)
    if found is None:
        return _fail(NO_ANSWER_BLOCK, f"no {ANSWER_OPEN}...{ANSWER_CLOSE} in the answer")
    content = found[0]
    if not content:
        return _fail(EMPTY_ANSWER, "the answer block is empty")
    try:
        value = _loads(content)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return _lines(value, "json")
    if isinstance(value, list):
        return _lines(value, "list")
    candidate = first_object(content)
    if candidate is None:
        return _fail(NOT_JSON, "no JSON object in the answer block")
    try:
        value = _loads(_TRAILING_COMMA.sub(r"\1", candidate))
    except (ValueError, RecursionError) as exc:
        return _fail(NOT_JSON, f"not JSON after repair: {exc}")
    return _lines(value, "tolerant")


def parse_backward(text: str) -> ParseResult:
    found = answer_block(text)
    if found is None:
        return _fail(NO_ANSWER_BLOCK, f"no {ANSWER_OPEN}...{ANSWER_CLOSE} in the answer")
    content, fenced = found
    if not content:
        return _fail(EMPTY_ANSWER, "the answer block is empty")
    return ParseResult(ok=True, value={"input": content}, path="fenced" if fenced else "block")
