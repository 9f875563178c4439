"""Reading a model's answer to a CTE prompt. Never `eval`: JSON only.

1. "strict": the whole text (surrounding whitespace allowed) is one JSON object.
2. "tolerant" (the release's repair path): trim, drop a BOM and a surrounding markdown fence,
   take the first balanced `{...}`, drop trailing commas before `}`/`]`, parse as JSON.
Anything else is a parse failure; the raw text stays in the ledger. NaN/Infinity are refused
on both paths: they are not JSON and could not be stored canonically.

`parse_release` (benchmark option `parse = "release"`) reproduces the release's repair as its
scripts do it, for numbers comparable with the paper's parse-failure rates: the same steps, but
plain brace counting (a brace inside a JSON string counts) and the trailing-comma rule applied
everywhere (inside strings too), with no strict first pass. Answers the two readings treat
differently: a string holding `}` or `{` before the object ends (the release cuts the object
there and usually fails), a string holding `,}` or `,]` (the release drops the comma inside the
string, changing the value), and NaN/Infinity (the release's decoder accepts them; here they
stay a parse failure in both modes, because a value that is not JSON cannot be stored or
exported faithfully).
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


def _strip(text: str) -> str:
    """Trim, drop a BOM and a surrounding markdown fence."""
    cleaned = text.strip().lstrip("\ufeff").strip()
    fence = _FENCE.match(cleaned)
    return fence.group(1).strip() if fence else cleaned


def first_object_release(text: str) -> str | None:
    """The first balanced `{...}` of `text` by plain brace counting, as the release does."""
    start = text.find("{")
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


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
    return _repair(first_object(_strip(text)), "tolerant")


def parse_release(text: str) -> ParseResult:
    """The release's repair exactly (see the module docstring), except NaN/Infinity."""
    return _repair(first_object_release(_strip(text)), "release")


def _repair(candidate: str | None, path: str) -> ParseResult:
    if candidate is None:
        return ParseResult(ok=False, error="no JSON object in the answer")
    candidate = _TRAILING_COMMA.sub(r"\1", candidate)
    try:
        value = _loads(candidate)
    except (ValueError, RecursionError) as exc:
        return ParseResult(ok=False, error=f"not JSON after repair: {exc}")
    if not isinstance(value, dict):  # pragma: no cover - a balanced {...} decodes to a dict
        return ParseResult(ok=False, error="not a JSON object")
    return ParseResult(ok=True, value=value, path=path)
