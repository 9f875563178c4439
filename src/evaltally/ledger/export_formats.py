"""Export file formats: JSONL (the reference), CSV and Parquet, chosen by the file's extension.

CSV and Parquet are made from the JSONL export of the same run (written first, to a temporary
file beside the output), so every format holds the same rows with the same `schema_version`.
`read_export` gives back the JSONL rows exactly, from any of the three: `tally grade` reads
through it. The flat column list and the cell rules are documented in docs/export.md; in short:

- the ledger fields come first, in a fixed order, `usage` split into four `usage_*` columns;
- JSON-valued ledger fields (`spec`, `parsed`) hold JSON text;
- the benchmark's fields follow in first-seen order. In CSV an empty cell means the row has no
  such field; a string is written as it is unless it would read as JSON (then it is quoted as
  a JSON string); anything else is JSON text. Parquet types a benchmark column when all its
  values share one scalar type, else holds JSON text.
"""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from evaltally.errors import DataError, LedgerError
from evaltally.jsonl import read_objects
from evaltally.ledger.export import check_target, export_run
from evaltally.ledger.export_columns import (
    LEDGER_COLUMNS,
    LEDGER_FIELDS,
    Column,
    flatten,
    unflatten,
)
from evaltally.ledger.export_meta import meta_path, write_run_metadata
from evaltally.ledger.export_record import EXPORT_SCHEMA_VERSION, ExportRow

FORMATS = (".jsonl", ".csv", ".parquet")
BATCH_ROWS = 10_000


def export_format(path: Path) -> str:
    """The format of an export file from its extension (`.jsonl.gz` reads as JSONL)."""
    name = Path(path).name.lower()
    if name.endswith(".jsonl.gz"):
        return ".jsonl"
    for suffix in FORMATS:
        if name.endswith(suffix):
            return suffix
    raise DataError(
        f"{path}: unknown export format; name the file with one of {', '.join(FORMATS)}"
    )


# -- writing --------------------------------------------------------------------------------


def write_export(
    run_dir: Path,
    out: Path,
    *,
    enrich: Callable[[ExportRow], Mapping[str, Any]] | None = None,
    force: bool = False,
) -> int:
    """Export `run_dir` to `out` in the format its extension names, and its run metadata
    beside it (ledger/export_meta.py); returns the row count. A run's own files are never
    written over; another existing file only with `force`."""
    out = Path(out)
    # The metadata belongs to the rows: written whenever they are (a file left by an earlier
    # export whose rows were deleted is replaced), never over a run's own files.
    check_target(meta_path(out), Path(run_dir), force=True)
    n = _write_rows(run_dir, out, enrich, force)
    write_run_metadata(run_dir, out, n)
    return n


def _write_rows(
    run_dir: Path,
    out: Path,
    enrich: Callable[[ExportRow], Mapping[str, Any]] | None,
    force: bool,
) -> int:
    fmt = export_format(out)
    check_target(out, Path(run_dir), force=force)
    if fmt == ".jsonl":
        return export_run(run_dir, out, enrich=enrich, force=force)
    if fmt == ".parquet":
        _pyarrow(out)  # fail before the export, not after
    source = out.with_name(f".{out.name}.{os.getpid()}.jsonl.tmp")
    try:
        n = export_run(run_dir, source, enrich=enrich)
        convert_export(source, out)
    finally:
        with contextlib.suppress(OSError):
            source.unlink()
    return n


