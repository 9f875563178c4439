"""Reading observer answers and judge verdicts.

The verdict parser is strict on purpose: a verdict it cannot read is a `parse_error` outcome
(scored 0 under intention-to-evaluate and counted as an invalid verdict), never a score guessed
from free text. Accepted: the last non-blank line is `VERDICT: 1`, `VERDICT: 0.5` or
`VERDICT: 0` (spaces around the score allowed), and no other line starts with "verdict".
"""

from __future__ import annotations

import re

from evaltally.benchmarks.base import ParseResult
from evaltally.prompts.ctxgap import VERDICT_PREFIX, VERDICT_SCORES

_VERDICT_LINE = re.compile(
    rf"^{re.escape(VERDICT_PREFIX)}[ \t]*({'|'.join(map(re.escape, VERDICT_SCORES))})[ \t]*$"
)
_MENTIONS_VERDICT = re.compile(r"^\W*verdict", re.IGNORECASE)


def parse_observer(text: str) -> ParseResult:
    """Any non-blank text is an answer (a refusal is an answer the judge scores 0)."""
    answer = text.strip()
    if not answer:
        return ParseResult(ok=False, error="empty answer")
    return ParseResult(ok=True, value=answer, path="text")


def parse_verdict(text: str) -> ParseResult:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ParseResult(ok=False, error="empty verdict")
    match = _VERDICT_LINE.match(lines[-1])
    if match is None:
        scores = ", ".join(VERDICT_SCORES)
        return ParseResult(
            ok=False, error=f"the last line is not '{VERDICT_PREFIX} <score>' with one of {scores}"
        )
    if any(_MENTIONS_VERDICT.match(line) for line in lines[:-1]):
        return ParseResult(ok=False, error="more than one verdict line")
    return ParseResult(ok=True, value=float(match.group(1)), path="verdict")
