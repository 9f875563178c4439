"""Expand a sweep into planned calls with stable, content-derived ids.

model x benchmark x protocol x item x sample x step. The same config and data always give the
same ids; a changed item, model parameter or protocol gives new ones. The plan is produced as a
stream so that a million-call sweep never sits in memory at once.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from evaltally.benchmarks.base import Benchmark, ChainTemplate
from evaltally.config import ModelConfig, SweepConfig
from evaltally.records import Message, PlannedCall, canonical_json, content_hash
from evaltally.tokens import count_messages

ID_LENGTH = 24


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:ID_LENGTH]


def iter_plan(config: SweepConfig, benchmarks: Mapping[str, Benchmark]) -> Iterator[PlannedCall]:
    """Every planned call of the sweep, chain by chain, steps in order."""
    for model in config.models:
        model_hash = content_hash(model.identity(), 32)
        for bconf in config.benchmarks:
            bench = benchmarks[bconf.label]
            for template in bench.chains():
                for sample in range(bconf.samples):
                    yield from _chain_calls(model, model_hash, bench.label, template, sample)


def _chain_calls(
    model: ModelConfig, model_hash: str, label: str, template: ChainTemplate, sample: int
) -> Iterator[PlannedCall]:
    chain_id = _digest(
        f"{model_hash}|{label}|{template.protocol}|{template.item_id}|{template.item_hash}|{sample}"
    )
    for step, spec in enumerate(template.steps):
        spec_key = canonical_json(spec).decode() if spec else ""
        yield PlannedCall(
            call_id=_digest(f"{chain_id}|{step}|{spec_key}"),
            chain_id=chain_id,
            step=step,
            model=model.key,
            benchmark=label,
            item_id=template.item_id,
            sample=sample,
            protocol=template.protocol,
            spec=spec,
        )


@dataclass
class PlanRow:
    calls: int = 0
    chains: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class PlanSummary:
    """What `tally plan` prints: planned calls and token estimates per model and benchmark."""

    rows: dict[tuple[str, str, str], PlanRow] = field(default_factory=dict)

    @property
    def total_calls(self) -> int:
        return sum(r.calls for r in self.rows.values())


class TokenEstimator:
    """Input-token estimate for many prompts without tokenizing every one.

    Every prompt's characters are counted; a deterministic sample (the first EXACT prompts,
    then one in SAMPLE_EVERY) is tokenized, and the total is characters x the sample's tokens
    per character. Tokenizing all 30,600 CTE prompts of one model took over half a minute;
    the sample keeps `tally plan` interactive and lands within a few percent.
    """

    EXACT = 200
    SAMPLE_EVERY = 25

    def __init__(self) -> None:
        self.seen = 0
        self.chars = 0
        self.sample_chars = 0
        self.sample_tokens = 0

    def add(self, messages: list[Message]) -> None:
        chars = sum(len(m.get("content", "")) for m in messages)
        self.chars += chars
        if self.seen < self.EXACT or self.seen % self.SAMPLE_EVERY == 0:
            self.sample_chars += chars
            self.sample_tokens += count_messages(messages)
        self.seen += 1

    @property
    def tokens(self) -> int:
        if self.sample_chars == 0:
            return self.sample_tokens
        return round(self.chars * self.sample_tokens / self.sample_chars)


def summarize_plan(config: SweepConfig, benchmarks: Mapping[str, Benchmark]) -> PlanSummary:
    """Count calls and estimate tokens without expanding every call: each chain template is
    estimated once and multiplied by models and samples (estimates are model-independent)."""
    summary = PlanSummary()
    groups: dict[tuple[str, str], PlanRow] = {}
    for bconf in config.benchmarks:
        bench = benchmarks[bconf.label]
        estimators: dict[str, TokenEstimator] = defaultdict(TokenEstimator)
        for template in bench.chains():
            group = groups.setdefault((bench.label, template.protocol), PlanRow())
            estimator = estimators[template.protocol]
            for step, spec in enumerate(template.steps):
                probe = PlannedCall(
                    "", "", step, "", bench.label, template.item_id, 0, template.protocol, spec
                )
                estimator.add(bench.estimate_messages(probe))
            group.calls += len(template.steps) * bconf.samples
            group.chains += bconf.samples
        for protocol, estimator in estimators.items():
            groups[(bench.label, protocol)].input_tokens = estimator.tokens * bconf.samples
    for model in config.models:
        max_out = int(model.params.get("max_tokens", 0) or 0)
        for (label, protocol), g in groups.items():
            summary.rows[(model.key, label, protocol)] = PlanRow(
                calls=g.calls,
                chains=g.chains,
                input_tokens=g.input_tokens,
                output_tokens=g.calls * max_out,
            )
    return summary
