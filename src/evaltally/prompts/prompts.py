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

CHOICES_VERSION = 1
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
CHOICES_INSTRUCTION = "Answer with the letter of the correct choice."


def with_choices(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item with its `choices` written under its last user message as lettered lines
    (A. ..., B. ...) and the instruction to answer with a letter (the `choice` scorer's
    prompt, version CHOICES_VERSION)."""
    lines = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(item["choices"]))
    block = f"\n\n{lines}\n\n{CHOICES_INSTRUCTION}"
    out = dict(item)
    if "turns" in item:
        out["turns"] = [*item["turns"][:-1], item["turns"][-1] + block]
        return out
    messages = [dict(m) for m in item["messages"]]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    messages[last]["content"] += block
    out["messages"] = messages
    return out


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
