"""The estimate as a benchmark: replays of recorded CTE free rollouts from fixed estimation
points, and the intervention arms, as planned calls of a new run (docs/scae.md).

At each point p of a chain with T calls (p = the number of recorded calls kept), two arms, each
`replays` chains long, every one planned before anything is sent:

- `replay`: the recorded prefix (calls 0..p-1, as the parent's call p saw them), then calls
  p..T-1 sampled anew; its first request is the parent's own request at p, byte for byte;
- `alternative`: the recorded prefix, the alternative action at p spliced in as the answer to
  call p (`outcome.alternative`; never sent), then calls p+1..T-1 sampled anew (none when
  p = T-1: its Y follows from the prefix and the alternative alone).

Each call is rendered and parsed by the parent's own benchmark, through the fork machinery
(`fork.parent.ParentChain`); the parent's requests up to the last point are re-built byte for
byte before anything is sent. Which branch a point takes is decided when grading, from the
replays' entropy (report.py): both arms exist for every point, so the plan (and its cost)
is known in advance and a resume never depends on what was answered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    ChainTemplate,
    DataSource,
    OptionError,
    ParseResult,
    ReusedRequest,
    StepAnswer,
)
from evaltally.benchmarks.cte.baselines import OFFLINE_PREDICTORS
from evaltally.benchmarks.fork.benchmark import check_bucket
from evaltally.benchmarks.fork.parent import ParentError
from evaltally.config import BenchmarkConfig
from evaltally.errors import DataError
from evaltally.ledger.files import ledger_path
from evaltally.records import JSONValue, Message, PlannedCall, Status, content_hash

from .outcome import OUTCOMES, alternative
from .source import EstimatedChain, Selection, select

REPLAY, ALTERNATIVE = "replay", "alternative"


@dataclass(frozen=True)
class EstimateOptions(BenchmarkOptions):
    parent: str
    """The parent run directory (only read)."""
    model: str | None = None
    """The parent model whose free rollouts are estimated (default: the only one)."""
    chains: tuple[str, ...] | None = None
    """Chain ids (or unique prefixes); default every complete free rollout of the model."""
    sample: int | None = None
    """Estimate a seeded random sample of this many chains instead."""
    seed: int = 0
    points: int = 5
    """Equidistant estimation points per chain (from 0)."""
    at: tuple[int, ...] | None = None
    """The estimation points themselves (0-based steps), instead of `points`."""
    replays: int = 8
    """m: replays per point and arm."""
    probe: int | None = None
    """The first this many replays of a point decide its branch (the entropy probe; default
    min(4, replays))."""
    outcome: str = "share"
    tau_h: float = 0.0
    bucket: str = "value"

    @property
    def probe_replays(self) -> int:
        return min(4, self.replays) if self.probe is None else self.probe

    def check(self) -> None:
        if self.chains is not None and self.sample is not None:
            raise OptionError("sample", "give chains or sample, not both")
        if self.sample is not None and self.sample < 1:
            raise OptionError("sample", f"must be >= 1, got {self.sample}")
        if self.points < 1:
            raise OptionError("points", f"must be >= 1, got {self.points}")
        if self.at is not None and min(self.at) < 0:
            raise OptionError("at", "points are steps >= 0")
        if self.replays < 1:
            raise OptionError("replays", f"must be >= 1, got {self.replays}")
        if not 1 <= self.probe_replays <= self.replays:
            raise OptionError("probe", f"must be 1..replays ({self.replays}), got {self.probe}")
        if self.outcome not in OUTCOMES:
            raise OptionError("outcome", f"one of {', '.join(OUTCOMES)}, got {self.outcome!r}")
        check_bucket(self.bucket)


class EstimateBenchmark(Benchmark):
    kind = "scae_estimate"
    Options = EstimateOptions
    predictors = OFFLINE_PREDICTORS

    def __init__(self, config: BenchmarkConfig) -> None:
        super().__init__(config)
        o: EstimateOptions = self.options
        try:
            self.selection: Selection = select(
                self.path(o.parent), model=o.model, chains=o.chains, sample=o.sample,
                seed=o.seed, points=o.points, at=o.at,
            )  # fmt: skip
        except ParentError as exc:
            raise self.fail(exc.key, str(exc)) from exc
        self._chains = {c.rollout.chain_id: c for c in self.selection.chains}
        first = self.selection.chains[0].parent.bench
        self.on_failed_step = first.on_failed_step
        self._prefixes: dict[tuple[str, int], list[StepAnswer]] = {}

    def _alternative(self, chain: EstimatedChain, at: int) -> tuple[str, Any]:
        bench: Any = chain.parent.bench
        scenario = bench.scenarios[chain.rollout.scenario_id]
        return alternative(scenario, at, chain.hits[at])

    def chains(self) -> Iterator[ChainTemplate]:
        for chain in self.selection.chains:
            calls = chain.parent.calls
            cid = chain.rollout.chain_id
            for at in chain.points:
                arms: list[tuple[str, int, tuple[str, Any] | None]] = [(REPLAY, at, None)]
                if at + 1 < chain.steps:
                    arms.append((ALTERNATIVE, at + 1, self._alternative(chain, at)))
                for arm, start, alt in arms:
                    for r in range(self.options.replays):
                        identity = {"parent_chain": cid, "at": at, "arm": arm, "replay": r,
                                    "alternative": alt}  # fmt: skip
                        steps = tuple(
                            {"parent_chain": cid, "at": at, "arm": arm, "replay": r,
                             "parent_step": c.step, "parent_call": c.call_id}
                            for c in calls[start:]
                        )  # fmt: skip
                        yield ChainTemplate(
                            calls[0].item_id, content_hash(identity, 32), calls[0].protocol, steps
                        )

    def _where(self, call: PlannedCall) -> tuple[EstimatedChain, int, PlannedCall]:
        chain = self._chains.get(str(call.spec["parent_chain"]))
        step = int(call.spec["parent_step"])
        if chain is None or step >= chain.steps:
            raise DataError(f"call {call.call_id}: the parent has no call {dict(call.spec)}")
        parent = chain.parent.calls[step]
        if parent.call_id != call.spec["parent_call"]:
            raise DataError(f"call {call.call_id}: the parent has no call {dict(call.spec)}")
        return chain, int(call.spec["at"]), parent

    def _prefix(self, chain: EstimatedChain, at: int) -> list[StepAnswer]:
        key = (chain.rollout.chain_id, at)
        if key not in self._prefixes:
            self._prefixes[key] = chain.at(at).prefix()
        return self._prefixes[key]

    def _parent_earlier(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[StepAnswer]:
        """What the parent's step sees: the recorded prefix, the spliced alternative (its
        arm), then this replay's own answers renumbered to the parent's steps."""
        chain, at, _ = self._where(call)
        shown = list(self._prefix(chain, at))
        if call.spec["arm"] == ALTERNATIVE:
            _, value = self._alternative(chain, at)
            shown.append(StepAnswer(at, Status.OK, json.dumps(value, ensure_ascii=False), value))
        start = len(shown)
        own = [StepAnswer(start + a.step, a.status, a.raw_text, a.parsed) for a in earlier]
        return [*shown, *own]

    def render(self, call: PlannedCall, earlier: Sequence[StepAnswer]) -> list[Message]:
        chain, _, parent = self._where(call)
        return chain.parent.bench.render(parent, self._parent_earlier(call, earlier))

    def parse(self, call: PlannedCall, text: str) -> ParseResult:
        chain, _, parent = self._where(call)
        return chain.parent.bench.parse(parent, text)

    def offline_context(
        self, call: PlannedCall, earlier: Sequence[StepAnswer]
    ) -> Mapping[str, Any]:
        chain, _, parent = self._where(call)
        return chain.parent.bench.offline_context(parent, self._parent_earlier(call, earlier))

    def export_fields(self, call: PlannedCall) -> Mapping[str, Any]:
        chain, at, parent = self._where(call)
        o: EstimateOptions = self.options
        recorded = chain.rollout.calls[parent.step]
        name, value = self._alternative(chain, at)
        return {
            **chain.parent.bench.export_fields(parent),
            "estimate": {
                "parent_run": str(self.selection.run_dir),
                "parent_chain": chain.rollout.chain_id,
                "parent_model": self.selection.model,
                "at": at,
                "arm": call.spec["arm"],
                "replay": call.spec["replay"],
                "steps": chain.steps,
                "points": list(chain.points),
                "recorded_hits": chain.hits,
                "alternative": {"name": name, "value": value},
                "outcome": o.outcome,
                "tau_h": o.tau_h,
                "probe": o.probe_replays,
                "bucket": o.bucket,
                "replays": o.replays,
                "chains": self.selection.counts,
            },
            "parent_step": parent.step,
            "recorded": {"status": recorded.status, "parsed": recorded.prediction},
        }

    def data_sources(self) -> list[DataSource]:
        what = "the estimated chains' calls (status, answer, target), not the file"
        own = DataSource(str(ledger_path(self.selection.run_dir)), self.selection.digest, what)
        labels = sorted({c.rollout.benchmark for c in self.selection.chains})
        benches = {c.rollout.benchmark: c.parent.bench for c in self.selection.chains}
        return [own, *(s for label in labels for s in benches[label].data_sources())]

    def parents(self) -> list[dict[str, JSONValue]]:
        s = self.selection
        return [
            {
                "run": str(s.run_dir),
                "model": s.model,
                "kind": "cte",
                "chains": [c.rollout.chain_id for c in s.chains],
                "content_sha256": s.digest,
            }
        ]

    def reused_requests(self) -> Sequence[ReusedRequest]:
        return [r for c in self.selection.chains for r in c.parent.reused_requests()]
