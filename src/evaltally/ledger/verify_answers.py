"""`tally verify`: every answered outcome must be backed by what the provider sent.

The hash chains prove rows were not edited after they were written; they cannot tell a row the
runner wrote from one appended later with a correctly computed hash. So each `ok` or
`parse_error` outcome is cross-checked against the ledger's own evidence: a successful attempt
of the same call, recorded before the outcome, whose stored response body holds the outcome's
text. An appended answer then also needs a forged attempt with a forged response body.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from typing import Any

import orjson

from evaltally.ledger import bodies
from evaltally.ledger.current import FINAL

_ANSWERED = f"""
SELECT o.seq, o.call_id, o.raw_text, (
    SELECT a.response_body FROM attempts a
    WHERE a.call_id = o.call_id AND a.kind = 'end' AND a.error_class IS NULL
      AND a.response_body IS NOT NULL AND a.ev < o.ev
    ORDER BY a.ev DESC LIMIT 1)
FROM outcomes o WHERE o.status IN {FINAL} ORDER BY o.seq
"""


def unbacked_answers(conn: sqlite3.Connection) -> Iterator[str]:
    for seq, call_id, text, packed in conn.execute(_ANSWERED):
        where = f"outcomes seq {seq} (call {str(call_id)[:8]}…)"
        if packed is None:
            yield (
                f"{where}: answered, but the call has no successful attempt before it — "
                "the outcome was not recorded from a provider's answer"
            )
            continue
        try:
            body = bodies.unpack(packed)
        except zlib.error:
            body = b""
        if text is None or not holds_text(body, text):
            yield (
                f"{where}: its raw_text is not the text of the call's successful response "
                "body — the recorded answer is not the one the provider sent"
            )
            continue
        echoed = echoed_call(body)
        if echoed is not None and echoed != call_id:
            yield (
                f"{where}: answered from a batch result line that names call "
                f"{echoed[:8]}… — the answer was recorded for the wrong call"
            )


def echoed_call(body: bytes) -> str | None:
    """The call id a batch result line names (`custom_id`, Gemini's `metadata.key`), if any."""
    if not body.startswith(b"{") or (b'"custom_id"' not in body and b'"key"' not in body):
        return None
    try:
        line = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(line, dict):
        return None
    metadata = line.get("metadata")
    echoed = line.get("custom_id") or (metadata.get("key") if isinstance(metadata, dict) else None)
    return echoed if isinstance(echoed, str) else None


def holds_text(body: bytes, text: str) -> bool:
    """True when `text` is what an adapter reads from `body`: the whole body (an offline
    predictor stores its text as the body) or, in a JSON body, one string value or several
    joined in document order (Anthropic, Gemini and Bedrock answers are joined text parts)."""
    if body == text.encode():
        return True
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return _joined(text, list(_strings(doc)))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _joined(text: str, parts: list[str]) -> bool:
    """Is `text` a concatenation of some of `parts`, taken in order? (Positions in `text` that
    a prefix of the chosen parts can reach; parts not chosen are skipped.)"""
    reached = {0}
    for part in parts:
        if part:
            reached |= {i + len(part) for i in reached if text.startswith(part, i)}
    return len(text) in reached
