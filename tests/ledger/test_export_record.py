"""The export row's ledger fields have one typed definition (ledger/export_record.py): the
table in docs/export.md, every exported row and the CSV/Parquet columns follow it."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from ledger_testkit import answer, calls, new_run

from evaltally.ledger import ExportRecord, export_rows
from evaltally.ledger.export_columns import LEDGER_COLUMNS
from evaltally.ledger.export_record import FIELDS, USAGE_KEYS
from evaltally.records import Status
from testkit import REPO

DOC_TYPES = {
    "int": "int",
    "str": "str",
    "str | None": "str \\| null",
    "float | None": "float \\| null",
    "dict[str, Any]": "object",
    "dict[str, int] | None": "object \\| null",
    "Any": "any",
}
"""How docs/export.md writes each annotation of the record."""


def documented_fields() -> list[tuple[str, str]]:
    """(field, type) of docs/export.md's first table: the ledger's fields."""
    text = (REPO / "docs" / "export.md").read_text()
    table = text.split("| field | type | meaning |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `(\w+)` \| ([^|]+(?:\\\|[^|]+)?) \|", table, re.M)


def test_the_record_is_the_documented_table_field_for_field() -> None:
    documented = [(name, kind.strip()) for name, kind in documented_fields()]
    record = [(f.name, DOC_TYPES[str(f.type)]) for f in fields(ExportRecord)]
    assert record == documented


async def test_every_row_holds_the_record_fields_in_order(tmp_path: Path) -> None:
    plan = calls(3)
    async with await new_run(tmp_path, plan) as ledger:
        answer(ledger, plan[0].call_id)
        answer(ledger, plan[1].call_id, Status.FAILED, http=503)
    rows = list(export_rows(tmp_path / "run"))
    assert [list(row) for row in rows] == [list(FIELDS)] * 3
    typed = [ExportRecord.of_row(row) for row in rows]
    assert [r.as_row() for r in typed] == rows
    assert [r.status for r in typed] == ["ok", "failed", "unfinished"]


def test_the_flat_columns_are_the_record_with_usage_split() -> None:
    flat = [c.name for c in LEDGER_COLUMNS]
    expected = [
        col
        for name in FIELDS
        for col in ([f"usage_{k}" for k in USAGE_KEYS] if name == "usage" else [name])
    ]
    assert flat == expected
