"""Named providers: which adapter, where, which key variable, which reasoning switch, what price.

A config's `provider = "deepseek"` resolves here to the OpenAI adapter pointed at DeepSeek with
DeepSeek's thinking switch; `base_url` / `api_key_env` in the config override the preset's.
This module is data only: it imports no adapter, so resolving a name costs nothing.

Prices are list prices read on the date given, from the source given; they go stale. A model not
listed has no price (cost "unknown"). See docs/providers.md for the table and the caveats.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from evaltally.adapters.prices import ModelPrice, PriceTable
from evaltally.adapters.reasoning import reasoning_params
from evaltally.errors import EvaltallyError

ADAPTER_KINDS = ("openai", "anthropic", "gemini", "bedrock")


class UnknownProviderError(EvaltallyError):
    """A provider name that is neither an adapter kind nor a preset."""


@dataclass(frozen=True, slots=True)
class Preset:
    """How to reach one provider. `api_key_env` is None when no key is needed (local servers)."""

    name: str
    kind: str
    base_url: str
    api_key_env: str | None
    reasoning_style: str
    prices: PriceTable = field(default_factory=dict)
    note: str = ""

    def reasoning_params(
        self, mode: str, effort: str | None = None, budget: int | None = None
    ) -> dict[str, Any]:
        """The body fields this provider gets for reasoning `mode` ("off" / "on" / "default")."""
        extra: dict[str, Any] = {"reasoning": mode}
        if effort is not None:
            extra["reasoning_effort"] = effort
        if budget is not None:
            extra["reasoning_budget"] = budget
        return reasoning_params(self.reasoning_style, extra)


def _prices(as_of: str, source: str, models: Mapping[str, tuple[float, float]]) -> PriceTable:
    table = {name: ModelPrice(inp, out, as_of, source) for name, (inp, out) in models.items()}
    return MappingProxyType(table)


def _merge(*tables: PriceTable) -> PriceTable:
    merged: dict[str, ModelPrice] = {}
    for table in tables:
        merged.update(table)
    return MappingProxyType(merged)


_OPENAI_PRICES = _merge(
    _prices(
        "2026-05-04",
        "developers.openai.com/api/docs/pricing, standard tier (via api-evangelist/openai plans)",
        {
            "gpt-5.5": (5.00, 30.00),
            "gpt-5.4": (2.50, 15.00),
            "gpt-5.4-mini": (0.75, 4.50),
            "gpt-5.4-nano": (0.20, 1.25),
        },
    ),
    _prices(
        "2026-03-21",
        "OpenAI pricing page as tabulated by deploybase.ai/articles/openai-pricing",
        {
            "gpt-4.1": (2.00, 8.00),
            "gpt-4.1-mini": (0.40, 1.60),
            "gpt-4o": (2.50, 10.00),
            "gpt-4o-mini": (0.15, 0.60),
        },
    ),
)
_ANTHROPIC_PRICES = _merge(
    _prices(
        "2026-03-21",
        "Anthropic pricing as tabulated by deploybase.ai/articles/claude-api-pricing",
        {
            "claude-sonnet-4-5": (3.00, 15.00),
            "claude-opus-4-5": (5.00, 25.00),
            "claude-opus-4-6": (5.00, 25.00),
        },
    ),
    _prices(
        "2026-05-22",
        "anthropic.com/pricing, <=200K-token prompts (via api-evangelist/anthropic plans)",
        {
            "claude-opus-4-7": (5.00, 25.00),
            "claude-sonnet-4-6": (3.00, 15.00),
            "claude-haiku-4-5": (1.00, 5.00),
        },
    ),
)
_GEMINI_PRICES = _prices(
    "2026-09-20",
    "ai.google.dev/gemini-api/docs/pricing, paid tier, <=200K prompts "
    "(via api-evangelist/gemini plans); 3.8 Flash is a promotional price to 2026-12-31",
    {
        "gemini-3.1-pro-preview": (2.00, 12.00),
        "gemini-3.5-flash": (1.50, 9.00),
        "gemini-3.8-flash": (0.75, 3.75),
    },
)
_DEEPSEEK_PRICES = _prices(
    "2026-05-04",
    "api-docs.deepseek.com/quick_start/pricing, cache-miss input (via api-evangelist/deepseek)",
    {
        "deepseek-v4-flash": (0.14, 0.28),
        "deepseek-chat": (0.14, 0.28),  # deprecated alias of deepseek-v4-flash per the same page
    },
)
_QWEN_PRICES = _prices(
    "2026-05-08",
    "alibabacloud.com/help/en/model-studio/models, international, smallest context tier "
    "(via api-evangelist/qwen plans)",
    {
        "qwen3-max": (1.20, 6.00),
        "qwen3.5-plus": (0.40, 2.40),
        "qwen3.5-flash": (0.10, 0.40),
    },
)
_TOGETHER_PRICES = MappingProxyType(
    {
        "deepseek-ai/DeepSeek-V3.1": ModelPrice(
            0.60, 1.70, "undated page, read 2026-11-29", "docs.together.ai DeepSeek V3.1 quickstart"
        )
    }
)

_PRESETS: tuple[Preset, ...] = (
    Preset(
        "openai",
        "openai",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "openai_effort",
        _OPENAI_PRICES,
        'off sends reasoning_effort=none (GPT-5.1+); use "default" for '
        "non-reasoning models such as gpt-4o, which reject reasoning_effort",
    ),
    Preset(
        "anthropic",
        "anthropic",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "anthropic",
        _ANTHROPIC_PRICES,
        "thinking only when on; needs max_tokens > budget",
    ),
    Preset(
        "gemini",
        "gemini",
        "https://generativelanguage.googleapis.com",
        "GEMINI_API_KEY",
        "gemini",
        _GEMINI_PRICES,
        "off = thinkingBudget 0, which not every model accepts "
        "(2.5 Pro and 3.x cannot fully disable thinking)",
    ),
    Preset(
        "bedrock",
        "bedrock",
        "https://bedrock-runtime.{region}.amazonaws.com",
        None,
        "bedrock",
        {},
        "SigV4 from AWS_* variables; prices vary by region: none listed",
    ),
    Preset(
        "deepseek",
        "openai",
        "https://api.deepseek.com",
        "DEEPSEEK_API_KEY",
        "thinking_type",
        _DEEPSEEK_PRICES,
        "V4 models think by default: off is sent explicitly",
    ),
    Preset(
        "moonshot",
        "openai",
        "https://api.moonshot.ai/v1",
        "MOONSHOT_API_KEY",
        "thinking_type",
        {},
        "thinking.type=disabled works on kimi-k2.5/k2.6; k3 and k2.7-code always think",
    ),
    Preset(
        "qwen",
        "openai",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
        "dashscope",
        _QWEN_PRICES,
        "DashScope compatible mode",
    ),
    Preset(
        "openrouter",
        "openai",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        "openrouter",
        {},
        "prices are the routed provider's: none listed",
    ),
    Preset(
        "together",
        "openai",
        "https://api.together.xyz/v1",
        "TOGETHER_API_KEY",
        "none",
        _TOGETHER_PRICES,
        "no uniform documented thinking switch: nothing is sent",
    ),
    Preset(
        "vllm",
        "openai",
        "http://127.0.0.1:8000/v1",
        None,
        "chat_template",
        {},
        "self-hosted; the switch needs a chat template that reads enable_thinking",
    ),
    Preset(
        "ollama",
        "openai",
        "http://127.0.0.1:11434/v1",
        None,
        "ollama",
        {},
        "self-hosted; /v1 honours reasoning_effort (think=false is /api/chat only)",
    ),
    Preset(
        "llamacpp",
        "openai",
        "http://127.0.0.1:8080/v1",
        None,
        "chat_template",
        {},
        "self-hosted llama-server (run with --jinja for chat_template_kwargs)",
    ),
)

PRESETS: Mapping[str, Preset] = MappingProxyType({p.name: p for p in _PRESETS})
ALIASES: Mapping[str, str] = MappingProxyType(
    {"kimi": "moonshot", "dashscope": "qwen", "llama.cpp": "llamacpp", "llama-cpp": "llamacpp"}
)


def provider_names() -> tuple[str, ...]:
    """Every name `resolve_provider` accepts, sorted."""
    return tuple(sorted([*PRESETS, *ALIASES]))


def resolve_provider(name: str) -> Preset:
    """The preset for a provider name (case-insensitive), or UnknownProviderError listing all."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key in PRESETS:
        return PRESETS[key]
    raise UnknownProviderError(
        f"unknown provider {name!r}; valid providers: {', '.join(provider_names())}"
    )
