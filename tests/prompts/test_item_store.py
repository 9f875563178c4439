"""A `prompts` benchmark's items are kept out of the process's memory (issue 30): loading three
times the items holds no more Python memory, and the store reads back exactly the items the
file holds, in file order, with the same content hashes (call ids stay the same)."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaltally.benchmarks.prompts.hub import items_sha256
from evaltally.benchmarks.prompts.items import load_items
from evaltally.benchmarks.prompts.tabular import FieldMap, load_table
from evaltally.errors import DataError
from evaltally.records import content_hash


def _write(path: Path, n: int) -> list[dict[str, object]]:
    items: list[dict[str, object]] = [
        {"id": f"q{i}", "messages": [{"role": "user", "content": f"question {i} " + "x" * 40}]}
        for i in range(n)
    ]
    items[1] = {"id": "q1", "turns": ["a", "b"], "target": [1.5, 2], "meta": {"k": None}}
    path.write_bytes(b"\n".join(orjson.dumps(item) for item in items) + b"\n")
    return items


def _held_after_load(path: Path) -> int:
    """Python memory still held by the loaded items (traced allocations while they live)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        items = load_items(path)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(items) > 0
    return held


def test_loading_more_items_holds_no_more_memory(tmp_path: Path) -> None:
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    _write(small, 2000)
    _write(large, 6000)
    held_small, held_large = _held_after_load(small), _held_after_load(large)
    # A dict of parsed items held ~600 bytes per item (4,000 more items: ~2.4 MB more).
    assert held_large - held_small < 40_000, (held_small, held_large)


def test_store_reads_back_the_file_in_order(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    written = _write(path, 50)
    items = load_items(path)
    assert len(items) == 50
    assert list(items) == [item["id"] for item in written]
    assert [item for _, item in items.pairs()] == written
    assert items["q1"] == written[1]
    assert "q49" in items and "q50" not in items
    assert items.get("nope") is None
    with pytest.raises(KeyError):
        items["nope"]
    # A read is a copy: changing it changes nothing stored.
    items["q0"]["id"] = "changed"
    assert items["q0"] == written[0]
    # Content hashes (part of every call id) are those of the items as written.
    assert [content_hash(item, 32) for _, item in items.pairs()] == [
        content_hash(item, 32) for item in written
    ]
    # The hash a hub dataset is recorded by: the canonical JSON of the list of items.
    assert items_sha256(items) == content_hash(written)


def test_duplicate_id_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"id": "a", "messages": [{"role": "user", "content": "x"}]}\n'
        '{"id": "b", "messages": [{"role": "user", "content": "y"}]}\n'
        '{"id": "a", "messages": [{"role": "user", "content": "z"}]}\n'
    )
    with pytest.raises(DataError, match=r"items.jsonl:3: duplicate item id 'a'"):
        load_items(path)


def test_a_table_value_json_cannot_hold_names_its_row(tmp_path: Path) -> None:
    path = tmp_path / "items.parquet"
    pq.write_table(
        pa.table({"id": ["a", "b"], "prompt": ["x", "y"], "blob": [b"1", b"\xff"]}), path
    )
    fields = FieldMap(meta=("blob",))
    with pytest.raises(DataError, match=r"items.parquet:row 1 \(item 'a'\): not JSON"):
        load_table(path, fields)
