"""The `[[models]]` entries of a sweep config -> ModelConfig, with their `limits` and `price`
tables (docs/config.md). What the provider implies is read in `provider`, the batch mode in
`batch`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaltally.adapters.reasoning import REASONING_MODES
from evaltally.config.batch import BATCH_MODEL_KEYS, batch_price, batch_settings
from evaltally.config.checks import check_base_url, check_key_env
from evaltally.config.provider import (
    api_version,
    default_price,
    inline_thinking,
    params,
    provider_defaults,
)
from evaltally.config.records import Limits, ModelConfig, Price, Reasoning
from evaltally.config.section import NUMBER, Section, nonempty, printable
from evaltally.errors import ConfigError

_MODEL_KEYS = {
    "key",
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "params",
    "passthrough",
    "limits",
    "reasoning",
    "price",
    "region",
    "reasoning_effort",
    "reasoning_budget",
    "api_version",
    "inline_thinking",
    *BATCH_MODEL_KEYS,
}


def read_models(path: Path, items: list[Any]) -> tuple[ModelConfig, ...]:
    if not items:
        raise ConfigError(path, "models", "needs at least one [[models]] entry")
    seen: set[str] = set()
    out = []
    for i, item in enumerate(items):
        sec = Section(path, f"models[{i}]", item)
        sec.only(_MODEL_KEYS)
        model = _model(sec)
        if model.key in seen:
            raise ConfigError(path, sec.key("key"), f"duplicate model key {model.key!r}")
        seen.add(model.key)
        out.append(model)
    return tuple(out)


def _model(sec: Section) -> ModelConfig:
    provider = sec.require("provider", str)
    key = printable(sec, "key", sec.require("key", str))
    model = sec.get("model", str, key if provider == "baseline" else None)
    if model is None:
        raise ConfigError(sec.path, sec.key("model"), "is required")
    base_url, key_env = provider_defaults(sec, provider)
    reasoning = sec.get("reasoning", str, "default")
    if reasoning not in REASONING_MODES:
        raise ConfigError(
            sec.path, sec.key("reasoning"), f"must be one of {', '.join(REASONING_MODES)}"
        )
    effort = nonempty(sec, "reasoning_effort")
    budget = sec.positive("reasoning_budget", int, None)
    price = _price(sec) or default_price(sec, provider, model)
    mode, batch = batch_settings(sec, provider, price)
    return ModelConfig(
        key=key,
        provider=provider,
        model=model,
        base_url=check_base_url(
            sec.path, sec.key("base_url"), provider, sec.get("base_url", str, base_url)
        ),
        api_key_env=check_key_env(
            sec.path, sec.key("api_key_env"), sec.get("api_key_env", str, key_env)
        ),
        params=params(sec, provider),
        limits=_limits(Section(sec.path, sec.key("limits"), sec.get("limits", dict, {}))),
        reasoning=Reasoning(
            reasoning,
            _reasoning_only(sec, reasoning, "reasoning_effort", effort),
            _reasoning_only(sec, reasoning, "reasoning_budget", budget),
        ),
        price=batch_price(price, batch.discount) if batch else price,
        api_version=api_version(sec, provider),
        region=sec.get("region", str),
        mode=mode,
        batch=batch,
        inline_thinking=inline_thinking(sec, provider),
    )


def _reasoning_only(sec: Section, reasoning: str, name: str, value: Any) -> Any:
    """Effort and budget refine reasoning = "on"; elsewhere they would silently go unsent."""
    if value is not None and reasoning != "on":
        raise ConfigError(sec.path, sec.key(name), 'applies only with reasoning = "on"')
    return value


def _limits(sec: Section) -> Limits:
    sec.only(set(Limits.__dataclass_fields__))
    d = Limits()
    return Limits(
        concurrency=sec.positive("concurrency", int, d.concurrency),
        rpm=sec.positive("rpm", NUMBER, d.rpm),
        tpm=sec.positive("tpm", NUMBER, d.tpm),
        timeout_s=sec.positive("timeout_s", NUMBER, d.timeout_s),
        max_response_bytes=sec.positive("max_response_bytes", int, d.max_response_bytes),
        max_attempts=sec.positive("max_attempts", int, d.max_attempts),
        breaker_threshold=sec.positive("breaker_threshold", int, d.breaker_threshold),
        breaker_cooldown_s=sec.positive("breaker_cooldown_s", NUMBER, d.breaker_cooldown_s),
        backoff_initial_s=sec.positive("backoff_initial_s", NUMBER, d.backoff_initial_s),
        backoff_max_s=sec.positive("backoff_max_s", NUMBER, d.backoff_max_s),
    )


def _price(sec: Section) -> Price | None:
    raw = sec.get("price", dict)
    if raw is None:
        return None
    p = Section(sec.path, sec.key("price"), raw)
    p.only({"input_per_mtok", "output_per_mtok"})
    prices = []
    for name in ("input_per_mtok", "output_per_mtok"):
        p.require(name, NUMBER)
        value = float(p.number(name, NUMBER, None))
        if value < 0:
            raise ConfigError(sec.path, p.key(name), f"must be >= 0, got {value}")
        prices.append(value)
    return Price(input_per_mtok=prices[0], output_per_mtok=prices[1])
