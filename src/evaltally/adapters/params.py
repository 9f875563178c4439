"""Which generation parameters each adapter knows, and the type each one must have.

`[models.params]` is checked against this at config time: a typo (`max_token`) or a wrong type
(`max_tokens = "lots"`) is a config error naming the key, instead of a field the provider
rejects, or silently ignores, on every call (a misspelt `max_tokens` also left the lane's token
reservation at 0). A parameter a provider accepts but evaltally does not know goes in
`[models.passthrough]`, which is sent as it is, unchecked.

Each adapter module lists the names it translates or documents (`KNOWN_PARAMS`); the fields of
the preset's reasoning switch are known too, so a config can override the switch (params win).
Types are by name: `max_tokens` means the same thing for every provider.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from typing import Any

from evaltally.adapters.reasoning import switch_fields

Check = Callable[[Any], str | None]
"""None when the value is acceptable, else what it must be."""


def _positive_int(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return None if ok else "a positive integer"


def _integer(value: Any) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"


def _number(value: Any) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return None if ok else "a finite number"


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _table(value: Any) -> str | None:
    return None if isinstance(value, dict) else "a table"


def _strings(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    return None if ok else "a list of strings"


def _stop(value: Any) -> str | None:
    return None if isinstance(value, str) or _strings(value) is None else "a string or a list"


def _tables(value: Any) -> str | None:
    ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    return None if ok else "a list of tables"


PARAM_TYPES: Mapping[str, Check] = {
    "temperature": _number,
    "top_p": _number,
    "top_k": _positive_int,
    "max_tokens": _positive_int,
    "max_completion_tokens": _positive_int,
    "max_output_tokens": _positive_int,
    "stop": _stop,
    "stop_sequences": _strings,
    "seed": _integer,
    "n": _positive_int,
    "presence_penalty": _number,
    "frequency_penalty": _number,
    "logit_bias": _table,
    "logprobs": _boolean,
    "top_logprobs": _integer,
    "response_format": _table,
    "response_mime_type": _string,
    "reasoning_effort": _string,
    "verbosity": _string,
    "service_tier": _string,
    "user": _string,
    "store": _boolean,
    "metadata": _table,
    "safety_settings": _tables,
    "safetySettings": _tables,
    # fields of the reasoning switches (reasoning.py)
    "thinking": _table,
    "enable_thinking": _boolean,
    "thinking_budget": _positive_int,
    "reasoning": _table,
    "chat_template_kwargs": _table,
    "thinkingConfig": _table,
}

_ADAPTER_MODULES = {
    "openai": "evaltally.adapters.openai",
    "anthropic": "evaltally.adapters.anthropic",
    "gemini": "evaltally.adapters.gemini",
    "bedrock": "evaltally.adapters.bedrock",
}


def known_params(kind: str, reasoning_style: str) -> frozenset[str]:
    """The parameter names an adapter of `kind` with a preset of `reasoning_style` knows."""
    module = importlib.import_module(_ADAPTER_MODULES[kind])
    names: frozenset[str] = module.KNOWN_PARAMS
    return names | switch_fields(reasoning_style)


def param_problem(kind: str, reasoning_style: str, name: str, value: Any) -> str | None:
    """Why `name = value` cannot be a checked parameter of this adapter, or None."""
    known = known_params(kind, reasoning_style)
    if name not in known:
        return (
            f"unknown parameter for the {kind} adapter (known: {', '.join(sorted(known))}); "
            "to send a parameter evaltally does not know, put it under [models.passthrough]"
        )
    want = PARAM_TYPES[name](value)
    return f"must be {want}, got {_type_name(value)}" if want else None


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names |= {dict: "a table", list: "a list"}
    return names.get(type(value), type(value).__name__)


def non_finite(value: Any) -> bool:
    """Whether `value` (a TOML value, nested) holds inf or nan, which no API accepts as JSON."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(non_finite(v) for v in value)
    return False
