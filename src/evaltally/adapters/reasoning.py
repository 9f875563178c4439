"""The explicit reasoning/thinking switch, as data each adapter merges into its request body.

A model's config says `reasoning = "off" | "on" | "default"`, carried as a `Reasoning` record:

- "default": send nothing; the provider's own default applies (may or may not think).
- "off":     send the provider's documented switch that disables thinking.
- "on":      send the switch that enables it; `reasoning_effort` ("low"/"medium"/"high")
             and `reasoning_budget` (tokens) refine it where the provider supports them.

Each provider documents a different switch, so a preset names a *style* and
`reasoning_params` turns (style, mode, effort, budget) into the fields to merge. Where a provider
has no documented switch (style "none") nothing is sent; the report's reasoning-token audit is
then the only evidence of what happened.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaltally.errors import EvaltallyError

REASONING_MODES = ("off", "on", "default")

REASONING_STYLES = (
    "openai_effort",  # OpenAI reasoning models: reasoning_effort
    "thinking_type",  # DeepSeek, Moonshot/Kimi: thinking: {type: enabled|disabled}
    "dashscope",  # Qwen via DashScope compatible mode: enable_thinking
    "openrouter",  # OpenRouter: reasoning: {enabled|effort|max_tokens}
    "chat_template",  # vLLM, llama.cpp server: chat_template_kwargs.enable_thinking
    "ollama",  # Ollama /v1: reasoning_effort, "none" disables
    "anthropic",  # Messages API: thinking: {type: enabled, budget_tokens}
    "gemini",  # generationConfig.thinkingConfig
    "bedrock",  # Converse: additionalModelRequestFields.thinking (Claude on Bedrock)
    "none",  # no documented switch: nothing is sent
)

DEFAULT_EFFORT = "medium"
"""Effort sent for "on" when the config names none (the middle of every provider's scale)."""

DEFAULT_THINKING_BUDGET = 2048
"""Budget (tokens) for budget-style switches when "on" names none; Anthropic's minimum is 1024."""

GEMINI_DYNAMIC_BUDGET = -1
"""Gemini's documented "let the model decide" thinking budget."""


class InvalidReasoningError(EvaltallyError):
    """A reasoning mode, effort or budget the adapter cannot translate."""


@dataclass(frozen=True, slots=True)
class Reasoning:
    """The reasoning a model asks for (docs/config.md), checked when it is built."""

    mode: str = "default"
    """"off", "on" or "default" (send nothing, the provider's own default applies)."""
    effort: str | None = None
    """With "on": the effort to ask for where the provider takes one."""
    budget: int | None = None
    """With "on": the thinking budget in tokens where the provider takes one."""

    def __post_init__(self) -> None:
        if self.mode not in REASONING_MODES:
            raise InvalidReasoningError(
                f"reasoning = {self.mode!r} is not one of {', '.join(REASONING_MODES)}"
            )
        if self.effort is not None and not isinstance(self.effort, str):
            raise InvalidReasoningError(f"reasoning_effort = {self.effort!r} must be a string")
        budget = self.budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
            raise InvalidReasoningError(f"reasoning_budget = {budget!r} must be an integer")


def reasoning_params(style: str, reasoning: Reasoning) -> dict[str, Any]:
    """The body fields that apply the requested reasoning for a provider of `style`."""
    if style not in REASONING_STYLES:
        raise InvalidReasoningError(f"unknown reasoning style {style!r}")
    if reasoning.mode == "default" or style == "none":
        return {}
    if reasoning.mode == "off":
        return _off(style)
    return _on(style, reasoning.effort, reasoning.budget)


def switch_fields(style: str) -> frozenset[str]:
    """The parameter names a style's switch sets, so a config may set them itself (an explicit
    param wins over the switch). Bedrock's switch goes inside additionalModelRequestFields, where
    its adapter also puts every param that is not an inference setting."""
    if style not in REASONING_STYLES or style == "none":
        return frozenset()
    fields: set[str] = set()
    for body in (_off(style), _on(style, DEFAULT_EFFORT, DEFAULT_THINKING_BUDGET)):
        fields |= set(body.get("additionalModelRequestFields", body))
    return frozenset(fields)


def _off(style: str) -> dict[str, Any]:
    # Anthropic and Bedrock think only when asked, so "off" is the absence of the field.
    table: dict[str, dict[str, Any]] = {
        "openai_effort": {"reasoning_effort": "none"},
        "thinking_type": {"thinking": {"type": "disabled"}},
        "dashscope": {"enable_thinking": False},
        "openrouter": {"reasoning": {"enabled": False}},
        "chat_template": {"chat_template_kwargs": {"enable_thinking": False}},
        "ollama": {"reasoning_effort": "none"},
        "anthropic": {},
        "gemini": {"thinkingConfig": {"thinkingBudget": 0}},
        "bedrock": {},
    }
    return table[style]


def _on(style: str, effort: str | None, budget: int | None) -> dict[str, Any]:
    tokens = budget if budget is not None else DEFAULT_THINKING_BUDGET
    if style in ("openai_effort", "ollama"):
        return {"reasoning_effort": effort or DEFAULT_EFFORT}
    if style == "thinking_type":
        on: dict[str, Any] = {"thinking": {"type": "enabled"}}
        return on | ({"reasoning_effort": effort} if effort else {})
    if style == "dashscope":
        return {"enable_thinking": True} | ({"thinking_budget": budget} if budget else {})
    if style == "openrouter":
        if budget is not None:
            return {"reasoning": {"max_tokens": budget}}
        return {"reasoning": {"effort": effort} if effort else {"enabled": True}}
    if style == "chat_template":
        return {"chat_template_kwargs": {"enable_thinking": True}}
    if style == "anthropic":
        return {"thinking": {"type": "enabled", "budget_tokens": tokens}}
    if style == "gemini":
        if effort is not None and budget is None:
            return {"thinkingConfig": {"thinkingLevel": effort}}
        return {"thinkingConfig": {"thinkingBudget": budget or GEMINI_DYNAMIC_BUDGET}}
    # bedrock: the Anthropic shape, passed through to the model as additional fields
    thinking = {"thinking": {"type": "enabled", "budget_tokens": tokens}}
    return {"additionalModelRequestFields": thinking}


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `override` merged in; nested mappings merge, everything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(old, value)
        else:
            merged[key] = value
    return merged


CHARS_PER_TOKEN = 4
"""Rough English average, used only when a provider shows reasoning text but no token count."""


def approx_tokens(text: str) -> int:
    """A token estimate for reasoning text the provider did not count; at least 1 if any text.

    Used so the reasoning audit never reads 0 when reasoning visibly happened.
    """
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0
