"""The one rule for a spend limit, shared by the config's `run.budget_usd` and `--budget`."""

from __future__ import annotations

import math
from pathlib import Path

from evaltally.errors import ConfigError


def check_budget(value: object, source: Path | str, key: str) -> float | None:
    """The one rule for a spend limit, whether from `run.budget_usd` or `--budget`: a finite
    number of USD >= 0, where 0 means nothing may be spent. None: no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(source, key, f"must be a number (USD), got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ConfigError(
            source,
            key,
            f"must be a finite number >= 0 (USD; 0 means nothing may be spent), got {value}",
        )
    return float(value)
