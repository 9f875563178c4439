"""The chat messages inside a recorded request body, whatever API shape it was sent in.

The ledger stores the exact bytes that were sent (adapters/*.py build them): OpenAI-compatible
and offline predictors put `messages` with string contents; Anthropic adds a top-level `system`;
Bedrock Converse wraps each content in `[{"text": ...}]` blocks with `system` as blocks; Gemini
sends `contents` with `parts` and a `systemInstruction`. What is shown is read back from those
bytes, so the page shows what the provider received, not a re-rendering.
"""

from __future__ import annotations

from typing import Any

import orjson

Shown = dict[str, str]
"""{"role": ..., "content": ...} with the content as plain text."""

_GEMINI_ROLES = {"model": "assistant"}


def _text(content: Any) -> str:
    """A content field as text: a string, or the text of its blocks/parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = content.get("parts", [content])
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else orjson.dumps(content).decode()


def messages_from_body(body: bytes) -> list[Shown] | None:
    """The messages of a request body, or None when the body is not a chat request we know."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(payload, dict):
        return None
    out: list[Shown] = []
    system = payload.get("system", payload.get("systemInstruction"))
    if system is not None:
        out.append({"role": "system", "content": _text(system)})
    turns = payload.get("messages", payload.get("contents"))
    if not isinstance(turns, list):
        return None
    for turn in turns:
        if not isinstance(turn, dict):
            return None
        role = str(turn.get("role", "?"))
        content = turn["content"] if "content" in turn else turn.get("parts")
        out.append({"role": _GEMINI_ROLES.get(role, role), "content": _text(content)})
    return out


def pretty_body(body: bytes, limit: int) -> tuple[str, bool]:
    """A body as readable text (indented when it is JSON), cut at `limit` characters."""
    try:
        text = orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        text = body.decode("utf-8", errors="replace")
    if len(text) > limit:
        return text[:limit], True
    return text, False
