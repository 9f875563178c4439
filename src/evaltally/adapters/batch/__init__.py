"""Batch adapters (one module per batch API shape, loaded on first use) and which providers
have a batch service: its shape, its documented limits per batch and its documented price.

Providers not listed (deepseek, openrouter, bedrock, vllm, ollama, llamacpp) have no batch mode
here; docs/providers.md says why for each.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from evaltally.adapters.base import HttpAdapter
from evaltally.adapters.batch.base import BatchAdapter, BatchLimits
from evaltally.adapters.presets import resolve_provider

MB = 1_000_000
NO_REQUEST_CAP = 10**9
"""Gemini documents no request count per batch; its 20 MB inline cap is what binds."""


@dataclass(frozen=True, slots=True)
class BatchSupport:
    kind: str
    """The batch API shape: openai (/files + /batches), anthropic or gemini."""
    limits: BatchLimits
    discount: float | None
    """The batch price as a fraction of the list price; None when no discount is documented
    (estimates then use the list price: an upper bound)."""
    source: str


BATCH_SUPPORT: Mapping[str, BatchSupport] = MappingProxyType(
    {
        "openai": BatchSupport(
            "openai",
            BatchLimits(50_000, 200 * MB),
            0.5,
            "OpenAI Batch API: 50,000 requests and 200 MB per input file, 24h window, "
            "50% of the synchronous price",
        ),
        "anthropic": BatchSupport(
            "anthropic",
            BatchLimits(100_000, 256 * MB),
            0.5,
            "Anthropic Message Batches: 100,000 requests or 256 MB per batch, results kept "
            "29 days, 50% of the standard price",
        ),
        "gemini": BatchSupport(
            "gemini",
            BatchLimits(NO_REQUEST_CAP, 20 * MB),
            0.5,
            "Gemini batch mode: inline requests up to 20 MB per batch, 50% of the standard price",
        ),
        "qwen": BatchSupport(
            "openai",
            BatchLimits(50_000, 100 * MB),
            0.5,
            "Model Studio OpenAI-compatible Batch: 50,000 requests and 100 MB per file, 50% of "
            "the real-time price; only some models (see the provider's list)",
        ),
        "together": BatchSupport(
            "openai",
            BatchLimits(50_000, 100 * MB),
            None,
            "Together batch: 50,000 requests and 100 MB per file; the discount is 'up to 50%' "
            "on selected models, so estimates use the list price",
        ),
        "moonshot": BatchSupport(
            "openai",
            BatchLimits(50_000, 100 * MB),
            None,
            "Kimi platform batch API (/v1/files + /v1/batches); no per-batch limits or discount "
            "in what we read: OpenAI's request cap, 100 MB and the list price are used",
        ),
    }
)

_MODULES = {
    "openai": ("evaltally.adapters.batch.openai", "OpenAIBatch"),
    "anthropic": ("evaltally.adapters.batch.anthropic", "AnthropicBatch"),
    "gemini": ("evaltally.adapters.batch.gemini", "GeminiBatch"),
}


def batch_support(provider: str) -> BatchSupport | None:
    """The batch service of a provider name (preset or alias), or None when it has none."""
    return BATCH_SUPPORT.get(resolve_provider(provider).name)


def batch_adapter(kind: str, sync: HttpAdapter) -> BatchAdapter:
    """The batch adapter of one API shape, reading lines with the synchronous `sync`."""
    module_name, class_name = _MODULES[kind]
    cls = getattr(importlib.import_module(module_name), class_name)
    adapter: BatchAdapter = cls(sync)
    return adapter
