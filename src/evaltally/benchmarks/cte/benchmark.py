"""CTE-Bench as a runnable benchmark: scenarios -> chains of scored calls -> prompts.

Protocols (docs/cte-protocols.md), one request per scored call (the first 40 future calls):
- answers_revealed: independent calls; history = last 20 of observed + earlier scored calls
  with their true counterfactual responses.
- no_feedback: independent calls; history = every observed call, never a scored one.
- free_rollout: one chain of 40 calls per scenario; history = last 20 of observed + earlier
  scored calls carrying the model's own parsed predictions.
- full_history: independent calls; history = every observed call + every earlier scored call
  with its true counterfactual response (answers revealed without a window).
The window (20) is the option `window`; the prompt says where the intervention falls among the
lines shown (cte-v2) and what the protocol's history shows and leaves out (cte-v3).
Independent calls are chains of length one; their chain identity includes the future index
(through `item_hash`), so the 40 calls of a scenario get 40 distinct chains.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
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
from evaltally.benchmarks.cte.baselines import OFFLINE_PREDICTORS
from evaltally.benchmarks.cte.fetch import OFFICIAL_SHA256
from evaltally.benchmarks.cte.parse import parse_answer, parse_release
from evaltally.benchmarks.cte.records import Intervention, Scenario, json_equal, load_scenarios
from evaltally.benchmarks.cte.stats import resolve_data
from evaltally.benchmarks.cte.subsets import REASONING_PROBE, SUBSETS, reasoning_probe, scenario_set
from evaltally.config import BenchmarkConfig
from evaltally.errors import ConfigError, DataError
from evaltally.prompts import cte as prompts
from evaltally.records import Message, PlannedCall, Status, content_hash

# Bound on cached free-rollout history lines (about 200 bytes each).
PREDICTION_CACHE_SIZE = 200_000

PROTOCOLS = ("answers_revealed", "no_feedback", "free_rollout", "full_history")
#: The protocols a config gets when it names none: the paper's three.
DEFAULT_PROTOCOLS = ("answers_revealed", "no_feedback", "free_rollout")
WINDOWED = ("answers_revealed", "free_rollout")
WINDOW = 20
PARSE_MODES = ("tolerant", "release")


@dataclass(frozen=True)
class CteOptions(BenchmarkOptions):
    data: str = "builtin"
    """"builtin" or a .jsonl/.jsonl.gz scenario file (docs/cte-protocols.md)."""
    protocols: tuple[str, ...] = DEFAULT_PROTOCOLS
    limit: int | None = None
    """Keep the first `limit` scenarios left after the filters."""
    services: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    parse: str = "tolerant"
    """"tolerant" (ours) or "release" (the release's repair exactly)."""
    window: int = WINDOW
    """Calls shown by the windowed protocols (answers_revealed, free_rollout)."""
    prompt_version: str = prompts.PROMPT_VERSION
    """"cte-v1"/"cte-v2" only to resume a run planned with that wording."""
    subset: str | None = None
    """"reasoning-probe": the fixed 24-scenario subset (docs/cte-protocols.md)."""

    def check(self) -> None:
        if not self.data:
            raise OptionError("data", "must be 'builtin' or a path to a .jsonl/.jsonl.gz file")
        bad = [p for p in self.protocols if p not in PROTOCOLS]
        if bad:
            raise OptionError(
                "protocols", f"unknown protocol {bad[0]!r}; valid: {', '.join(PROTOCOLS)}"
            )
        if len(set(self.protocols)) != len(self.protocols):
            raise OptionError("protocols", "lists a protocol twice")
        if self.limit is not None and self.limit <= 0:
            raise OptionError("limit", f"must be > 0, got {self.limit}")
        if self.window < 1:
            raise OptionError("window", "must be a positive integer (calls in a windowed history)")
        for key, value, valid in (
            ("parse", self.parse, PARSE_MODES),
            ("prompt_version", self.prompt_version, prompts.PROMPT_VERSIONS),
            ("subset", self.subset, (None, *SUBSETS)),
        ):
            if value not in valid:
                raise OptionError(key, f"must be one of: {', '.join(v for v in valid if v)}")


class CteBenchmark(Benchmark):
    kind = "cte"
    Options = CteOptions
    predictors = OFFLINE_PREDICTORS
    # The release shows a step that got no answer as MODEL_INVALID_JSON and carries on.
    on_failed_step_default = "continue"

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts: CteOptions = self.options
        self.protocols = opts.protocols
        self.data_path = resolve_data("builtin") if opts.data == "builtin" else self.path(opts.data)
        try:
            scenarios = load_scenarios(self.data_path)
        except DataError as exc:
            # name the config key too: the usual cause is a path that was never fetched
            reason = str(exc)
            if not self.data_path.exists():
                folder = self.data_path.parent
                reason += f"; for Core-v1, `tally cte fetch -o {folder}` writes it there"
            raise ConfigError(config.source, f"benchmarks[{config.index}].data", reason) from exc
        services, kinds = opts.services, opts.kinds
        picked = [
            s
            for s in scenarios
            if (services is None or s.domain in services) and (kinds is None or s.kind in kinds)
        ]
        if opts.subset == REASONING_PROBE:
            picked = reasoning_probe(picked)
        if opts.limit is not None:
            picked = picked[: opts.limit]
        if not picked:
            raise self.fail("services", "no scenario left after the services/kinds filters")
        self.scenarios: dict[str, Scenario] = {s.item_id: s for s in picked}
        self._hashes = {s.item_id: content_hash(s.raw, 32) for s in picked}
        self.scenario_set = scenario_set(opts.subset, picked)
        self.scenario_source = scenario_source(opts.data, self.data_path)
        # Formatting JSON dominates rendering; each scenario's true lines are made once.
        self._lines: dict[str, tuple[list[str], list[str]]] = {}
        # A free rollout re-shows each earlier prediction in up to 20 later prompts; a
        # prediction's line depends only on the call and the answer text, so it is made once.
        self._predicted: dict[tuple[str, int, Status, str | None], str] = {}

    # -- plan ------------------------------------------------------------------------------

    def chains(self) -> Iterator[ChainTemplate]:
        for protocol in self.protocols:
            for sid, scenario in self.scenarios.items():
                n = len(scenario.scored)
                if protocol == "free_rollout":
                    steps = tuple(self._spec(i, protocol) for i in range(n))
                    yield ChainTemplate(sid, self._hashes[sid], protocol, steps)
                    continue
                for i in range(n):
                    item_hash = content_hash([self._hashes[sid], i], 32)
                    yield ChainTemplate(sid, item_hash, protocol, (self._spec(i, protocol),))

    def _spec(self, future_index: int, protocol: str) -> dict[str, Any]:
        opts: CteOptions = self.options
        spec: dict[str, Any] = {"future_index": future_index, "prompt_version": opts.prompt_version}
        # Only a window other than the paper's is spelled out, so default plans keep their ids.
        if protocol in WINDOWED and opts.window != WINDOW:
            spec["window"] = opts.window
        return spec

    # -- render ----------------------------------------------------------------------------

    def _scenario(self, call: PlannedCall) -> tuple[Scenario, int]:
        try:
            scenario = self.scenarios[call.item_id]
        except KeyError:
            raise DataError(
                f"call {call.call_id}: scenario {call.item_id!r} is not in {self.data_path}"
            ) from None
        return scenario, int(call.spec["future_index"])

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        scenario, i = self._scenario(call)
        if call.protocol == "free_rollout":
            if len(earlier) < i:
                raise ValueError(f"free rollout step {i} rendered with {len(earlier)} answers")
            shown = [self._prediction_line(scenario, j, earlier[j]) for j in range(i)]
            return self._messages(call, scenario, shown)
        return self._messages(call, scenario, self._true_future(scenario, i, call.protocol))

    def _prediction_line(self, scenario: Scenario, j: int, answer: StepAnswer) -> str:
        key = (scenario.item_id, j, answer.status, answer.raw_text)
        line = self._predicted.get(key)
        if line is None:
            if len(self._predicted) >= PREDICTION_CACHE_SIZE:
                self._predicted.clear()
            line = self._predicted[key] = _prediction_line(scenario, j, answer)
        return line

    def shown_answers(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> dict[int, str]:
        # Only a free rollout shows the model's own predictions: the last WINDOW lines of the
        # history, so steps i-20 .. i-1 (an earlier one has scrolled out of the window).
        if call.protocol != "free_rollout":
            return {}
        scenario, i = self._scenario(call)
        first = max(0, i - int(call.spec.get("window", WINDOW)))
        last = min(i, len(earlier))  # a call not yet rendered may lack earlier answers
        return {j: self._prediction_line(scenario, j, earlier[j]) for j in range(first, last)}

    def estimate_messages(self, call: PlannedCall) -> list[Message]:
        # Before anything ran there are no predictions; true responses have the same shape.
        scenario, i = self._scenario(call)
        protocol = "answers_revealed" if call.protocol == "free_rollout" else call.protocol
        return self._messages(call, scenario, self._true_future(scenario, i, protocol))

    def _true_lines(self, scenario: Scenario) -> tuple[list[str], list[str]]:
        """(observed lines, scored lines with their true counterfactual responses)."""
        cached = self._lines.get(scenario.item_id)
        if cached is None:
            cached = (
                [prompts.call_line(c.op, c.args, c.response) for c in scenario.prefix],
                [prompts.call_line(c.op, c.args, c.response) for c in scenario.scored],
            )
            self._lines[scenario.item_id] = cached
        return cached

    def _true_future(self, scenario: Scenario, i: int, protocol: str) -> list[str]:
        if protocol == "no_feedback":
            return []
        return self._true_lines(scenario)[1][:i]

    def _messages(self, call: PlannedCall, scenario: Scenario, future: list[str]) -> list[Message]:
        observed = self._true_lines(scenario)[0]
        lines = observed + future
        # no_feedback and full_history show every call they hold, without a window.
        window = int(call.spec.get("window", WINDOW))
        start = max(0, len(lines) - window) if call.protocol in WINDOWED else 0
        i = int(call.spec["future_index"])
        history = prompts.History(
            lines[start:],
            observed=max(0, len(observed) - start),
            hidden_after=max(0, start - len(observed)),
            unlisted=i - len(future),
            first=start,
        )
        request = scenario.scored[i]
        return prompts.render(
            source=scenario.shown_source,
            intervention=intervention_data(scenario.intervention),
            history=history,
            op=request.op,
            args=request.args,
            protocol=call.protocol,
            window=window,
            version=str(call.spec.get("prompt_version", prompts.PROMPT_VERSION)),
        )

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        # Each answer's parse path ("strict", "tolerant" or "release") is in the ledger and the
        # export, so a run says which mode read it.
        if self.options.parse == "release":
            return parse_release(text)
        return parse_answer(text)

    def data_sources(self) -> list[DataSource]:
        return [DataSource(str(self.data_path), file_sha256(self.data_path))]

    # -- oracle side -----------------------------------------------------------------------

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        scenario, i = self._scenario(call)
        return {"scenario": scenario, "future_index": i}

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        # `protocol` is already a ledger field of every export row (docs/export.md).
        scenario, i = self._scenario(call)
        target = scenario.scored[i].response
        base = scenario.original[i].response
        return {
            "scenario_id": scenario.item_id,
            "service": scenario.domain,
            "intervention_kind": scenario.kind,
            "future_index": i,
            "prompt_version": call.spec.get("prompt_version"),
            "target": target,
            "no_intervention": base,
            "is_effect_step": not json_equal(target, base),
            "scenario_set": self.scenario_set,
            "scenario_source": self.scenario_source,
        }


def _prediction_line(scenario: Scenario, j: int, answer: StepAnswer) -> str:
    call = scenario.scored[j]
    ok = answer.status is Status.OK and isinstance(answer.parsed, dict)
    response = answer.parsed if ok else prompts.INVALID_PREDICTION
    return prompts.call_line(call.op, call.args, response, sort_keys=True)


def scenario_source(data: str, path: Path) -> str:
    """ "builtin" (our generated set), "core-v1" (the official file, by its pinned SHA-256 of
    the uncompressed records) or "other": the report titles the paper's layouts by it, so a
    table computed on another set is never read as the paper's numbers."""
    if data == "builtin":
        return "builtin"
    digest = hashlib.sha256()
    with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return "core-v1" if digest.hexdigest() == OFFICIAL_SHA256 else "other"


def intervention_data(iv: Intervention) -> dict[str, Any]:
    """The intervention as the plain data prompts/cte.py renders."""
    return {
        "source_edit": iv.is_source_edit,
        "description": iv.description,
        "line_number": iv.line_number,
        "original_span": iv.original_span,
        "modified_span": iv.modified_span,
        "path": list(iv.path or ()),
        "from_value": iv.from_value,
        "to_value": iv.to_value,
    }
