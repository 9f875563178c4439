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
from evaltally.records import PlannedCall, canonical_json, content_hash
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


def summarize_plan(config: SweepConfig, benchmarks: Mapping[str, Benchmark]) -> PlanSummary:
    """Count calls and estimate tokens without expanding every call: each chain template is
    estimated once and multiplied by models and samples (estimates are model-independent)."""
    summary = PlanSummary()
    per_template: dict[tuple[str, str], tuple[int, int, int]] = defaultdict(lambda: (0, 0, 0))
    for bconf in config.benchmarks:
        bench = benchmarks[bconf.label]
        for template in bench.chains():
            tokens = 0
            for step, spec in enumerate(template.steps):
                probe = PlannedCall("", "", step, "", bench.label, template.item_id, 0, "", spec)
                tokens += count_messages(bench.estimate_messages(probe))
            calls, chains, toks = per_template[(bench.label, template.protocol)]
            per_template[(bench.label, template.protocol)] = (
                calls + len(template.steps) * bconf.samples,
                chains + bconf.samples,
                toks + tokens * bconf.samples,
            )
    for model in config.models:
        max_out = int(model.params.get("max_tokens", 0) or 0)
        for (label, protocol), (calls, chains, toks) in per_template.items():
            summary.rows[(model.key, label, protocol)] = PlanRow(
                calls=calls, chains=chains, input_tokens=toks, output_tokens=calls * max_out
            )
    return summary
