"""Model prices (USD per million tokens) and cost estimates.

Prices change; every entry carries the date it was read and where from. A model missing from a
table has no price (None), and then so has its cost: the report says "unknown", never "$0".
Estimates use the list input/output prices and ignore cache discounts and long-context tiers,
so they are an upper bound for cached prompts and a lower bound past a provider's long-context
threshold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

TOKENS_PER_PRICE_UNIT = 1_000_000
_SNAPSHOT = re.compile(r"[-@]\d{4}[\d-]*(-v\d+(:\d+)?)?$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens: the one price type (a model's config, a list price, a batch
    discount) and, in `usd`, the one cost formula."""

    input_per_mtok: float
    output_per_mtok: float

    def usd(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok
        ) / TOKENS_PER_PRICE_UNIT


@dataclass(frozen=True)
class ModelPrice(Price):
    """List price of one model, as of a date, from a named source."""

    as_of: str
    source: str


PriceTable = Mapping[str, ModelPrice]


def lookup(table: PriceTable, model: str) -> ModelPrice | None:
    """The price of `model`: exact name, else the longest table name it starts with.

    The prefix rule covers dated snapshots only ("claude-haiku-4-5-20251001" ->
    "claude-haiku-4-5", "gpt-4o-2024-08-06" -> "gpt-4o"): the rest must start with a 4-digit
    date or version, so "gpt-4o" never prices "gpt-4o-mini" nor "claude-sonnet-4" "...-4-5".
    """
    if model in table:
        return table[model]
    matches = [n for n in table if model.startswith(n) and _SNAPSHOT.match(model[len(n) :])]
    return table[max(matches, key=len)] if matches else None
