"""The generic `prompts` benchmark: a JSONL file of items, single calls or multi-turn chains.

Item shapes (one JSON object per line):
  {"id": "q1", "messages": [{"role": "user", "content": "..."}]}      one call
  {"id": "c1", "system": "...", "turns": ["first", "second", ...]}     a chain: turn k is sent
      after the model's own answer to turn k-1 was appended as an assistant message.
Options: `path` (required), `parse` = "text" (default; every answer is usable) or "json" (the
answer must be a JSON value, else it is a parse_error).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from evaltally.benchmarks.base import Benchmark, ChainTemplate, ParseResult, StepAnswer
from evaltally.config import BenchmarkConfig
from evaltally.errors import ConfigError, DataError
from evaltally.jsonl import read_jsonl
from evaltally.records import Message, PlannedCall, content_hash

ROLES = {"system", "user", "assistant"}


class PromptsBenchmark(Benchmark):
    kind = "prompts"

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts = dict(config.options)
        where = f"benchmarks[{config.index}]"
        unknown = sorted(set(opts) - {"path", "parse"})
        if unknown:
            raise ConfigError(
                config.source, f"{where}.{unknown[0]}", "unknown key; valid: path, parse"
            )
        if not isinstance(opts.get("path"), str):
            raise ConfigError(config.source, f"{where}.path", "is required (a JSONL file of items)")
        self.parse_mode = opts.get("parse", "text")
        if self.parse_mode not in ("text", "json"):
            raise ConfigError(config.source, f"{where}.parse", "must be 'text' or 'json'")
        path = Path(opts["path"])
        self.path = path if path.is_absolute() else config.base_dir / path
        self.items = load_items(self.path)

    def chains(self) -> Iterator[ChainTemplate]:
        for item_id, item in self.items.items():
            n = len(item["turns"]) if "turns" in item else 1
            yield ChainTemplate(
                item_id=item_id,
                item_hash=content_hash(item, 32),
                protocol="",
                steps=tuple({} for _ in range(n)),
            )

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        item = self.items[call.item_id]
        if "messages" in item:
            return [dict(m) for m in item["messages"]]
        messages: list[Message] = []
        if item.get("system"):
            messages.append({"role": "system", "content": item["system"]})
        for step in range(call.step):
            messages.append({"role": "user", "content": item["turns"][step]})
            answer = earlier[step].raw_text if step < len(earlier) else None
            messages.append({"role": "assistant", "content": answer or ""})
        messages.append({"role": "user", "content": item["turns"][call.step]})
        return messages

    def shown_answers(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> dict[int, str]:
        # A turns chain appends every earlier answer as an assistant message (see render).
        return {a.step: a.raw_text for a in earlier[: call.step] if a.raw_text}

    def parse(self, text: str) -> ParseResult:
        if self.parse_mode == "text":
            return ParseResult(ok=True, value=text, path="text")
        try:
            return ParseResult(ok=True, value=orjson.loads(text.strip()), path="strict")
        except orjson.JSONDecodeError as exc:
            return ParseResult(ok=False, error=f"not JSON: {exc}")


def load_items(path: Path) -> dict[str, dict[str, Any]]:
    """Read and validate an items file; errors name the file, line and field."""
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
    unknown = sorted(set(item) - {"id", "messages", "turns", "system", "meta"})
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
