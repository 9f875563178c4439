"""Reading and validating a `prompts` items file; every error names the file, line and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaltally.errors import DataError
from evaltally.jsonl import read_jsonl

ROLES = {"system", "user", "assistant"}
FIELDS = {"id", "messages", "turns", "system", "meta"}


def load_items(path: Path) -> dict[str, dict[str, Any]]:
    """Item id -> item, in file order."""
    items: dict[str, dict[str, Any]] = {}
    for lineno, item in read_jsonl(path, "items file"):
        _check_item(path, lineno, item)
        if item["id"] in items:
            raise DataError(f"{path}:{lineno}: duplicate item id {item['id']!r}")
        items[item["id"]] = item
    if not items:
        raise DataError(f"{path}: no items")
    return items


def _check_item(path: Path, lineno: int, item: object) -> None:
    where = f"{path}:{lineno}"
    if not isinstance(item, dict):
        raise DataError(f"{where}: an item must be a JSON object")
    if not isinstance(item.get("id"), str) or not item["id"]:
        raise DataError(f"{where}: field 'id' must be a non-empty string")
    where = f"{where} (item {item['id']!r})"
    if ("messages" in item) == ("turns" in item):
        raise DataError(f"{where}: needs exactly one of 'messages' or 'turns'")
    unknown = sorted(set(item) - FIELDS)
    if unknown:
        raise DataError(f"{where}: unknown field {unknown[0]!r}")
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
