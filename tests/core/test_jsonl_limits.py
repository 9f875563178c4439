"""A JSONL file is read line by line within a bound: a file without line breaks fails at its
first line with file:line, instead of being read whole (issue 8, item 14)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from evaltally.errors import DataError
from evaltally.jsonl import read_jsonl
from testkit import tally, write_config


def test_a_line_over_the_bound_is_an_error_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"id": "a"}\n' + b"[" + b"1," * 5000 + b"1]")
    rows = read_jsonl(path, "items file", max_line_bytes=1024)
    assert next(rows) == (1, {"id": "a"})
    with pytest.raises(DataError, match=r"items\.jsonl:2: line longer than 1,024 bytes"):
        next(rows)


def test_a_line_exactly_at_the_bound_is_read(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    line = b'{"id": "' + b"x" * 1000 + b'"}'
    path.write_bytes(line + b"\n" + line)
    assert [n for n, _ in read_jsonl(path, max_line_bytes=len(line))] == [1, 2]


def test_a_compressed_file_without_line_breaks_is_not_inflated_whole(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl.gz"
    with gzip.open(path, "wb") as fh:
        for _ in range(64):
            fh.write(b" " * (1 << 20))  # 64 MiB of one line, about 64 KB on disk
    with pytest.raises(DataError, match=r"items\.jsonl\.gz:1: line longer than"):
        list(read_jsonl(path, max_line_bytes=1 << 20))


def test_tally_plan_names_the_line_of_an_items_file_without_breaks(tmp_path: Path) -> None:
    (tmp_path / "items.jsonl").write_bytes(b" " * (33 * 1024 * 1024))
    result = tally("plan", str(write_config(tmp_path, "http://127.0.0.1:9")))
    assert result.returncode == 2
    assert "items.jsonl:1: line longer than 33,554,432 bytes" in result.stderr
    assert result.stderr.count("\n") == 1
