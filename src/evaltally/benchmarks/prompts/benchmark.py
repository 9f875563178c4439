"""The generic `prompts` benchmark: a JSONL file of items, single calls or multi-turn chains.

Item shapes (one JSON object per line; benchmarks/prompts/items.py validates them):
  {"id": "q1", "messages": [{"role": "user", "content": "..."}]}      one call
  {"id": "c1", "system": "...", "turns": ["first", "second", ...]}     a chain: turn k is sent
      after the model's own answer to turn k-1 was appended as an assistant message.
Options: `path` (required), `parse` = "text" (default; every answer is usable) or "json" (the
answer must be a JSON value, else it is a parse_error).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import orjson

from evaltally.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    ChainTemplate,
    DataSource,
    OptionError,
    ParseResult,
    StepAnswer,
    file_sha256,
)
from evaltally.benchmarks.prompts.items import load_items
from evaltally.config import BenchmarkConfig
from evaltally.prompts import prompts as texts
from evaltally.records import Message, PlannedCall, content_hash

PARSE_MODES = ("text", "json")


@dataclass(frozen=True)
class PromptsOptions(BenchmarkOptions):
    path: str
    """A JSONL file of items, relative to the config's directory."""
    parse: str = "text"

    def check(self) -> None:
        if self.parse not in PARSE_MODES:
            raise OptionError("parse", "must be 'text' or 'json'")


class PromptsBenchmark(Benchmark):
    kind = "prompts"
    Options = PromptsOptions

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        self.items_path = self.path(self.options.path)
        self.items = load_items(self.items_path)

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
        return texts.render(self.items[call.item_id], call.step, [a.raw_text for a in earlier])

    def shown_answers(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> dict[int, str]:
        # A turns chain appends every earlier answer as an assistant message (see render).
        return {a.step: a.raw_text for a in earlier[: call.step] if a.raw_text}

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        if self.options.parse == "text":
            return ParseResult(ok=True, value=text, path="text")
        try:
            return ParseResult(ok=True, value=orjson.loads(text.strip()), path="strict")
        except orjson.JSONDecodeError as exc:
            return ParseResult(ok=False, error=f"not JSON: {exc}")

    def data_sources(self) -> list[DataSource]:
        return [DataSource(str(self.items_path), file_sha256(self.items_path))]
