"""Messages of the generic `prompts` benchmark, from an item's plain data.

An item is `{"messages": [...]}` (sent as written) or `{"system"?: str, "turns": [str, ...]}`:
turn k is sent after the earlier turns, each followed by the model's own recorded answer as an
assistant message (an empty one when that answer is missing). Pure: plain data in, messages
out; the same inputs give the same bytes. Also the lettered choices of the `choice` scorer and
the `model` scorer's grading rubric (its version is recorded with every verdict).
"""

from __future__ import annotations

import json
import re
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


RUBRIC_VERSION = "builtin-1"
RUBRIC = """You are grading an answer to a question against a reference answer.

Question:
{question}

Reference answer:
{target}

Answer to grade:
{answer}

Judge only whether the answer to grade says what the reference answer says; ignore style,
length and wording. Explain briefly, then end with exactly one line:
VERDICT: CORRECT, VERDICT: PARTIAL or VERDICT: INCORRECT"""
_SLOTS = re.compile(r"\{(question|target|answer)\}")


def question_text(item: Mapping[str, Any]) -> str:
    """The last user message of an item: what a grader is told the question was."""
    if "turns" in item:
        return str(item["turns"][-1])
    return str([m for m in item["messages"] if m["role"] == "user"][-1]["content"])


def grader_messages(
    item: Mapping[str, Any], answer: str | None, rubric: str = RUBRIC
) -> list[Message]:
    """The grader's request: the rubric with its {question}, {target} and {answer} slots
    filled in one pass (text inside the values is never substituted again)."""
    target = item.get("target")
    values = {
        "question": question_text(item),
        "target": target if isinstance(target, str) else json.dumps(target, ensure_ascii=False),
        "answer": answer or "",
    }
    return [{"role": "user", "content": _SLOTS.sub(lambda m: values[m.group(1)], rubric)}]
