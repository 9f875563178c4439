"""The ledger's fields of an export row as a typed record: docs/export.md's first table, field
for field and in order (tests/ledger/test_export_record.py pins the two together).

Fields a benchmark adds (the second table, each kind's `export_fields`) are not here: they join
the row's dict through `export_rows(enrich=...)`, which refuses a name from this record. The
export builds each row's dict straight from `FIELDS` (one per planned call, millions per run:
building a frozen record per row measured about 40 % more per exported row); code that wants the
typed view of a row reads it with `ExportRecord.of_row`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

EXPORT_SCHEMA_VERSION = 1

USAGE_KEYS = ("input_tokens", "output_tokens", "reasoning_tokens", "cached_tokens")
"""The keys of `usage`, in order."""

ExportRow = dict[str, Any]
"""One export row (fields in docs/export.md); `enrich` receives it and returns extra fields."""


@dataclass(frozen=True, slots=True)
class ExportRecord:
    schema_version: int
    call_id: str
    chain_id: str
    step: int
    model: str
    benchmark: str
    protocol: str
    item_id: str
    sample: int
    spec: dict[str, Any]
    status: str
    """The call's current outcome (ledger/current.py), or `unfinished`."""
    attempts: int
    raw_text: str | None
    parsed: Any
    parse_path: str | None
    usage: dict[str, int] | None
    latency_ms: float | None
    request_hash: str | None
    reason: str | None

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> ExportRecord:
        """The ledger's fields of an export row (benchmark fields are left out)."""
        return cls(**{name: row[name] for name in FIELDS})

    def as_row(self) -> ExportRow:
        return {name: getattr(self, name) for name in FIELDS}


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ExportRecord))
"""The ledger's fields of an export row, in the order of docs/export.md and of every row."""
