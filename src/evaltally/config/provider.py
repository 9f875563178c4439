"""What the provider a `[[models]]` entry names implies for the rest of the entry: the preset's
default URL, key variable and dated list price, which request parameters its API takes, and
whether it is addressed with an API version. The `baseline` provider has no preset.
"""

from __future__ import annotations

from typing import Any

from evaltally.config.records import Price, ThinkTags
from evaltally.config.section import Section, nonempty
from evaltally.errors import ConfigError


def preset(sec: Section, provider: str) -> Any:
    from evaltally.adapters import resolve_provider
    from evaltally.errors import EvaltallyError

    try:
        return resolve_provider(provider)
    except EvaltallyError as exc:
        raise ConfigError(sec.path, sec.key("provider"), str(exc)) from exc


def provider_defaults(sec: Section, provider: str) -> tuple[str, str | None]:
    if provider == "baseline":
        return "", None
    found = preset(sec, provider)
    return found.base_url or "", found.api_key_env


def default_price(sec: Section, provider: str, model: str) -> Price | None:
    """The preset's dated list price (docs/providers.md) when the config gives none."""
    if provider == "baseline":
        return None
    from evaltally.adapters.prices import lookup

    listed = lookup(preset(sec, provider).prices, model)
    return Price(listed.input_per_mtok, listed.output_per_mtok) if listed else None


def api_version(sec: Section, provider: str) -> str | None:
    version = nonempty(sec, "api_version")
    if version is not None and (
        provider == "baseline" or preset(sec, provider).kind not in ("anthropic", "gemini")
    ):
        raise ConfigError(
            sec.path, sec.key("api_version"), "applies to anthropic and gemini endpoints only"
        )
    return version


def params(sec: Section, provider: str) -> dict[str, Any]:
    """[models.params] checked against the adapter's known parameters, with
    [models.passthrough] (sent unchecked) merged in: one request body, one identity."""
    from evaltally.adapters.params import non_finite, param_problem

    checked: dict[str, Any] = sec.get("params", dict, {})
    passthrough: dict[str, Any] = sec.get("passthrough", dict, {})
    for table, values in (("params", checked), ("passthrough", passthrough)):
        for name, value in values.items():
            if non_finite(value):
                raise ConfigError(
                    sec.path, sec.key(f"{table}.{name}"), "holds inf or nan, which no API accepts"
                )
    if provider != "baseline":
        found = preset(sec, provider)
        for name, value in checked.items():
            problem = param_problem(found.kind, found.reasoning_style, name, value)
            if problem:
                raise ConfigError(sec.path, sec.key(f"params.{name}"), problem)
    for name in sorted(set(checked) & set(passthrough)):
        raise ConfigError(
            sec.path, sec.key(f"passthrough.{name}"), "is also set in [models.params]"
        )
    return {**checked, **passthrough}


def inline_thinking(sec: Section, provider: str) -> ThinkTags | None:
    """`inline_thinking = true | false`, or a table `{open = "<think>", close = "</think>"}`.
    OpenAI-compatible endpoints split a leading `<think>` block by default; the other APIs
    return thinking in fields of their own, so the key applies to those endpoints only."""
    raw = sec.data.get("inline_thinking")
    openai_kind = provider != "baseline" and preset(sec, provider).kind == "openai"
    if raw is None:
        return ThinkTags() if openai_kind else None
    if not openai_kind:
        raise ConfigError(
            sec.path, sec.key("inline_thinking"), "applies to OpenAI-compatible endpoints only"
        )
    if isinstance(raw, bool):
        return ThinkTags() if raw else None
    if not isinstance(raw, dict):
        raise ConfigError(
            sec.path, sec.key("inline_thinking"), "must be true, false or a table {open, close}"
        )
    tags = Section(sec.path, sec.key("inline_thinking"), raw)
    tags.only({"open", "close"})
    default = ThinkTags()
    return ThinkTags(
        open=nonempty(tags, "open") or default.open,
        close=nonempty(tags, "close") or default.close,
    )
