"""Thinking that a server writes inline, at the start of the answer text.

Reasoning models served through OpenAI-compatible hosts without a reasoning parser (DeepSeek-R1
and Qwen3/QwQ on routers, Groq's `reasoning_format = "raw"`, vLLM without `--reasoning-parser`,
Ollama's older builds) put their thinking in `message.content` as `<think>…</think>` before the
answer. Read as the answer, the thinking reaches the benchmark's parser and the reasoning audit
sees none. `split_thinking` moves a LEADING block out of the answer; the raw response body is
stored as received either way (the attempt row), so nothing is lost by splitting.

Only a block at the very start counts (after whitespace): a model that mentions the tag later in
its answer is answering, not thinking. Two real variants besides the plain block:

- no opening tag, a closing tag: chat templates of DeepSeek-R1 (and vLLM serving it) put
  `<think>` in the prompt, so the completion starts inside the block and only closes it;
- an opening tag never closed: the token budget ran out while thinking (finish "length"): all of
  it is thinking, the answer is empty.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_OPEN = "<think>"
DEFAULT_CLOSE = "</think>"


@dataclass(frozen=True, slots=True)
class ThinkTags:
    """The tags that delimit inline thinking (config: `[models.inline_thinking]`)."""

    open: str = DEFAULT_OPEN
    close: str = DEFAULT_CLOSE


def split_thinking(text: str, tags: ThinkTags) -> tuple[str, str | None]:
    """(answer, thinking) from answer text that may start with an inline thinking block;
    thinking is None when there was no block (an empty block gives "")."""
    body = text.lstrip()
    if body.startswith(tags.open):
        inside = body[len(tags.open) :]
        end = inside.find(tags.close)
        if end < 0:
            return "", inside.strip()
        return inside[end + len(tags.close) :].lstrip(), inside[:end].strip()
    end = body.find(tags.close)
    if end >= 0 and tags.open not in body[:end]:
        return body[end + len(tags.close) :].lstrip(), body[:end].strip()
    return text, None


INLINE_THINK = ThinkTags()
"""The tags reasoning models use (DeepSeek-R1, Qwen3, QwQ, gpt-oss through vLLM)."""
