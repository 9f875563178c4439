"""Provider adapters behind one seam (base.py), loaded lazily.

Importing this package loads no provider code: `http_adapter(name)` imports the adapter module
on first use. A name is an adapter kind ("openai", "anthropic", "gemini", "bedrock") or a preset
("deepseek", "qwen", "vllm", ...; see presets.py); a preset configures its kind's adapter with
the provider's key variable and reasoning switch.

Runner contract, besides the HttpAdapter protocol:

- call `prepare_attempt(adapter, request)` before EVERY attempt, including the first. Adapters
  that sign requests (Bedrock, SigV4) re-sign with the current time there; others return the
  request unchanged. Headers may change; the body never does, so the request hash is stable.
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from evaltally.adapters.base import Endpoint, HttpAdapter, HttpRequest, HttpResponse
from evaltally.adapters.presets import (
    ADAPTER_KINDS,
    Preset,
    UnknownProviderError,
    provider_names,
    resolve_provider,
)
from evaltally.adapters.thinking import INLINE_THINK, ThinkTags

__all__ = [
    "ADAPTER_KINDS",
    "AttemptPreparer",
    "Endpoint",
    "HttpAdapter",
    "HttpRequest",
    "HttpResponse",
    "Preset",
    "UnknownProviderError",
    "adapter_kinds",
    "http_adapter",
    "prepare_attempt",
    "provider_names",
    "resolve_provider",
]

_ADAPTER_CLASSES = {
    "openai": ("evaltally.adapters.openai", "OpenAIAdapter"),
    "anthropic": ("evaltally.adapters.anthropic", "AnthropicAdapter"),
    "gemini": ("evaltally.adapters.gemini", "GeminiAdapter"),
    "bedrock": ("evaltally.adapters.bedrock", "BedrockAdapter"),
}


@runtime_checkable
class AttemptPreparer(Protocol):
    """An adapter that must refresh a built request before each attempt (e.g. re-sign it)."""

    def prepare_attempt(self, request: HttpRequest) -> HttpRequest: ...


def adapter_kinds() -> tuple[str, ...]:
    """The adapter kinds (one module each)."""
    return ADAPTER_KINDS


def http_adapter(
    name: str, *, key_env: str | None = None, inline_thinking: ThinkTags | None = INLINE_THINK
) -> HttpAdapter:
    """The adapter for a provider name, configured by its preset.

    `key_env` (the config's api_key_env) overrides the preset's variable name in error details.
    `inline_thinking` (OpenAI-compatible endpoints only) sets the tags of a leading thinking
    block the adapter splits from the answer (default `<think>`/`</think>`); None turns it off.
    Raises UnknownProviderError (listing every valid name) for an unknown name.
    """
    preset = resolve_provider(name)
    module_name, class_name = _ADAPTER_CLASSES[preset.kind]
    cls = getattr(importlib.import_module(module_name), class_name)
    settings = {"inline_thinking": inline_thinking} if preset.kind == "openai" else {}
    adapter: HttpAdapter = cls(
        key_env=key_env or preset.api_key_env, reasoning_style=preset.reasoning_style, **settings
    )
    return adapter


def prepare_attempt(adapter: HttpAdapter, request: HttpRequest) -> HttpRequest:
    """`request` made ready for one more attempt (re-signed where the adapter signs)."""
    if isinstance(adapter, AttemptPreparer):
        return adapter.prepare_attempt(request)
    return request
