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
from evaltally.adapters.reasoning import Reasoning, reasoning_params
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
        return reasoning_params(self.reasoning_style, Reasoning(mode, effort, budget))


# Where the prices were read: key -> (as of, source).
_PRICE_SOURCES = {
    "openai": (
        "2026-05-04",
        "developers.openai.com/api/docs/pricing, standard tier (via api-evangelist/openai plans)",
    ),
    "openai-deploybase": (
        "2026-03-21",
        "OpenAI pricing page as tabulated by deploybase.ai/articles/openai-pricing",
    ),
    "anthropic-deploybase": (
        "2026-03-21",
        "Anthropic pricing as tabulated by deploybase.ai/articles/claude-api-pricing",
    ),
    "anthropic": (
        "2026-05-22",
        "anthropic.com/pricing, <=200K-token prompts (via api-evangelist/anthropic plans)",
    ),
    "gemini": (
        "2026-09-20",
        "ai.google.dev/gemini-api/docs/pricing, paid tier, <=200K prompts "
        "(via api-evangelist/gemini plans); 3.8 Flash is a promotional price to 2026-12-31",
    ),
    "deepseek": (
        "2026-05-04",
        "api-docs.deepseek.com/quick_start/pricing, cache-miss input (via api-evangelist/deepseek)",
    ),
    "qwen": (
        "2026-05-08",
        "alibabacloud.com/help/en/model-studio/models, international, smallest context tier "
        "(via api-evangelist/qwen plans)",
    ),
    "together": ("undated page, read 2026-11-29", "docs.together.ai DeepSeek V3.1 quickstart"),
}
# (preset, model, input $/Mtok, output $/Mtok, price source). Presets not listed have no price.
_PRICE_ROWS: tuple[tuple[str, str, float, float, str], ...] = (
    ("openai", "gpt-5.5", 5.00, 30.00, "openai"),
    ("openai", "gpt-5.4", 2.50, 15.00, "openai"),
    ("openai", "gpt-5.4-mini", 0.75, 4.50, "openai"),
    ("openai", "gpt-5.4-nano", 0.20, 1.25, "openai"),
    ("openai", "gpt-4.1", 2.00, 8.00, "openai-deploybase"),
    ("openai", "gpt-4.1-mini", 0.40, 1.60, "openai-deploybase"),
    ("openai", "gpt-4o", 2.50, 10.00, "openai-deploybase"),
    ("openai", "gpt-4o-mini", 0.15, 0.60, "openai-deploybase"),
    ("anthropic", "claude-sonnet-4-5", 3.00, 15.00, "anthropic-deploybase"),
    ("anthropic", "claude-opus-4-5", 5.00, 25.00, "anthropic-deploybase"),
    ("anthropic", "claude-opus-4-6", 5.00, 25.00, "anthropic-deploybase"),
    ("anthropic", "claude-opus-4-7", 5.00, 25.00, "anthropic"),
    ("anthropic", "claude-sonnet-4-6", 3.00, 15.00, "anthropic"),
    ("anthropic", "claude-haiku-4-5", 1.00, 5.00, "anthropic"),
    ("gemini", "gemini-3.1-pro-preview", 2.00, 12.00, "gemini"),
    ("gemini", "gemini-3.5-flash", 1.50, 9.00, "gemini"),
    ("gemini", "gemini-3.8-flash", 0.75, 3.75, "gemini"),
    ("deepseek", "deepseek-v4-flash", 0.14, 0.28, "deepseek"),
    # deepseek-chat: deprecated alias of deepseek-v4-flash per the same page
    ("deepseek", "deepseek-chat", 0.14, 0.28, "deepseek"),
    ("qwen", "qwen3-max", 1.20, 6.00, "qwen"),
    ("qwen", "qwen3.5-plus", 0.40, 2.40, "qwen"),
    ("qwen", "qwen3.5-flash", 0.10, 0.40, "qwen"),
    ("together", "deepseek-ai/DeepSeek-V3.1", 0.60, 1.70, "together"),
)


def _price_tables() -> dict[str, PriceTable]:
    """`_PRICE_ROWS` as one read-only table per preset."""
    tables: dict[str, dict[str, ModelPrice]] = {}
    for preset, model, inp, out, source in _PRICE_ROWS:
        tables.setdefault(preset, {})[model] = ModelPrice(inp, out, *_PRICE_SOURCES[source])
    return {name: MappingProxyType(table) for name, table in tables.items()}


_PRICES = _price_tables()

# name: (adapter kind, base URL, key variable or None for no key, reasoning style: reasoning.py)
_ENDPOINTS: dict[str, tuple[str, str, str | None, str]] = {
    "openai": ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "openai_effort"),
    "anthropic": ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "anthropic"),
    "gemini": ("gemini", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY", "gemini"),
    "bedrock": ("bedrock", "https://bedrock-runtime.{region}.amazonaws.com", None, "bedrock"),
    "deepseek": ("openai", "https://api.deepseek.com", "DEEPSEEK_API_KEY", "thinking_type"),
    "moonshot": ("openai", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", "thinking_type"),
    "qwen": (
        "openai",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
        "dashscope",
    ),
    "openrouter": ("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openrouter"),
    "together": ("openai", "https://api.together.xyz/v1", "TOGETHER_API_KEY", "none"),
    "vllm": ("openai", "http://127.0.0.1:8000/v1", None, "chat_template"),
    "ollama": ("openai", "http://127.0.0.1:11434/v1", None, "ollama"),
    "llamacpp": ("openai", "http://127.0.0.1:8080/v1", None, "chat_template"),
}
_NOTES = {
    "openai": 'off sends reasoning_effort=none (GPT-5.1+); use "default" for '
    "non-reasoning models such as gpt-4o, which reject reasoning_effort",
    "anthropic": "thinking only when on; needs max_tokens > budget",
    "gemini": "off = thinkingBudget 0, which not every model accepts "
    "(2.5 Pro and 3.x cannot fully disable thinking)",
    "bedrock": "SigV4 from AWS_* variables; prices vary by region: none listed",
    "deepseek": "V4 models think by default: off is sent explicitly",
    "moonshot": "thinking.type=disabled works on kimi-k2.5/k2.6; k3 and k2.7-code always think",
    "qwen": "DashScope compatible mode",
    "openrouter": "prices are the routed provider's: none listed",
    "together": "no uniform documented thinking switch: nothing is sent",
    "vllm": "self-hosted; the switch needs a chat template that reads enable_thinking",
    "ollama": "self-hosted; /v1 honours reasoning_effort (think=false is /api/chat only)",
    "llamacpp": "self-hosted llama-server (run with --jinja for chat_template_kwargs)",
}

PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        name: Preset(name, *endpoint, _PRICES.get(name, {}), _NOTES[name])
        for name, endpoint in _ENDPOINTS.items()
    }
)
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