def convert_export(source: Path, out: Path) -> None:
    """Write the JSONL export `source` as `out`, a .csv or .parquet file (through a temporary
    file renamed into place, so a failure never leaves a partial file)."""
    out = Path(out)
    fmt = export_format(out)
    if fmt == ".jsonl":
        raise DataError(f"{out}: convert_export writes .csv or .parquet; {source} is the JSONL")
    if fmt == ".parquet":
        _pyarrow(out)
    target = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        columns = _columns(source)
        if fmt == ".csv":
            _write_csv(source, target, columns)
        else:
            _write_parquet(source, target, columns)
        target.replace(out)
    except OSError as exc:
        raise LedgerError(f"cannot write the export to {out}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            target.unlink()


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    for _, row in read_objects(path, "export"):
        yield row


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "text"
    return "json"


def _columns(source: Path) -> list[Column]:
    """The ledger columns, then each benchmark field with the one scalar kind all its values
    share ("json" when they differ, or when any is null or not a scalar)."""
    kinds: dict[str, set[str]] = {}
    for row in _rows(source):
        for key, value in row.items():
            if key not in LEDGER_FIELDS:
                kinds.setdefault(key, set()).add(_kind(value))
    extra = [Column(k, s.pop() if len(s) == 1 else "json", ledger=False) for k, s in kinds.items()]
    return [*LEDGER_COLUMNS, *extra]


def _reads_as_json(text: str) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def csv_cell(column: Column, row: Mapping[str, Any]) -> str:
    if column.name not in row:
        return ""
    value = row[column.name]
    if column.ledger:
        if value is None:
            return ""
        if column.kind == "text":
            plain = value != "" and not value.startswith('"')
            return str(value) if plain else orjson.dumps(value).decode()
        return orjson.dumps(value).decode()
    if isinstance(value, str) and value and not _reads_as_json(value):
        return value
    return orjson.dumps(value).decode()


def csv_value(column: Column, cell: str) -> tuple[bool, Any]:
    """(present, value) of a CSV cell; the inverse of `csv_cell`."""
    if cell == "":
        return column.ledger, None
    if column.ledger and column.kind == "text":
        return True, orjson.loads(cell) if cell.startswith('"') else cell
    try:
        return True, orjson.loads(cell)
    except orjson.JSONDecodeError:
        if column.ledger:
            raise
        return True, cell


def _write_csv(source: Path, target: Path, columns: list[Column]) -> None:
    with target.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow([c.name for c in columns])
        for row in _rows(source):
            flat = flatten(row)
            writer.writerow([csv_cell(c, flat) for c in columns])


def _pyarrow(path: Path) -> Any:
    try:
        import pyarrow
    except ImportError:
        raise DataError(
            f"{path}: the Parquet format needs pyarrow, which is not installed; install it with "
            "`pip install 'evaltally[parquet]'`, or use .jsonl or .csv"
        ) from None
    return pyarrow


def _write_parquet(source: Path, target: Path, columns: list[Column]) -> None:
    from evaltally.ledger.parquet import ParquetSink

    with ParquetSink(target, columns, EXPORT_SCHEMA_VERSION) as sink:
        batch: list[dict[str, Any]] = []
        for row in _rows(source):
            batch.append(flatten(row))
            if len(batch) >= BATCH_ROWS:
                sink.write(batch)
                batch = []
        sink.write(batch)


# -- reading --------------------------------------------------------------------------------


def read_export(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of an export file of any format, as the JSONL export has them."""
    path = Path(path)
    fmt = export_format(path)
    if fmt == ".jsonl":
        yield from _rows(path)
    elif fmt == ".csv":
        yield from _read_csv(path)
    else:
        _pyarrow(path)
        from evaltally.ledger.parquet import read_parquet

        yield from read_parquet(path)


def _read_csv(path: Path) -> Iterator[dict[str, Any]]:
    try:
        fh = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(f"{path}: cannot read the export: {exc.strerror or exc}") from exc
    # A raw answer can be longer than the csv module's default cell limit (128 KiB).
    csv.field_size_limit(2**31 - 1)
    with fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            return
        known = {c.name: c for c in LEDGER_COLUMNS}
        columns = [known.get(name, Column(name, "json", ledger=False)) for name in header]
        for cells in reader:
            line = reader.line_num
            if len(cells) != len(columns):
                raise DataError(f"{path}:{line}: {len(cells)} cells, the header has {len(columns)}")
            flat: dict[str, Any] = {}
            for column, cell in zip(columns, cells, strict=True):
                try:
                    present, value = csv_value(column, cell)
                except orjson.JSONDecodeError:
                    raise DataError(
                        f"{path}:{line}: column {column.name}: {cell[:40]!r} is not JSON"
                    ) from None
                if present:
                    flat[column.name] = value
            yield unflatten(flat)
