"""What `tally plan` shows for batch-mode models: requests, rounds and batches. Sends nothing.

A chain of n steps needs n rounds (step k is submitted once step k-1 is answered), so a model's
rounds are its longest chain. Each round's requests are cut into batches by the provider's
request and byte limits, using each request's rendered size (its messages as JSON, plus an
allowance for the parameters and the batch line around them). Retried lines add rounds; the
estimate assumes none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from evaltally.benchmarks.base import Benchmark
from evaltally.config import SweepConfig
from evaltally.records import PlannedCall

ENVELOPE_BYTES = 400
"""Per request: parameters, model name and the batch line's own fields."""


@dataclass(frozen=True, slots=True)
class BatchPlan:
    model: str
    requests: int
    rounds: int
    batches: int
    max_requests: int
    max_bytes: int
    first_round: int
    """Requests in round 1 (every independent call and the first step of every chain)."""
    first_round_bytes: int


def plan_batches(config: SweepConfig, benchmarks: Mapping[str, Benchmark]) -> list[BatchPlan]:
    batch_models = [m for m in config.models if m.batch is not None]
    if not batch_models:
        return []
    requests: list[int] = []
    sizes: list[int] = []
    for bconf in config.benchmarks:
        bench = benchmarks[bconf.label]
        for template in bench.chains():
            for step, spec in enumerate(template.steps):
                probe = PlannedCall(
                    "", "", step, "", bench.label, template.item_id, 0, template.protocol, spec
                )
                size = len(orjson.dumps(bench.estimate_messages(probe))) + ENVELOPE_BYTES
                if step == len(requests):
                    requests.append(0)
                    sizes.append(0)
                requests[step] += bconf.samples
                sizes[step] += size * bconf.samples
    plans = []
    for model in batch_models:
        assert model.batch is not None
        cap_n, cap_bytes = model.batch.max_requests, model.batch.max_bytes
        batches = sum(
            max(math.ceil(n / cap_n), math.ceil(b / cap_bytes))
            for n, b in zip(requests, sizes, strict=True)
        )
        plans.append(
            BatchPlan(
                model.key,
                sum(requests),
                len(requests),
                batches,
                cap_n,
                cap_bytes,
                requests[0],
                sizes[0],
            )
        )
    return plans
