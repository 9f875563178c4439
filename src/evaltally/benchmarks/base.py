"""What the planner and runner need from a benchmark.

A benchmark turns its items into chain templates (model-independent), renders a planned call's
messages from the item and the chain's recorded answers (a pure function: the same inputs give
the same bytes, which is what lets a resume prove it sends the same request), parses an answer,
and adds its oracle fields to export rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.config import BenchmarkConfig
from evaltally.records import JSONValue, Message, PlannedCall, Status


@dataclass(frozen=True, slots=True)
class ChainTemplate:
    """One chain before it is bound to a model and a sample."""

    item_id: str
    item_hash: str
    """Hash of the item's content: an edited item gets new call ids, so it is never mistaken
    for the item whose answers are recorded."""
    protocol: str
    steps: tuple[Mapping[str, JSONValue], ...]
    """Per step, the `spec` a planned call carries (what render needs beyond the item)."""


@dataclass(frozen=True, slots=True)
class StepAnswer:
    """A recorded answer of an earlier step in the same chain."""

    step: int
    status: Status
    raw_text: str | None
    parsed: Any


@dataclass(frozen=True, slots=True)
class ParseResult:
    ok: bool
    value: Any = None
    path: str | None = None
    """Which parser succeeded (e.g. "strict", "tolerant", "text"); None on failure."""
    error: str | None = None


class Benchmark(ABC):
    """Base class for benchmark kinds. Subclasses read their options in `__init__`."""

    kind: str

    def __init__(self, config: BenchmarkConfig) -> None:
        self.config = config
        self.label = config.label

    @abstractmethod
    def chains(self) -> Iterator[ChainTemplate]:
        """Every chain template, in a stable order."""

    @abstractmethod
    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        """The messages for `call`, given the answers of the chain's earlier steps."""

    @abstractmethod
    def parse(self, text: str) -> ParseResult:
        """Interpret a model's raw answer. A failure is a model outcome, never retried."""

    def estimate_messages(self, call: PlannedCall) -> list[Message]:
        """Messages used for token estimates before anything ran (no earlier answers)."""
        return self.render(call, [])

    def offline_context(self, call: PlannedCall) -> Mapping[str, Any]:
        """What an offline predictor may read for this call (oracle inputs, never sent)."""
        return {}

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        """Oracle fields a regrader needs beside each export row."""
        return {}

    def shown_answers(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> dict[int, str]:
        """Where the chain's own earlier answers appear in this call's prompt: step -> the
        exact text of the rendered messages that carries that step's answer (`tally view`
        highlights it). Empty for a benchmark whose prompts never show earlier answers."""
        return {}
