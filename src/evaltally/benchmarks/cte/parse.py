"""Reading a model's answer to a CTE prompt. Never `eval`: JSON only.

1. "strict": the whole text (surrounding whitespace allowed) is one JSON object.
2. "tolerant" (the release's repair path): trim, drop a BOM and a surrounding markdown fence,
   take the first balanced `{...}`, drop trailing commas before `}`/`]`, parse as JSON.
Anything else is a parse failure; the raw text stays in the ledger. NaN/Infinity are refused
on both paths: they are not JSON and could not be stored canonically.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evaltally.benchmarks.base import ParseResult

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)\r?\n?```$", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constants)


def first_object(text: str) -> str | None:
    """The first balanced `{...}` of `text`, braces inside JSON strings ignored."""
    start = text.find("{")
    if start < 0:
        return None
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def parse_answer(text: str) -> ParseResult:
    try:
        value = _loads(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return ParseResult(ok=True, value=value, path="strict")
    cleaned = text.strip().lstrip("\ufeff").strip()
    fence = _FENCE.match(cleaned)
    if fence:
        cleaned = fence.group(1).strip()
    candidate = first_object(cleaned)
    if candidate is None:
        return ParseResult(ok=False, error="no JSON object in the answer")
    candidate = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        value = _loads(candidate)
    except (ValueError, RecursionError) as exc:
        return ParseResult(ok=False, error=f"not JSON after repair: {exc}")
    if not isinstance(value, dict):  # pragma: no cover - a balanced {...} decodes to a dict
        return ParseResult(ok=False, error="not a JSON object")
    return ParseResult(ok=True, value=value, path="tolerant")
