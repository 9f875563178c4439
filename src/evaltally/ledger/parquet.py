"""Parquet export files through pyarrow (the optional extra `evaltally[parquet]`).

Imported only when a `.parquet` file is written or read, after export_formats checked that
pyarrow is installed. Each column's encoding is stored in its field metadata, and the export
schema version in the file's metadata, so a reader needs nothing but the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from evaltally.errors import DataError
from evaltally.ledger.export_columns import Column, unflatten

_TYPES = {"text": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
_META_KIND = b"evaltally.kind"
_META_LEDGER = b"evaltally.ledger"
_META_VERSION = b"evaltally.schema_version"


def _field(column: Column) -> Any:
    meta = {_META_KIND: column.kind.encode(), _META_LEDGER: b"1" if column.ledger else b"0"}
    return pa.field(column.name, _TYPES.get(column.kind, pa.string()), metadata=meta)


def _encode(column: Column, row: dict[str, Any]) -> Any:
    if column.name not in row:
        return None  # a benchmark field this row does not have
    value = row[column.name]
    if column.kind != "json":
        return value
    if column.ledger and value is None:
        return None
    return orjson.dumps(value).decode()


class ParquetSink:
    """Writes flat rows (export_formats.flatten) in batches to one Parquet file."""

    def __init__(self, path: Path, columns: Sequence[Column], schema_version: int) -> None:
        self.columns = list(columns)
        meta = {_META_VERSION: str(schema_version).encode()}
        self.schema = pa.schema([_field(c) for c in self.columns], metadata=meta)
        self._writer = pq.ParquetWriter(str(path), self.schema)

    def write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        arrays = [
            pa.array([_encode(c, r) for r in rows], type=self.schema.field(c.name).type)
            for c in self.columns
        ]
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))

    def __enter__(self) -> ParquetSink:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._writer.close()


def _column(field: Any) -> Column:
    meta = field.metadata or {}
    kind = meta.get(_META_KIND, b"json").decode()
    return Column(field.name, kind, ledger=meta.get(_META_LEDGER, b"1") == b"1")


def read_parquet(path: Path) -> Iterator[dict[str, Any]]:
    try:
        handle = pq.ParquetFile(str(path))
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"{path}: cannot read the Parquet export: {exc}") from exc
    columns = [_column(f) for f in handle.schema_arrow]
    for batch in handle.iter_batches(batch_size=10_000):
        values = [batch.column(i).to_pylist() for i in range(len(columns))]
        for cells in zip(*values, strict=True):
            flat: dict[str, Any] = {}
            for column, cell in zip(columns, cells, strict=True):
                if cell is None and not column.ledger:
                    continue
                flat[column.name] = (
                    orjson.loads(cell) if column.kind == "json" and cell is not None else cell
                )
            yield unflatten(flat)
