"""What the mock model says: generated answers, scripted answers, and token counts.

Generated answers are a pure function of (seed, raw request body): a small JSON object, so
benchmarks that parse JSON answers parse it. Scripted answers come from a JSONL file so a test can
play a model turn by turn. Token counts are len(text)/4 estimates: cheap, deterministic, and close
enough to real tokenizers for rate-limit and cost arithmetic.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaltally.errors import DataError
from evaltally.jsonl import read_objects

FINISH_KINDS = ("stop", "length", "safety")


@dataclass(frozen=True)
class Prompt:
    """A request normalized across dialects."""

    model: str
    system: str
    messages: tuple[tuple[str, str], ...]  # (role, text); roles normalized to user/assistant
    max_tokens: int | None
    params: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def last_user(self) -> str:
        for role, text in reversed(self.messages):
            if role == "user":
                return text
        return ""

    @functools.cached_property
    def prompt_token_count(self) -> int:
        """Estimated prompt tokens (computed once: the limiter and the usage both need it)."""
        chars = len(self.system) + sum(len(t) for _, t in self.messages)
        # A few tokens of per-message framing, as chat templates add.
        return estimate_tokens_chars(chars) + 3 * len(self.messages) + (3 if self.system else 0)


@dataclass(frozen=True)
class Completion:
    """What the model produced, before a dialect renders it."""

    text: str
    finish: str  # "stop" | "length" | "safety" | "blocked"
    prompt_tokens: int
    completion_tokens: int  # visible + reasoning
    reasoning_tokens: int
    cached_tokens: int
    reasoning_shape: str = "usage"
    """Where the OpenAI dialect shows reasoning (MockConfig.reasoning_shape)."""
    block_reason: str = "SAFETY"
    """The reason a Gemini safety stop or blocked prompt names (MockConfig.block_reason)."""

    @property
    def thinking(self) -> str:
        """Visible thinking of about `reasoning_tokens` tokens, for shapes that show it."""
        words = "Reading the request step by step. "
        return (words * (self.reasoning_tokens * 4 // len(words) + 1)).strip()


REASONING_SHAPES = ("usage", "inline", "parts", "total_only")
"""How hosts report reasoning in chat completions: a count in
usage.completion_tokens_details (OpenAI); a `<think>` block at the start of the content with no
count (DeepSeek-R1 on routers, Groq raw, vLLM without a parser, Ollama); Mistral's
content parts [{"type": "thinking", "thinking": [{"type": "text", ...}]}, {"type": "text"}];
only in total_tokens, left out of completion_tokens (Gemini's OpenAI-compatible endpoint)."""


def estimate_tokens_chars(chars: int) -> int:
    return (chars + 3) // 4


def estimate_tokens(text: str) -> int:
    return estimate_tokens_chars(len(text))


def generated_answer(seed: int, body_hash: str) -> str:
    digest = hashlib.sha256(f"{seed}:{body_hash}".encode()).hexdigest()
    return '{"ok": true, "mock": "' + digest[:8] + '"}'


@dataclass(frozen=True)
class ScriptLine:
    answers: tuple[str, ...]
    match: str | None = None
    sha256: str | None = None
    model: str | None = None
    finish: str | None = None
    reasoning_tokens: int | None = None

    def matches(self, prompt: Prompt, last_user_sha: str) -> bool:
        if self.model is not None and self.model != prompt.model:
            return False
        if self.sha256 is not None and self.sha256 != last_user_sha:
            return False
        return self.match is None or self.match in prompt.last_user


_LINE_KEYS = {"match", "sha256", "model", "answer", "answers", "finish", "reasoning_tokens"}


class Script:
    """Scripted answers from JSONL; the first matching line wins."""

    def __init__(self, lines: list[ScriptLine]) -> None:
        self.lines = lines
        # Which answer of a multi-answer line a body gets next: (line index, body hash) -> n.
        self._served: dict[tuple[int, str], int] = {}

    @classmethod
    def load(cls, path: Path) -> Script:
        lines = [_parse_line(path, no, obj) for no, obj in read_objects(path, "answers file")]
        return cls(lines)

    def find(self, prompt: Prompt) -> tuple[ScriptLine | None, int]:
        if not self.lines:
            return None, -1
        sha = hashlib.sha256(prompt.last_user.encode()).hexdigest()
        for i, line in enumerate(self.lines):
            if line.matches(prompt, sha):
                return line, i
        return None, -1

    def answer_for(self, line: ScriptLine, index: int, body_hash: str) -> str:
        """The n-th success for the same body gets answers[n % len] (n from 0)."""
        if len(line.answers) == 1:
            return line.answers[0]
        key = (index, body_hash)
        n = self._served.get(key, 0)
        self._served[key] = n + 1
        return line.answers[n % len(line.answers)]


def _parse_line(path: Path, no: int, obj: dict[str, Any]) -> ScriptLine:
    where = f"{path}:{no}"
    unknown = set(obj) - _LINE_KEYS
    if unknown:
        raise DataError(f"{where}: unknown keys {sorted(unknown)}; allowed {sorted(_LINE_KEYS)}")
    if ("answer" in obj) == ("answers" in obj):
        raise DataError(f"{where}: give exactly one of 'answer' (string) or 'answers' (list)")
    answers = (obj["answer"],) if "answer" in obj else tuple(obj["answers"] or ())
    if not answers or not all(isinstance(a, str) for a in answers):
        raise DataError(f"{where}: answer(s) must be non-empty string(s)")
    for key in ("match", "sha256", "model"):
        if key in obj and not isinstance(obj[key], str):
            raise DataError(f"{where}: '{key}' must be a string")
    finish = obj.get("finish")
    if finish is not None and finish not in FINISH_KINDS:
        raise DataError(f"{where}: 'finish' must be one of {FINISH_KINDS}")
    rt = obj.get("reasoning_tokens")
    if rt is not None and (not isinstance(rt, int) or isinstance(rt, bool) or rt < 0):
        raise DataError(f"{where}: 'reasoning_tokens' must be an integer >= 0")
    sha = obj.get("sha256")
    return ScriptLine(
        answers=answers,
        match=obj.get("match"),
        sha256=sha.lower() if sha else None,
        model=obj.get("model"),
        finish=finish,
        reasoning_tokens=rt,
    )


def complete(
    prompt: Prompt,
    text: str,
    *,
    finish: str,
    reasoning_tokens: int,
    cached_tokens: int,
) -> Completion:
    """Apply max_tokens like a provider does: reasoning first, then visible text, cut at budget."""
    p_tokens = prompt.prompt_token_count
    budget = prompt.max_tokens
    reasoning = reasoning_tokens
    if budget is not None and reasoning >= budget:
        reasoning, text, finish = budget, "", "length"
    visible = estimate_tokens(text)
    if budget is not None and reasoning + visible > budget:
        keep = max(0, budget - reasoning)
        text, finish, visible = text[: keep * 4], "length", keep
    return Completion(
        text=text,
        finish=finish,
        prompt_tokens=p_tokens,
        completion_tokens=visible + reasoning,
        reasoning_tokens=reasoning,
        cached_tokens=min(cached_tokens, p_tokens),
    )
