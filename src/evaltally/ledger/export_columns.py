"""The flat columns of an export (CSV and Parquet): the ledger fields in a fixed order with
`usage` split into `usage_*` columns, and the way a row is flattened into them and back. Both
formats (export_formats.py, parquet.py) read them from here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaltally.ledger.export_record import USAGE_KEYS


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    """text | int | float | bool | json"""
    ledger: bool = True
    """A ledger field: present in every row (empty = null). Otherwise a benchmark field,
    absent from some rows (empty = absent)."""


LEDGER_COLUMNS: tuple[Column, ...] = (
    Column("schema_version", "int"),
    Column("call_id", "text"),
    Column("chain_id", "text"),
    Column("step", "int"),
    Column("model", "text"),
    Column("benchmark", "text"),
    Column("protocol", "text"),
    Column("item_id", "text"),
    Column("sample", "int"),
    Column("spec", "json"),
    Column("status", "text"),
    Column("attempts", "int"),
    Column("raw_text", "text"),
    Column("parsed", "json"),
    Column("parse_path", "text"),
    *(Column(f"usage_{k}", "int") for k in USAGE_KEYS),
    Column("latency_ms", "float"),
    Column("request_hash", "text"),
    Column("reason", "text"),
)
LEDGER_FIELDS = frozenset(c.name for c in LEDGER_COLUMNS) | {"usage"}


def flatten(row: Mapping[str, Any]) -> dict[str, Any]:
    """An export row as flat columns: `usage` split into `usage_*` (absent keys stay absent)."""
    flat = {k: v for k, v in row.items() if k != "usage"}
    usage = row.get("usage") or {}
    for key in USAGE_KEYS:
        flat[f"usage_{key}"] = usage.get(key)
    return flat


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    usage = {key: flat.pop(f"usage_{key}", None) for key in USAGE_KEYS}
    flat["usage"] = None if all(v is None for v in usage.values()) else usage
    return flat
