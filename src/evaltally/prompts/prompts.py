"""Messages of the generic `prompts` benchmark, from an item's plain data.

An item is `{"messages": [...]}` (sent as written) or `{"system"?: str, "turns": [str, ...]}`:
turn k is sent after the earlier turns, each followed by the model's own recorded answer as an
assistant message (an empty one when that answer is missing). Pure: plain data in, messages
out; the same inputs give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaltally.records import Message


def render(item: Mapping[str, Any], step: int, answers: Sequence[str | None]) -> list[Message]:
    """The messages of `step` of `item`, given the raw answers to its earlier turns."""
    if "messages" in item:
        return [dict(m) for m in item["messages"]]
    messages: list[Message] = []
    if item.get("system"):
        messages.append({"role": "system", "content": item["system"]})
    for turn in range(step):
        messages.append({"role": "user", "content": item["turns"][turn]})
        answer = answers[turn] if turn < len(answers) else None
        messages.append({"role": "assistant", "content": answer or ""})
    messages.append({"role": "user", "content": item["turns"][step]})
    return messages
