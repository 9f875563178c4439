"""The generic `prompts` benchmark: a file of items, single calls or multi-turn chains, scored
against their targets when the benchmark names a scorer.

Item shapes (JSONL, one JSON object per line; benchmarks/prompts/items.py validates them):
  {"id": "q1", "messages": [{"role": "user", "content": "..."}], "target": "..."}   one call
  {"id": "c1", "system": "...", "turns": ["first", "second", ...]}     a chain: turn k is sent
      after the model's own answer to turn k-1 was appended as an assistant message.
CSV and Parquet files hold single calls through a field mapping (tabular.py). Options are
documented in docs/prompts.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from evaltally.benchmarks.prompts import scorers
from evaltally.benchmarks.prompts.hub import DatasetRef, items_sha256, load_dataset_items
from evaltally.benchmarks.prompts.items import load_items
from evaltally.benchmarks.prompts.predictors import PREDICTORS
from evaltally.benchmarks.prompts.tabular import FieldMap, items_format, load_table
from evaltally.config import BenchmarkConfig
from evaltally.errors import DataError
from evaltally.prompts import prompts as texts
from evaltally.records import Message, PlannedCall, content_hash

PARSE_MODES = ("text", "json")


@dataclass(frozen=True)
class PromptsOptions(BenchmarkOptions):
    path: str | None = None
    """A JSONL, CSV or Parquet file of items, relative to the config's directory."""
    dataset: str | None = None
    """A Hugging Face dataset (hub id or local directory) instead of `path` (hub.py)."""
    dataset_config: str | None = None
    split: str = "train"
    revision: str | None = None
    parse: str = "text"
    scorer: str | None = None
    ignore_case: bool = True
    ignore_whitespace: bool = True
    ignore_punctuation: bool = False
    pattern: str | None = None
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    fields: tuple[str, ...] | None = None
    id_field: str = "id"
    prompt_field: str = "prompt"
    target_field: str = "target"
    choices_field: str = "choices"
    meta_fields: tuple[str, ...] | None = None
    rubric: str | None = None
    """`model` scorer: a text file holding the grading prompt (slots {question}, {target},
    {answer}); the built-in rubric when unset."""
    rubric_version: str | None = None

    def check(self) -> None:
        if (self.path is None) == (self.dataset is None):
            raise OptionError("path", "give exactly one of path (a file) or dataset")
        if self.parse not in PARSE_MODES:
            raise OptionError("parse", "must be 'text' or 'json'")
        if self.scorer == "regex" and not self.pattern:
            raise OptionError("pattern", "the regex scorer needs a pattern")
        if self.pattern is not None:
            import re

            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise OptionError("pattern", f"not a regular expression: {exc}") from None
        if (self.rubric is None) != (self.rubric_version is None):
            raise OptionError("rubric_version", "rubric and rubric_version go together")
        if self.abs_tol < 0 or self.rel_tol < 0:
            raise OptionError("abs_tol" if self.abs_tol < 0 else "rel_tol", "must be >= 0")

    def scorer_options(self) -> dict[str, Any]:
        """The options the chosen scorer reads (recorded in every export row)."""
        name = self.scorer
        if name in ("exact", "includes", "regex"):
            out: dict[str, Any] = {
                "ignore_case": self.ignore_case,
                "ignore_whitespace": self.ignore_whitespace,
                "ignore_punctuation": self.ignore_punctuation,
            }
            return {**out, "pattern": self.pattern} if name == "regex" else out
        if name == "number":
            return {"abs_tol": self.abs_tol, "rel_tol": self.rel_tol}
        if name == "json":
            return {"fields": list(self.fields or ())}
        return {}


class PromptsBenchmark(Benchmark):
    kind = "prompts"
    Options = PromptsOptions
    predictors = PREDICTORS

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts: PromptsOptions = self.options
        fields = FieldMap(
            opts.id_field,
            opts.prompt_field,
            opts.target_field,
            opts.choices_field,
            opts.meta_fields or (),
        )
        self.items_path: Path | None = None
        self.dataset: DatasetRef | None = None
        if opts.dataset is not None:
            local = self.path(opts.dataset)
            name = str(local) if local.exists() else opts.dataset
            self.dataset = DatasetRef(name, opts.dataset_config, opts.split, opts.revision)
            self.source = self.dataset.label()
            self.items = load_dataset_items(self.dataset, fields)
        else:
            self.items_path = self.path(str(opts.path))
            self.source = str(self.items_path)
            if items_format(self.items_path) == ".jsonl":
                self.items = load_items(self.items_path)
            else:
                self.items = load_table(self.items_path, fields)
        self.scorer = self._scorer(opts)
        if self.scorer is not None:
            self._check_targets()

    def _scorer(self, opts: PromptsOptions) -> scorers.ScorerSpec | None:
        if opts.scorer is None:
            return None
        scorers.check_scorer_name(opts.scorer, self.fail)
        return scorers.ScorerSpec(
            opts.scorer, scorers.scorer_version(opts.scorer), opts.scorer_options()
        )

    def _check_targets(self) -> None:
        """Items without a target are not scored; a scorer with no target at all is a mistake
        (a misnamed target column, say)."""
        assert self.scorer is not None
        targeted = False
        for item_id, item in self.items.pairs():
            if "target" not in item:
                continue
            targeted = True
            if self.scorer.name == "choice":
                try:
                    scorers.choice_letter(item)
                except scorers.ScoreError as exc:
                    raise DataError(f"{self.source} (item {item_id!r}): {exc}") from None
        if not targeted:
            raise DataError(
                f"{self.source}: scorer {self.scorer.name!r} is named but no item has a "
                "'target' (for CSV or Parquet, name the column with target_field)"
            )

    def _rendered_item(self, item_id: str) -> Mapping[str, Any]:
        item = self.items[item_id]
        if self.scorer is not None and self.scorer.name == "choice" and "target" in item:
            return texts.with_choices(item)
        return item

    def chains(self) -> Iterator[ChainTemplate]:
        for item_id, item in self.items.pairs():
            n = len(item["turns"]) if "turns" in item else 1
            yield ChainTemplate(
                item_id=item_id,
                item_hash=content_hash(item, 32),
                protocol="",
                steps=tuple({} for _ in range(n)),
            )

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        item = self._rendered_item(call.item_id)
        return texts.render(item, call.step, [a.raw_text for a in earlier])

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

    def _scored(self, call: PlannedCall) -> bool:
        item = self.items.get(call.item_id)
        last = len(item["turns"]) - 1 if item is not None and "turns" in item else 0
        return (
            self.scorer is not None and item is not None and "target" in item and call.step == last
        )

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        return {
            "item": self.items[call.item_id],
            "scorer": self.scorer.as_json() if self._scored(call) and self.scorer else None,
        }

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        """The scored step's item fields and scorer: what `tally grade` rescores from."""
        if not self._scored(call) or self.scorer is None:
            return {}
        item = self.items[call.item_id]
        fields: dict[str, Any] = {k: item[k] for k in ("target", "choices", "meta") if k in item}
        return {**fields, "scorer": self.scorer.as_json()}

    def answer_fields(self, call: PlannedCall, row: Mapping[str, Any]) -> Mapping[str, Any]:
        if not self._scored(call) or self.scorer is None:
            return {}
        return {"score": scorers.score_row(row, self.items[call.item_id], self.scorer.as_json())}

    def data_sources(self) -> list[DataSource]:
        if self.items_path is None:
            return [DataSource(self.source, items_sha256(self.items), "the items as read")]
        return [DataSource(str(self.items_path), file_sha256(self.items_path))]
