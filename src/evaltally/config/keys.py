"""The API keys a sweep needs, read from the environment variables its models name, before
anything is sent. Every value is remembered by `redact` the moment it is read, so it never
reaches a log, the ledger or an error message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from evaltally import redact
from evaltally.config.records import SweepConfig
from evaltally.errors import CredentialError


def read_api_keys(config: SweepConfig, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Model key -> API key, read from the named variables. Every missing variable is reported
    at once, before anything is sent. The message names variables, never values."""
    env = os.environ if env is None else env
    keys: dict[str, str] = {}
    missing: list[str] = []
    garbled: list[str] = []
    for m in config.models:
        if not m.api_key_env:
            continue
        value = env.get(m.api_key_env, "")
        redact.remember(value)
        redact.remember(value.strip())
        if not value:
            missing.append(f"  model {m.key!r} needs ${m.api_key_env}")
        elif not redact.header_safe(value):
            garbled.append(f"  model {m.key!r}: ${m.api_key_env}")
        else:
            keys[m.key] = value
    if missing:
        raise CredentialError(
            f"{config.path}: API key variables are not set:\n"
            + "\n".join(missing)
            + "\nexport them (or set api_key_env to the variable that holds each key)."
        )
    if garbled:
        raise CredentialError(
            f"{config.path}: API key variables hold whitespace or control characters "
            "(a trailing \\r from a file saved on Windows? quotes?); values not shown:\n"
            + "\n".join(garbled)
        )
    return keys
