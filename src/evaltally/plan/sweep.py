"""Expand a sweep into planned calls with stable, content-derived ids.

binding x benchmark x protocol x item x sample x step, where a binding names the model of each
of the benchmark's roles (a single-role benchmark: one model). The same config and data always
give the same ids; a changed item, model parameter, role binding or protocol gives new ones
(docs/ledger.md, "Call ids"). The plan is produced as a stream so that a million-call sweep
never sits in memory at once.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from evaltally.benchmarks.base import Benchmark, ChainTemplate
from evaltally.benchmarks.binding import Binding, bindings_led_by, role_models
from evaltally.config import SweepConfig
from evaltally.errors import BenchmarkError
from evaltally.records import (
    SUBJECT,
    JSONValue,
    Message,
    PlannedCall,
    PlannedRow,
    canonical_json,
    content_hash,
)
from evaltally.tokens import count_messages

ID_LENGTH = 24


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:ID_LENGTH]


def iter_plan(config: SweepConfig, benchmarks: Mapping[str, Benchmark]) -> Iterator[PlannedCall]:
    """Every planned call of the sweep, chain by chain, steps in order."""
    for steps, prefix, label, item_id, protocol, samples in _bound_templates(config, benchmarks):
        for sample in range(samples):
            chain_id = _digest(f"{prefix}{sample}")
            for step, model, spec, _, suffix in steps:
                yield PlannedCall(
                    _digest(chain_id + suffix),
                    chain_id,
                    step,
                    model,
                    label,
                    item_id,
                    sample,
                    protocol,
                    spec,
                )


def plan_rows(config: SweepConfig, benchmarks: Mapping[str, Benchmark]) -> Iterator[PlannedRow]:
    """The calls of `iter_plan`, in its order, as the ledger stores them: tuples, not
    PlannedCall objects (the ledger's plan write and resume check run over every call)."""
    for steps, prefix, label, item_id, protocol, samples in _bound_templates(config, benchmarks):
        for sample in range(samples):
            chain_id = _digest(f"{prefix}{sample}")
            for step, model, _, spec_json, suffix in steps:
                call_id = _digest(chain_id + suffix)
                yield (call_id, chain_id, step, model, label, protocol, item_id, sample, spec_json)


_Step = tuple[int, str, Mapping[str, JSONValue], str, str]
"""step, model key, spec, spec as stored (canonical JSON), the call id's text after the chain id"""


def _bound_templates(
    config: SweepConfig, benchmarks: Mapping[str, Benchmark]
) -> Iterator[tuple[list[_Step], str, str, str, str, int]]:
    """Each chain template bound to models: (steps, the chain id's text before the sample,
    benchmark label, item id, protocol, samples). What does not depend on the sample is worked
    out once per template: at a million calls the per-call work is most of a plan write."""
    hashes = {m.key: content_hash(m.identity(), 32) for m in config.models}
    for model in config.models:
        for bconf in config.benchmarks:
            bench = benchmarks[bconf.label]
            for binding in bindings_led_by(model, bconf, bench.roles, config.models):
                key = binding_key(binding, hashes)
                by_role = {role: m.key for role, m in binding}
                for template in bench.chains():
                    steps = _steps(by_role, bench, template)
                    item_id, protocol = template.item_id, template.protocol
                    prefix = f"{key}|{bench.label}|{protocol}|{item_id}|{template.item_hash}|"
                    yield steps, prefix, bench.label, item_id, protocol, bconf.samples


def binding_key(binding: Binding, hashes: Mapping[str, str]) -> str:
    """The models part of a chain id. A single-role binding is the model's identity hash
    alone, exactly as before roles existed, so runs planned then still resume."""
    if len(binding) == 1:
        return hashes[binding[0][1].key]
    return ",".join(f"{role}={hashes[model.key]}" for role, model in binding)


def step_spec(
    bench: Benchmark, template: ChainTemplate, step: int
) -> tuple[str, Mapping[str, JSONValue]]:
    """(role, spec as planned) of one step: a role other than subject is recorded in the spec."""
    role = template.role(step, bench.roles[0])
    spec = template.steps[step]
    if role not in bench.roles:
        raise BenchmarkError(
            f"benchmark {bench.label!r}: item {template.item_id!r} step {step} names role "
            f"{role!r}, which the benchmark does not declare (roles: {', '.join(bench.roles)})"
        )
    if "role" in spec:
        raise BenchmarkError(
            f"benchmark {bench.label!r}: item {template.item_id!r} step {step}: the spec key "
            "'role' is reserved for the planner"
        )
    return role, (spec if role == SUBJECT else {**spec, "role": role})


def _steps(by_role: Mapping[str, str], bench: Benchmark, template: ChainTemplate) -> list[_Step]:
    if template.roles and len(template.roles) != len(template.steps):
        raise BenchmarkError(
            f"benchmark {bench.label!r}: item {template.item_id!r} has {len(template.steps)} "
            f"steps but {len(template.roles)} roles"
        )
    steps: list[_Step] = []
    for step in range(len(template.steps)):
        role, spec = step_spec(bench, template, step)
        spec_json = canonical_json(spec).decode()
        steps.append((step, by_role[role], spec, spec_json, f"|{step}|{spec_json if spec else ''}"))
    return steps


@dataclass
class PlanRow:
    calls: int = 0
    chains: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class PlanSummary:
    """What `tally plan` prints: planned calls and token estimates per model and benchmark."""

    rows: dict[tuple[str, str, str, str], PlanRow] = field(default_factory=dict)
    """(model, benchmark, protocol, role) -> counts."""

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


def _estimate(bench: Benchmark, probe: PlannedCall) -> list[Message]:
    try:
        return bench.estimate_messages(probe)
    except Exception as exc:  # a benchmark's bug is named, not shown as a traceback
        raise BenchmarkError(
            f"benchmark {bench.label!r}: item {probe.item_id!r} step {probe.step} could not be "
            f"rendered for the token estimate: {exc!r}"
        ) from exc


def summarize_plan(config: SweepConfig, benchmarks: Mapping[str, Benchmark]) -> PlanSummary:
    """Count calls and estimate tokens without expanding every call: each chain template is
    estimated once per step role and multiplied by the bound models and samples (estimates are
    model-independent). A model bound to one role of a multi-role benchmark is counted once
    per binding it takes part in."""
    summary = PlanSummary()
    for bconf in config.benchmarks:
        bench = benchmarks[bconf.label]
        groups: dict[tuple[str, str], PlanRow] = {}
        estimators: dict[tuple[str, str], TokenEstimator] = defaultdict(TokenEstimator)
        for template in bench.chains():
            for role in dict.fromkeys(
                template.role(s, bench.roles[0]) for s in range(len(template.steps))
            ):
                groups.setdefault((template.protocol, role), PlanRow()).chains += bconf.samples
            for step in range(len(template.steps)):
                role, spec = step_spec(bench, template, step)
                probe = PlannedCall(
                    "", "", step, "", bench.label, template.item_id, 0, template.protocol, spec
                )
                estimators[(template.protocol, role)].add(_estimate(bench, probe))
                groups[(template.protocol, role)].calls += bconf.samples
        for key, estimator in estimators.items():
            groups[key].input_tokens = estimator.tokens * bconf.samples
        bound = role_models(bconf, bench.roles, config.models)
        for (protocol, role), g in groups.items():
            # Each model of this role meets every combination of the other roles' models.
            times = 1
            for other, models in bound.items():
                times *= len(models) if other != role else 1
            for model in bound[role]:
                max_out = model.max_output_tokens
                row = summary.rows.setdefault((model.key, bench.label, protocol, role), PlanRow())
                row.calls += g.calls * times
                row.chains += g.chains * times
                row.input_tokens += g.input_tokens * times
                row.output_tokens += g.calls * times * max_out
    # Model by model, as the sweep is planned (and as `tally plan` always listed it).
    order = {m.key: i for i, m in enumerate(config.models)}
    summary.rows = dict(sorted(summary.rows.items(), key=lambda kv: order[kv[0][0]]))
    return summary
