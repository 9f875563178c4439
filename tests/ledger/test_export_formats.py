"""Export formats: CSV and Parquet hold exactly the rows of the JSONL export, `tally grade`
reads all three to the same numbers, and the cell rules survive every awkward value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest

from evaltally.errors import DataError
from evaltally.ledger.export_columns import LEDGER_COLUMNS, Column
from evaltally.ledger.export_formats import (
    convert_export,
    csv_cell,
    csv_value,
    export_format,
    read_export,
)
from testkit import tally

AWKWARD: list[Any] = [
    "", "plain", "null", "true", "1", "1.5", " 2", '"quoted"', '"', '{"a": 1}', "[1, 2]",
    "line\nbreak, with comma", "tab\tand \"quotes\"", "ünïcödé ✓", "x" * 200_000,
    None, 0, -3, 2.5, 1e-300, True, False, {"a": [1, {"b": None}]}, [], {},
]  # fmt: skip


CASES = [(Column("extra", "json", ledger=False), v) for v in AWKWARD] + [
    (Column("raw_text", "text"), v) for v in AWKWARD if v is None or isinstance(v, str)
]


@pytest.mark.parametrize(("column", "value"), CASES, ids=lambda x: repr(x)[:30])
def test_a_csv_cell_reads_back_as_the_value_it_was_written_from(column: Column, value: Any) -> None:
    present, back = csv_value(column, csv_cell(column, {column.name: value}))
    assert present and back == value and type(back) is type(value)


def test_empty_cells_mean_null_in_ledger_columns_and_absent_in_benchmark_columns() -> None:
    assert csv_value(Column("reason", "text"), "") == (True, None)
    assert csv_value(Column("service", "json", ledger=False), "") == (False, None)
    assert csv_cell(Column("service", "json", ledger=False), {}) == ""
    assert csv_cell(Column("service", "json", ledger=False), {"service": None}) == "null"
    # strings that read as plain text stay plain for analysts; JSON-looking ones are quoted
    assert csv_cell(Column("service", "json", ledger=False), {"service": "bank"}) == "bank"
    assert csv_cell(Column("service", "json", ledger=False), {"service": "12"}) == '"12"'
    assert csv_cell(Column("raw_text", "text"), {"raw_text": '{"a": 1}'}) == '{"a": 1}'


def _rows() -> list[dict[str, Any]]:
    base = {c.name: None for c in LEDGER_COLUMNS if not c.name.startswith("usage_")}
    rows = []
    for i, value in enumerate(AWKWARD):
        row = {**base, "schema_version": 1, "call_id": f"c{i}", "step": i, "sample": 0}
        row.update(raw_text=value if isinstance(value, str) else None, parsed=value)
        row["usage"] = {"input_tokens": i, "output_tokens": 1, "reasoning_tokens": 0,
                        "cached_tokens": 0} if i % 2 else None  # fmt: skip
        row["latency_ms"] = float(i) if i % 3 else None
        if i % 2:
            row["benchmark_field"] = value  # present in some rows only, any type
        if i % 4 == 0:
            row["int_field"] = i  # one scalar type: typed in Parquet
        rows.append(row)
    return rows


def test_csv_and_parquet_hold_exactly_the_jsonl_rows(tmp_path: Path) -> None:
    rows = _rows()
    source = tmp_path / "e.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    for name in ("e.csv", "e.parquet"):
        convert_export(source, tmp_path / name)
        assert list(read_export(tmp_path / name)) == rows, name
    assert list(read_export(source)) == rows
    schema = pq.read_schema(tmp_path / "e.parquet")
    assert schema.metadata[b"evaltally.schema_version"] == b"1"
    assert str(schema.field("int_field").type) == "int64"
    assert str(schema.field("benchmark_field").type) == "string"  # mixed types: JSON text
    # no temporary file is left behind
    assert {p.name for p in tmp_path.iterdir()} == {"e.jsonl", "e.csv", "e.parquet"}


def test_format_comes_from_the_extension(tmp_path: Path) -> None:
    assert export_format(Path("a.JSONL")) == ".jsonl"
    assert export_format(Path("a.jsonl.gz")) == ".jsonl"
    assert export_format(Path("dir.v2/a.csv")) == ".csv"
    assert export_format(Path("a.parquet")) == ".parquet"
    with pytest.raises(
        DataError, match=r"a\.txt: unknown export format; .*\.jsonl, \.csv, \.parquet"
    ):
        export_format(Path("a.txt"))
    bad = tmp_path / "bad.csv"
    bad.write_text("schema_version,call_id\n1\n")
    with pytest.raises(DataError, match=r"bad\.csv:2: 1 cells, the header has 2"):
        list(read_export(bad))


@pytest.fixture(scope="module")
def cte_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("formats")
    config = root / "f.toml"
    config.write_text(
        '[run]\nname = "f"\nruns_dir = "runs"\n\n[[models]]\nkey = "replay"\n'
        'provider = "baseline"\nmodel = "replay"\n\n[[models]]\nkey = "copy_last"\n'
        'provider = "baseline"\nmodel = "copy_last"\n\n'
        '[[benchmarks]]\nkind = "cte"\ndata = "builtin"\nlimit = 3\n'
    )
    result = tally("run", str(config))
    assert result.returncode == 0, result.stderr
    return root / "runs" / "f"


def test_grade_of_jsonl_csv_and_parquet_exports_is_the_same(cte_run: Path, tmp_path: Path) -> None:
    graded = {}
    for ext in ("jsonl", "csv", "parquet"):
        export = tmp_path / f"export.{ext}"
        made = tally("export", str(cte_run), "-o", str(export))
        assert made.returncode == 0, made.stderr
        assert "wrote 720 rows" in made.stdout
        out = tmp_path / ext
        result = tally("grade", str(export), "-o", str(out), "--resamples", "30")
        assert result.returncode == 0, result.stderr
        graded[ext] = orjson.loads((out / "report.json").read_bytes())
        assert graded[ext]["sections"]["cte"]["groups"]
    assert graded["jsonl"] == graded["csv"] == graded["parquet"]
    rows = list(read_export(tmp_path / "export.jsonl"))
    assert rows == list(read_export(tmp_path / "export.csv"))
    assert rows == list(read_export(tmp_path / "export.parquet"))
    schema = pq.read_schema(tmp_path / "export.parquet")
    types = {name: str(schema.field(name).type) for name in schema.names}
    assert types["future_index"] == "int64" and types["is_effect_step"] == "bool"
    assert types["service"] == "string" and types["latency_ms"] == "double"


def test_unknown_extension_is_refused_and_writes_nothing(cte_run: Path, tmp_path: Path) -> None:
    result = tally("export", str(cte_run), "-o", str(tmp_path / "e.txt"))
    assert result.returncode == 2
    assert "unknown export format" in result.stderr and ".parquet" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_parquet_without_pyarrow_says_how_to_get_it(cte_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "e.parquet"
    # A real `tally` process in which pyarrow cannot be imported (as without the extra).
    code = (
        "import sys; sys.modules['pyarrow'] = None; from evaltally.cli import main; "
        f"sys.argv = ['tally', 'export', {str(cte_run)!r}, '-o', {str(out)!r}]; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2
    assert "pip install 'evaltally[parquet]'" in result.stderr
    assert list(tmp_path.iterdir()) == []
