"""CTE-Bench as a runnable benchmark: scenarios -> chains of scored calls -> prompts.

Protocols (docs/cte-protocols.md), one request per scored call (the first 40 future calls):
- answers_revealed: independent calls; history = last 20 of observed + earlier scored calls
  with their true counterfactual responses.
- no_feedback: independent calls; history = every observed call, never a scored one.
- free_rollout: one chain of 40 calls per scenario; history = last 20 of observed + earlier
  scored calls carrying the model's own parsed predictions.
Independent calls are chains of length one; their chain identity includes the future index
(through `item_hash`), so the 40 calls of a scenario get 40 distinct chains.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from evaltally.benchmarks.base import Benchmark, ChainTemplate, ParseResult, StepAnswer
from evaltally.benchmarks.cte.records import Scenario, json_equal, load_scenarios
from evaltally.benchmarks.cte.stats import resolve_data
from evaltally.config import BenchmarkConfig
from evaltally.errors import ConfigError, DataError
from evaltally.prompts import cte as prompts
from evaltally.prompts.cte_parse import parse_answer
from evaltally.records import Message, PlannedCall, Status, content_hash

# Bound on cached free-rollout history lines (about 200 bytes each).
PREDICTION_CACHE_SIZE = 200_000

PROTOCOLS = ("answers_revealed", "no_feedback", "free_rollout")
WINDOW = 20
OPTIONS = ("data", "protocols", "limit", "services", "kinds")


class CteBenchmark(Benchmark):
    kind = "cte"

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        opts = dict(config.options)
        unknown = sorted(set(opts) - set(OPTIONS))
        if unknown:
            self._fail(unknown[0], f"unknown key; valid keys here: {', '.join(OPTIONS)}")
        self.protocols = self._protocols(opts.get("protocols", list(PROTOCOLS)))
        limit = opts.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            self._fail("limit", "must be a positive integer")
        if limit is not None and limit <= 0:
            self._fail("limit", f"must be > 0, got {limit}")
        services = self._names("services", opts.get("services"))
        kinds = self._names("kinds", opts.get("kinds"))
        data = opts.get("data", "builtin")
        if not isinstance(data, str) or not data:
            self._fail("data", "must be 'builtin' or a path to a .jsonl/.jsonl.gz scenario file")
        self.data_path = self._data_path(data)
        try:
            scenarios = load_scenarios(self.data_path)
        except DataError as exc:
            # name the config key too: the usual cause is a path that was never fetched
            reason = str(exc)
            if not self.data_path.exists():
                folder = self.data_path.parent
                reason += f"; for Core-v1, `tally cte fetch -o {folder}` writes it there"
            raise ConfigError(config.source, f"benchmarks[{config.index}].data", reason) from exc
        picked = [
            s
            for s in scenarios
            if (services is None or s.domain in services) and (kinds is None or s.kind in kinds)
        ]
        if limit is not None:
            picked = picked[:limit]
        if not picked:
            self._fail("services", "no scenario left after the services/kinds filters")
        self.scenarios: dict[str, Scenario] = {s.item_id: s for s in picked}
        self._hashes = {s.item_id: content_hash(s.raw, 32) for s in picked}
        # Formatting JSON dominates rendering; each scenario's true lines are made once.
        self._lines: dict[str, tuple[list[str], list[str]]] = {}
        # A free rollout re-shows each earlier prediction in up to 20 later prompts; a
        # prediction's line depends only on the call and the answer text, so it is made once.
        self._predicted: dict[tuple[str, int, Status, str | None], str] = {}

    # -- options ---------------------------------------------------------------------------

    def _fail(self, key: str, reason: str) -> None:
        raise ConfigError(self.config.source, f"benchmarks[{self.config.index}].{key}", reason)

    def _protocols(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
            self._fail("protocols", f"must be a non-empty list of: {', '.join(PROTOCOLS)}")
        bad = [p for p in value if p not in PROTOCOLS]
        if bad:
            self._fail("protocols", f"unknown protocol {bad[0]!r}; valid: {', '.join(PROTOCOLS)}")
        if len(set(value)) != len(value):
            self._fail("protocols", "lists a protocol twice")
        return tuple(value)

    def _names(self, key: str, value: Any) -> frozenset[str] | None:
        if value is None:
            return None
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            self._fail(key, "must be a non-empty list of strings")
        return frozenset(value)

    def _data_path(self, data: str) -> Path:
        if data == "builtin":
            return resolve_data("builtin")
        path = Path(data).expanduser()
        return path if path.is_absolute() else self.config.base_dir / path

    # -- plan ------------------------------------------------------------------------------

    def chains(self) -> Iterator[ChainTemplate]:
        for protocol in self.protocols:
            for sid, scenario in self.scenarios.items():
                n = len(scenario.scored)
                if protocol == "free_rollout":
                    yield ChainTemplate(
                        sid, self._hashes[sid], protocol, tuple(self._spec(i) for i in range(n))
                    )
                    continue
                for i in range(n):
                    item_hash = content_hash([self._hashes[sid], i], 32)
                    yield ChainTemplate(sid, item_hash, protocol, (self._spec(i),))

    @staticmethod
    def _spec(future_index: int) -> dict[str, Any]:
        return {"future_index": future_index, "prompt_version": prompts.PROMPT_VERSION}

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
            return self._messages(scenario, i, shown, windowed=True)
        future = self._true_future(scenario, i, call.protocol)
        return self._messages(scenario, i, future, windowed=call.protocol != "no_feedback")

    def _prediction_line(self, scenario: Scenario, j: int, answer: StepAnswer) -> str:
        key = (scenario.item_id, j, answer.status, answer.raw_text)
        line = self._predicted.get(key)
        if line is None:
            if len(self._predicted) >= PREDICTION_CACHE_SIZE:
                self._predicted.clear()
            line = self._predicted[key] = _prediction_line(scenario, j, answer)
        return line

    def estimate_messages(self, call: PlannedCall) -> list[Message]:
        # Before anything ran there are no predictions; true responses have the same shape.
        scenario, i = self._scenario(call)
        protocol = "answers_revealed" if call.protocol == "free_rollout" else call.protocol
        future = self._true_future(scenario, i, protocol)
        return self._messages(scenario, i, future, windowed=protocol != "no_feedback")

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

    def _messages(
        self, scenario: Scenario, i: int, future: list[str], *, windowed: bool
    ) -> list[Message]:
        history = self._true_lines(scenario)[0] + future
        if windowed:  # no_feedback shows every observed call, without a window
            history = history[-WINDOW:]
        request = scenario.scored[i]
        return prompts.render(
            source=scenario.shown_source,
            intervention=scenario.intervention,
            history=history,
            op=request.op,
            args=request.args,
        )

    def parse(self, text: str) -> ParseResult:
        return parse_answer(text)

    # -- oracle side -----------------------------------------------------------------------

    def offline_context(self, call: PlannedCall) -> Mapping[str, Any]:
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
        }


def _prediction_line(scenario: Scenario, j: int, answer: StepAnswer) -> str:
    call = scenario.scored[j]
    ok = answer.status is Status.OK and isinstance(answer.parsed, dict)
    response = answer.parsed if ok else prompts.INVALID_PREDICTION
    return prompts.call_line(call.op, call.args, response, sort_keys=True)
