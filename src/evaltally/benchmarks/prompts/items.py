"""Reading and validating a `prompts` items file; every error names the file, line and field.

JSONL holds items as they are (`id`, `messages` or `turns`, optional `system`, `target`,
`choices`, `meta`). CSV and Parquet hold one single-call item per row, read through a field
mapping (`tabular.py`) into exactly the JSONL item it stands for, so the three give the same
plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evaltally.errors import DataError
from evaltally.jsonl import read_jsonl
from evaltally.ledger.scratch import ScratchStore

ROLES = {"system", "user", "assistant"}
FIELDS = {"id", "messages", "turns", "system", "meta", "target", "choices"}


def load_items(path: Path) -> ScratchStore:
    """Item id -> item, in file order (JSONL)."""
    return collect(path, read_jsonl(path, "items file"), "")


def collect(path: Path | str, rows: Iterable[tuple[int, object]], unit: str) -> ScratchStore:
    """Validated items by id from (line or row number, item); `unit` prefixes the number in
    errors ("row " for tables, "" for a file's lines)."""
    items = ScratchStore()
    with items.adding():
        for lineno, item in rows:
            where = f"{path}:{unit}{lineno}"
            _check_item(where, item)
            assert isinstance(item, dict)
            try:
                added = items.add(item["id"], item)
            except TypeError as exc:  # orjson: a value JSON cannot hold (bytes from a table)
                raise DataError(f"{where} (item {item['id']!r}): not JSON: {exc}") from None
            if not added:
                raise DataError(f"{where}: duplicate item id {item['id']!r}")
    if not items:
        raise DataError(f"{path}: no items")
    return items


def _check_item(where: str, item: object) -> None:
    if not isinstance(item, dict):
        raise DataError(f"{where}: an item must be a JSON object")
    if not isinstance(item.get("id"), str) or not item["id"]:
        raise DataError(f"{where}: field 'id' must be a non-empty string")
    where = f"{where} (item {item['id']!r})"
    if ("messages" in item) == ("turns" in item):
        raise DataError(f"{where}: needs exactly one of 'messages' or 'turns'")
    unknown = sorted(set(item) - FIELDS)
    if unknown:
        raise DataError(f"{where}: unknown field {unknown[0]!r}; fields: {sorted(FIELDS)}")
    if "messages" in item:
        msgs = item["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise DataError(f"{where}: 'messages' must be a non-empty list")
        for i, m in enumerate(msgs):
            ok = (
                isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str)
            )
            if not ok:
                raise DataError(f"{where}: messages[{i}] needs a role {sorted(ROLES)} and content")
    else:
        turns = item["turns"]
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
            raise DataError(f"{where}: 'turns' must be a non-empty list of strings")
        if "system" in item and not isinstance(item["system"], str):
            raise DataError(f"{where}: 'system' must be a string")
    _check_target(where, item)


def _check_target(where: str, item: dict[str, Any]) -> None:
    target = item.get("target")
    if isinstance(target, list) and (not target or any(isinstance(t, dict) for t in target)):
        raise DataError(f"{where}: a list 'target' must be a non-empty list of acceptable answers")
    choices = item.get("choices")
    if choices is not None and (
        not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices)
    ):
        raise DataError(f"{where}: 'choices' must be a non-empty list of strings")
    if "meta" in item and not isinstance(item["meta"], dict):
        raise DataError(f"{where}: 'meta' must be a JSON object")
