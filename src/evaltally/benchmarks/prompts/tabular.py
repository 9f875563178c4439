"""CSV and Parquet items files: one single-call item per row, through a field mapping.

A row becomes the JSONL item it stands for: `{"id", "messages": [{"role": "user", "content":
<prompt>}], "target"?, "choices"?, "meta"?}`, so a table and its JSONL equivalent plan the same
calls with the same ids. Which columns hold what is the benchmark's `id_field`, `prompt_field`,
`target_field`, `choices_field` and `meta_fields` (docs/prompts.md). In CSV every cell is text:
an empty target or choices cell means none, and a choices cell holds a JSON list of strings.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evaltally.benchmarks.prompts.items import collect
from evaltally.errors import DataError
from evaltally.ledger.scratch import ScratchStore


@dataclass(frozen=True)
class FieldMap:
    id: str = "id"
    prompt: str = "prompt"
    target: str = "target"
    choices: str = "choices"
    meta: tuple[str, ...] = ()


def items_format(path: Path) -> str:
    """.csv or .parquet by the file's extension; any other file is read as JSONL."""
    name = path.name.lower()
    return next((s for s in (".csv", ".parquet") if name.endswith(s)), ".jsonl")


def load_table(path: Path, fields: FieldMap) -> ScratchStore:
    rows = _csv_rows(path) if items_format(path) == ".csv" else _parquet_rows(path)
    return items_from_rows(path, rows, fields)


Rows = Iterator[tuple[Sequence[str], Mapping[str, Any]]]
"""(column names, row) per row of a table."""


def items_from_rows(source: Path | str, rows: Rows, fields: FieldMap) -> ScratchStore:
    """Validated items by id from a table's rows (a file, or a dataset named by `source`)."""
    return collect(source, _items(source, rows, fields), "row ")


def _items(path: Path | str, rows: Rows, fields: FieldMap) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, (columns, row) in enumerate(rows, 1):
        if n == 1:
            wanted = (fields.id, fields.prompt, *fields.meta)
            missing = [c for c in wanted if c not in columns]
            if missing:
                raise DataError(
                    f"{path}: no column {missing[0]!r} (columns: {', '.join(columns)}); map "
                    "the fields with id_field, prompt_field, target_field, choices_field"
                )
        yield n, _item(path, n, row, fields)


def _item(path: Path | str, n: int, row: Mapping[str, Any], fields: FieldMap) -> dict[str, Any]:
    prompt = row[fields.prompt]
    if not isinstance(prompt, str):
        raise DataError(f"{path}:row {n}: column {fields.prompt!r} must be text")
    item: dict[str, Any] = {
        "id": "" if row[fields.id] is None else str(row[fields.id]),
        "messages": [{"role": "user", "content": prompt}],
    }
    target = row.get(fields.target)
    if target not in (None, ""):
        item["target"] = _plain(target)
    choices = row.get(fields.choices)
    if isinstance(choices, str) and choices:
        try:
            choices = orjson.loads(choices)
        except orjson.JSONDecodeError:
            raise DataError(
                f"{path}:row {n}: column {fields.choices!r} must hold a JSON list of strings"
            ) from None
    if choices not in (None, ""):
        item["choices"] = _plain(choices)
    if fields.meta:
        item["meta"] = {k: _plain(row[k]) for k in fields.meta}
    return item


def _plain(value: Any) -> Any:
    # pyarrow gives lists as lists and numpy-free scalars already; tuples become lists.
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _csv_rows(path: Path) -> Iterator[tuple[Sequence[str], Mapping[str, Any]]]:
    try:
        fh = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(f"{path}: cannot read the items file: {exc.strerror or exc}") from exc
    with fh:
        reader = csv.DictReader(fh)
        columns = list(reader.fieldnames or ())
        for row in reader:
            yield columns, row


def _parquet_rows(path: Path) -> Iterator[tuple[Sequence[str], Mapping[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            f"{path}: reading Parquet needs pyarrow: pip install 'evaltally[parquet]'"
        ) from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot read the Parquet items file: {exc}") from exc
    columns = table.column_names
    for row in table.to_pylist():
        yield columns, row
