"""Presets, reasoning switches, prices, and the lazy registry."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest

from evaltally.adapters import (
    UnknownProviderError,
    adapter_kinds,
    http_adapter,
    provider_names,
    resolve_provider,
)
from evaltally.adapters.base import Endpoint, HttpAdapter
from evaltally.adapters.prices import ModelPrice, lookup
from evaltally.adapters.reasoning import InvalidReasoningError, Reasoning
from evaltally.errors import EvaltallyError

OFF = {
    "openai": {"reasoning_effort": "none"},
    "deepseek": {"thinking": {"type": "disabled"}},
    "moonshot": {"thinking": {"type": "disabled"}},
    "qwen": {"enable_thinking": False},
    "openrouter": {"reasoning": {"enabled": False}},
    "together": {},
    "vllm": {"chat_template_kwargs": {"enable_thinking": False}},
    "ollama": {"reasoning_effort": "none"},
    "llamacpp": {"chat_template_kwargs": {"enable_thinking": False}},
    "anthropic": {},
    "gemini": {"thinkingConfig": {"thinkingBudget": 0}},
    "bedrock": {},
}


@pytest.mark.parametrize("name", sorted(OFF))
def test_reasoning_off_per_preset(name: str) -> None:
    assert resolve_provider(name).reasoning_params("off") == OFF[name]


@pytest.mark.parametrize("name", sorted(OFF))
def test_reasoning_default_sends_nothing(name: str) -> None:
    assert resolve_provider(name).reasoning_params("default") == {}


def test_reasoning_on_examples() -> None:
    assert resolve_provider("deepseek").reasoning_params("on", effort="high") == {
        "thinking": {"type": "enabled"},
        "reasoning_effort": "high",
    }
    assert resolve_provider("qwen").reasoning_params("on", budget=800) == {
        "enable_thinking": True,
        "thinking_budget": 800,
    }
    assert resolve_provider("openrouter").reasoning_params("on", effort="low") == {
        "reasoning": {"effort": "low"}
    }
    assert resolve_provider("ollama").reasoning_params("on") == {"reasoning_effort": "medium"}
    assert resolve_provider("vllm").reasoning_params("on") == {
        "chat_template_kwargs": {"enable_thinking": True}
    }


@pytest.mark.parametrize(
    ("name", "adapter_class", "model_base"),
    [
        ("deepseek", "OpenAIAdapter", "https://api.deepseek.com/chat/completions"),
        ("qwen", "OpenAIAdapter", "compatible-mode/v1/chat/completions"),
        ("vllm", "OpenAIAdapter", "http://127.0.0.1:8000/v1/chat/completions"),
        ("anthropic", "AnthropicAdapter", "https://api.anthropic.com/v1/messages"),
    ],
)
def test_preset_drives_the_adapter(name: str, adapter_class: str, model_base: str) -> None:
    preset = resolve_provider(name)
    adapter = http_adapter(name)
    assert type(adapter).__name__ == adapter_class
    assert isinstance(adapter, HttpAdapter)
    ep = Endpoint(model="m", base_url=preset.base_url, reasoning=Reasoning("off"))
    request = adapter.build_request(ep, [{"role": "user", "content": "hi"}])
    assert request.url.endswith(model_base)
    body: dict[str, Any] = orjson.loads(request.body)
    for key, value in preset.reasoning_params("off").items():
        assert body[key] == value


def test_key_env_override_reaches_error_details() -> None:
    adapter = http_adapter("openai", key_env="MY_PROXY_KEY")
    assert adapter.key_env == "MY_PROXY_KEY"  # type: ignore[attr-defined]


def test_local_presets_need_no_key() -> None:
    for name in ("vllm", "ollama", "llamacpp"):
        assert resolve_provider(name).api_key_env is None


def test_unknown_provider_lists_valid_names() -> None:
    with pytest.raises(UnknownProviderError) as info:
        resolve_provider("deepsek")
    assert isinstance(info.value, EvaltallyError)
    message = str(info.value)
    assert "'deepsek'" in message
    for name in ("openai", "anthropic", "gemini", "bedrock", "deepseek", "vllm"):
        assert name in message


def test_aliases_and_case() -> None:
    assert resolve_provider("Kimi").name == "moonshot"
    assert resolve_provider("DashScope").name == "qwen"
    assert set(adapter_kinds()) <= set(provider_names())


def test_invalid_reasoning_mode_is_a_clear_error() -> None:
    with pytest.raises(InvalidReasoningError, match="'maybe'"):
        Reasoning("maybe")
    with pytest.raises(InvalidReasoningError, match="reasoning_budget"):
        Reasoning("on", budget="lots")  # type: ignore[arg-type]


def test_every_price_is_dated_and_sourced() -> None:
    for name in provider_names():
        for model, price in resolve_provider(name).prices.items():
            assert price.as_of and price.source, (name, model)
            assert price.input_per_mtok > 0 and price.output_per_mtok > 0


def test_price_lookup_exact_snapshot_and_unknown() -> None:
    prices = resolve_provider("anthropic").prices
    assert lookup(prices, "claude-haiku-4-5") == lookup(prices, "claude-haiku-4-5-20251001")
    assert lookup(prices, "claude-haiku-4-5") is not None
    openai = resolve_provider("openai").prices
    assert lookup(openai, "gpt-4o-2024-08-06") == openai["gpt-4o"]
    assert lookup({"gpt-4o": openai["gpt-4o"]}, "gpt-4o-mini") is None
    assert lookup(prices, "claude-sonnet-4") is None
    assert lookup({}, "anything") is None


def test_estimate_cost() -> None:
    price = ModelPrice(2.0, 8.0, "2026-01-01", "test")
    assert price.usd(1_000_000, 500_000) == pytest.approx(6.0)


def test_importing_the_package_loads_no_provider_code() -> None:
    code = (
        "import sys, evaltally, evaltally.adapters as a;"
        "print(sorted(m for m in sys.modules if m.startswith('evaltally.adapters.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    for provider in ("openai", "anthropic", "gemini", "bedrock", "sigv4"):
        assert f"evaltally.adapters.{provider}'" not in out
