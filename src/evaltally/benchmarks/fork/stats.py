"""Fork-resampling statistics: m replays of a recorded chain from step s on (docs/fork.md).

Each replay reuses the recorded prefix (steps before s) and samples steps s, s+1, ... anew; the
parent's own continuation is the `recorded` one. From the answers and final outcomes:

- entropy of the answer at s over buckets (the paper's Eq. 12-13, in nats):
  pi(c) = #{replays whose answer at s falls in bucket c} / m, H = -sum_c pi(c) ln pi(c);
- spread of the final outcome over the replays that have one: mean, population variance
  (1/n sum (y - mean)^2, the replay variance U_exec of the paper), min, max, distinct values;
- reproduction: the share of replays whose whole continuation (every answer from s on, status
  and parsed value, JSON-equal as CTE's value match compares) equals the recorded one, and the
  share whose answer at s falls in the recorded answer's bucket;
- the number of distinct final answers (buckets of the last answer) over the replays that
  reached it: the spread of the outcome for chains whose kind has no numeric outcome.

Buckets (`BucketSpec`): the default `value` is the exact parsed answer (JSON, key order
ignored, 1 and 1.0 alike, true and 1 apart); `tool,target` style specs bucket by the values at
the given dotted key paths of a parsed JSON object (a missing key reads as null, as CTE reads a
state path). An answer
that did not parse is the bucket `<parse_error>` (`<failed>`, ... for calls without answer).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.benchmarks.cte.executor import get_state_path
from evaltally.benchmarks.cte.records import json_equal


@dataclass(frozen=True, slots=True)
class ForkAnswer:
    status: str
    """The ledger status of the call (`ok`, `parse_error`, `failed`, `blocked`, `unfinished`)."""
    parsed: Any = None


@dataclass(frozen=True)
class Continuation:
    """Answers from the fork step on (index 0 is the fork step) and the final outcome (None
    when the continuation did not finish)."""

    answers: tuple[ForkAnswer, ...]
    outcome: float | None


@dataclass(frozen=True)
class BucketSpec:
    """None: the exact parsed value; else the dotted key paths whose values form the bucket."""

    fields: tuple[tuple[str, ...], ...] | None = None

    def describe(self) -> str:
        return "value" if self.fields is None else ",".join(".".join(f) for f in self.fields)


def parse_bucket_spec(text: str) -> BucketSpec:
    """`value`, or comma-separated dotted key paths such as `tool,target` or `error.code`."""
    text = text.strip()
    if text == "value":
        return BucketSpec()
    fields = []
    for part in text.split(","):
        path = tuple(part.strip().split("."))
        if not part.strip() or any(not seg for seg in path):
            raise ValueError(
                f"bucket spec {text!r}: use `value` or comma-separated dotted key paths "
                "(e.g. `tool,target`), each segment non-empty"
            )
        fields.append(path)
    return BucketSpec(tuple(fields))


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    return json.dumps(_canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def bucket(answer: ForkAnswer, spec: BucketSpec) -> str:
    if answer.status != "ok":
        return f"<{answer.status}>"
    if spec.fields is None:
        return canonical_json(answer.parsed)
    parsed = answer.parsed if isinstance(answer.parsed, dict) else {}
    return canonical_json([get_state_path(parsed, f) for f in spec.fields])


def entropy(counts: Sequence[int]) -> float:
    """-sum p ln p over the nonzero counts, in nats."""
    total = sum(counts)
    return -sum((c / total) * math.log(c / total) for c in counts if c) + 0.0


def same_continuation(a: Continuation, b: Continuation) -> bool:
    return len(a.answers) == len(b.answers) and all(
        x.status == y.status and (x.status != "ok" or json_equal(x.parsed, y.parsed))
        for x, y in zip(a.answers, b.answers, strict=True)
    )


def outcome_spread(outcomes: Sequence[float]) -> dict[str, Any]:
    n = len(outcomes)
    if not n:
        return {"n": 0, "mean": None, "variance": None, "min": None, "max": None, "distinct": 0}
    mean = sum(outcomes) / n
    return {
        "n": n,
        "mean": mean,
        "variance": sum((y - mean) ** 2 for y in outcomes) / n,
        "min": min(outcomes),
        "max": max(outcomes),
        "distinct": len(set(outcomes)),
    }


def fork_summary(
    recorded: Continuation, replays: Sequence[Continuation], spec: BucketSpec = BucketSpec()
) -> dict[str, Any]:
    """Entropy at the fork step, outcome spread and reproduction (module docstring)."""
    m = len(replays)
    counts = Counter(bucket(r.answers[0], spec) for r in replays if r.answers)
    recorded_bucket = bucket(recorded.answers[0], spec) if recorded.answers else None
    outcomes = [r.outcome for r in replays if r.outcome is not None]
    same = sum(same_continuation(r, recorded) for r in replays)
    finals = {bucket(r.answers[-1], spec) for r in replays if r.answers}
    return {
        "replays": m,
        "bucket_spec": spec.describe(),
        "buckets": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "entropy": entropy(list(counts.values())) if counts else None,
        "recorded_bucket": recorded_bucket,
        "share_recorded_bucket": counts.get(recorded_bucket or "", 0) / m if m else None,
        "outcome": outcome_spread(outcomes),
        "recorded_outcome": recorded.outcome,
        "final_distinct": len(finals),
        "reproduced": same,
        "share_reproduced": same / m if m else None,
    }
