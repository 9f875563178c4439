"""SCAE judges as a runnable benchmark: trajectories -> two judge calls each -> the blamed step.

Items are episodes (an episode file; default the shipped example set) or the free rollouts of a
recorded CTE-Bench run (`cte_run`). Per item and judge model, one independent call per
condition: `full` (every step and the outcome) and `prefix` (the first k = max(1, floor(f T))
steps, outcome withheld), same rubric, f fixed in the config (docs/scae.md). The condition is
the call's protocol; each call is a chain of one step answered by the role `judge`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

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
from evaltally.config import BenchmarkConfig
from evaltally.errors import DataError
from evaltally.prompts import scae as prompts
from evaltally.records import JSONValue, Message, PlannedCall

from .conditions import CONDITIONS, DEFAULT_FRACTION, FULL, exact_fraction, judge_messages
from .conditions import visible_steps as visible_for
from .episodes import example_path, load_episodes
from .items import JudgeItem, episode_items
from .offline import OFFLINE_JUDGES
from .parse import parse_judge, to_parse_result

JUDGE = "judge"


@dataclass(frozen=True)
class ScaeOptions(BenchmarkOptions):
    episodes: str | None = None
    """An episode file (.jsonl/.jsonl.gz, docs/scae.md); default: the shipped example set."""
    cte_run: str | None = None
    """A recorded CTE-Bench run directory: judge its free rollouts instead of episodes."""
    fraction: float = 0.6
    """The prefix condition shows max(1, floor(fraction * T)) steps; fixed in advance."""
    conditions: tuple[str, ...] = CONDITIONS
    limit: int | None = None
    """Judge the first `limit` items only (file order; chain-id order for `cte_run`)."""
    prompt_version: str = prompts.PROMPT_VERSION
    """"scae-judge-v1" only to resume a run planned before v2 (which no longer tells a prefix
    judge the trajectory's length)."""

    def check(self) -> None:
        if self.episodes is not None and self.cte_run is not None:
            raise OptionError("cte_run", "give either episodes or cte_run, not both")
        try:
            exact_fraction(self.fraction)
        except ValueError as exc:
            raise OptionError("fraction", str(exc)) from None
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad:
            raise OptionError("conditions", f"unknown condition {bad[0]!r}; valid: full, prefix")
        if len(set(self.conditions)) != len(self.conditions):
            raise OptionError("conditions", "lists a condition twice")
        if self.limit is not None and self.limit <= 0:
            raise OptionError("limit", f"must be > 0, got {self.limit}")
        if self.prompt_version not in prompts.PROMPT_VERSIONS:
            known = ", ".join(prompts.PROMPT_VERSIONS)
            raise OptionError("prompt_version", f"one of {known}, got {self.prompt_version!r}")


class ScaeBenchmark(Benchmark):
    kind = "scae"
    Options = ScaeOptions
    roles = (JUDGE,)
    predictors = OFFLINE_JUDGES

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts: ScaeOptions = self.options
        self.fraction = exact_fraction(opts.fraction)
        self._sources: list[DataSource] = []
        self._parents: list[dict[str, JSONValue]] = []
        if opts.cte_run is not None:
            items = self._rollouts(opts.cte_run, opts.limit)
        else:
            path = example_path() if opts.episodes is None else self.path(opts.episodes)
            try:
                episodes = load_episodes(path)
            except DataError as exc:
                raise self.fail("episodes", str(exc)) from exc
            items = episode_items(episodes[: opts.limit])
            self._sources = [DataSource(str(path), file_sha256(path))]
        self.items: dict[str, JudgeItem] = {i.id: i for i in items}

    def _rollouts(self, run: str, limit: int | None) -> list[JudgeItem]:
        from .cte_source import rollout_source  # loads CTE-Bench only when it is needed

        try:
            source = rollout_source(self.path(run), limit=limit)
        except DataError as exc:
            raise self.fail("cte_run", str(exc)) from exc
        self._sources = source.data_sources
        self._parents = [
            {
                "run": str(source.run_dir),
                "what": "CTE-Bench free rollouts, judged against their certified first wrong call",
                "chains_judged": len(source.items),
                "rollouts_sha256": source.sha256,
            }
        ]
        return source.items

    # -- plan ------------------------------------------------------------------------------

    def chains(self) -> Iterator[ChainTemplate]:
        for item in self.items.values():
            for condition in self.options.conditions:
                yield ChainTemplate(
                    item.id, item.item_hash, condition, (self._spec(item, condition),)
                )

    def _spec(self, item: JudgeItem, condition: str) -> dict[str, JSONValue]:
        spec: dict[str, JSONValue] = {
            "prompt_version": self.options.prompt_version,
            "rubric": item.rubric,
        }
        # The full condition does not depend on the fraction: changing it keeps those answers.
        if condition != FULL:
            spec["fraction"] = f"{self.fraction.numerator}/{self.fraction.denominator}"
        return spec

    # -- render and parse ------------------------------------------------------------------

    def _item(self, call: PlannedCall) -> JudgeItem:
        try:
            return self.items[call.item_id]
        except KeyError:
            raise DataError(
                f"call {call.call_id}: item {call.item_id!r} is not judged here"
            ) from None

    @staticmethod
    def _fraction(call: PlannedCall) -> Fraction:
        return Fraction(str(call.spec.get("fraction", DEFAULT_FRACTION)))

    def visible(self, call: PlannedCall) -> int:
        return visible_for(self._item(call).total_steps, call.protocol, self._fraction(call))

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        item = self._item(call)
        return judge_messages(
            item.trajectory,
            call.protocol,
            rubric=str(call.spec["rubric"]),
            fraction=self._fraction(call),
            version=str(call.spec.get("prompt_version", prompts.PROMPT_VERSION)),
        )

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        return to_parse_result(parse_judge(text, self.visible(call)))

    # -- oracle side -----------------------------------------------------------------------

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        item = self._item(call)
        return {
            "condition": call.protocol,
            "visible": self.visible(call),
            "total": item.total_steps,
            "provenance": [(p.operates, p.reveals) for p in item.provenance],
        }

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        item = self._item(call)
        return {
            "source": item.source,
            "episode_id": item.id,
            "condition": call.protocol,
            "total_steps": item.total_steps,
            "visible_steps": self.visible(call),
            "fraction": call.spec.get("fraction"),
            "rubric": call.spec.get("rubric"),
            "prompt_version": call.spec.get("prompt_version"),
            "gold_provenance": [[p.operates, p.reveals] for p in item.provenance],
            **item.fields,
        }

    def data_sources(self) -> list[DataSource]:
        return list(self._sources)

    def parents(self) -> list[dict[str, JSONValue]]:
        return list(self._parents)
