"""The hybrid estimate of one chain (the paper's Algorithm 1 and equation 14, at segment
level; docs/scae.md): from the replays of every estimation point, the values, the entropy
probe, the branch of each segment, its contribution and its test.

Points p_0 < ... < p_{k-1} (prefix lengths), p_k = T. Segment j covers calls p_j..p_{j+1}-1.

- v_p: mean Y of the `replay` arm at p (v_T: Y of the recorded trace);
- entropy at p: over the buckets of the answer to call p in the first `probe` replays;
- observational contribution of segment j: v_{p_{j+1}} - v_{p_j}; tested by an exact
  permutation test of the two arms' Y (against the recorded Y, a constant, by the exact
  Wilcoxon signed-rank test, no p below n = 6);
- intervention contribution at p_j: mean Y of the replays that took the recorded action at
  p_j (the recorded bucket) minus mean Y of the `alternative` arm (realised minus substituted,
  so that a negative value means the realised step lowered the expected outcome, as for the
  observational one; the paper's Algorithm 1 line 20 is its negative); exact permutation test;
- the segment takes the observational branch when the probe entropy exceeds tau_H, else the
  intervention branch; both contributions are kept, the branch's is the estimate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaltally.benchmarks.cte.grade import value_match
from evaltally.benchmarks.fork.stats import BucketSpec, ForkAnswer, bucket, entropy

from .outcome import outcome
from .stats import permutation_p, wilcoxon_p

OBSERVATIONAL, INTERVENTION = "observational", "intervention"
_ANSWERED = ("ok", "parse_error")
_ZERO = 1e-12


@dataclass
class Arm:
    """One replay (or alternative) continuation: parent step -> (status, parsed, target)."""

    calls: dict[int, tuple[str, Any, Any]] = field(default_factory=dict)


@dataclass
class ChainRows:
    """Everything the rows of one estimated chain say."""

    info: dict[str, Any]
    recorded: dict[int, tuple[str, Any]] = field(default_factory=dict)
    arms: dict[tuple[int, str, int], Arm] = field(default_factory=dict)


def _hits(arm: Arm, start: int) -> list[bool] | None:
    steps = sorted(arm.calls)
    if steps != list(range(start, start + len(steps))):
        return None
    if any(arm.calls[s][0] not in _ANSWERED for s in steps):
        return None
    return [status == "ok" and value_match(v, t) for status, v, t in (arm.calls[s] for s in steps)]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _variance(values: Sequence[float]) -> float | None:
    m = _mean(values)
    return None if m is None else sum((y - m) ** 2 for y in values) / len(values)


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def estimate_chain(rows: ChainRows, spec: BucketSpec) -> dict[str, Any]:
    info = rows.info
    kind, steps, probe = str(info["outcome"]), int(info["steps"]), int(info["probe"])
    tau_h, m = float(info["tau_h"]), int(info["replays"])
    recorded_hits = [bool(h) for h in info["recorded_hits"]]
    points = [int(p) for p in info["points"]]
    y_recorded = outcome(kind, recorded_hits)
    first_wrong = next((i for i, h in enumerate(recorded_hits, 1) if not h), None)
    per_point = []
    for p in points:
        ys: list[float] = []
        buckets: dict[int, str] = {}
        on_recorded: list[float] = []
        status, parsed = rows.recorded[p]
        recorded_bucket = bucket(ForkAnswer(status, parsed), spec)
        for r in range(m):
            arm = rows.arms.get((p, "replay", r), Arm())
            if p in arm.calls:
                s, v, _ = arm.calls[p]
                buckets[r] = bucket(ForkAnswer(s, v), spec)
            hits = _hits(arm, p)
            if hits is not None and len(hits) == steps - p:
                y = outcome(kind, recorded_hits[:p] + hits)
                ys.append(y)
                if buckets.get(r) == recorded_bucket:
                    on_recorded.append(y)
        alt = info["alternatives"][str(p)]
        alt_hit = alt["name"] == "correct"
        alt_ys: list[float] = []
        if p + 1 == steps:
            alt_ys.append(outcome(kind, [*recorded_hits[:p], alt_hit]))
        for r in range(m):
            hits = _hits(rows.arms.get((p, "alternative", r), Arm()), p + 1)
            if hits is not None and len(hits) == steps - p - 1:
                alt_ys.append(outcome(kind, [*recorded_hits[:p], alt_hit, *hits]))
        probe_counts: dict[str, int] = {}
        for r in range(probe):
            if r in buckets:
                probe_counts[buckets[r]] = probe_counts.get(buckets[r], 0) + 1
        all_counts: dict[str, int] = {}
        for b in buckets.values():
            all_counts[b] = all_counts.get(b, 0) + 1
        h_probe = entropy(list(probe_counts.values())) if probe_counts else None
        per_point.append(
            {
                "at": p,
                "position": p / steps,
                "entropy": h_probe,
                "entropy_all": entropy(list(all_counts.values())) if all_counts else None,
                "buckets": dict(sorted(all_counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                "recorded_bucket": recorded_bucket,
                "branch": (
                    None if h_probe is None else OBSERVATIONAL if h_probe > tau_h else INTERVENTION
                ),
                "v": _mean(ys),
                "replays_scored": len(ys),
                "replay_variance": _variance(ys),
                "ys": ys,
                "on_recorded": on_recorded,
                "alternative": alt["name"],
                "alternative_ys": alt_ys,
            }
        )
    segments = []
    for j, pt in enumerate(per_point):
        end = points[j + 1] if j + 1 < len(points) else steps
        v_end = per_point[j + 1]["v"] if j + 1 < len(points) else y_recorded
        if j + 1 < len(points):
            p_obs = permutation_p(per_point[j + 1]["ys"], pt["ys"])
        else:
            p_obs = wilcoxon_p([y_recorded - y for y in pt["ys"]])
        obs = _diff(v_end, pt["v"])
        inter = _diff(_mean(pt["on_recorded"]), _mean(pt["alternative_ys"]))
        p_int = permutation_p(pt["on_recorded"], pt["alternative_ys"])
        chosen = pt["branch"]
        segments.append(
            {
                "index": j,
                "from": pt["at"],
                "to": end,
                "branch": chosen,
                "v_from": pt["v"],
                "v_to": v_end,
                "observational": obs,
                "p_observational": p_obs,
                "intervention": inter,
                "p_intervention": p_int,
                "delta": obs if chosen == OBSERVATIONAL else inter if chosen else None,
                "p": p_obs if chosen == OBSERVATIONAL else p_int if chosen else None,
            }
        )
    return _chain_summary(info, per_point, segments, y_recorded, first_wrong)


def _chain_summary(
    info: Mapping[str, Any],
    points: list[dict[str, Any]],
    segments: list[dict[str, Any]],
    y_recorded: float,
    first_wrong: int | None,
) -> dict[str, Any]:
    v_first = points[0]["v"]
    obs = [s["observational"] for s in segments]
    hybrid = [s["delta"] for s in segments]
    residual = None
    if v_first is not None and all(d is not None for d in obs):
        residual = sum(obs) - (y_recorded - v_first)
    hybrid_residual = None
    if v_first is not None and all(d is not None for d in hybrid):
        hybrid_residual = sum(hybrid) - (y_recorded - v_first)
    defined = [d for d in hybrid if d is not None]
    return {
        "parent_chain": info["parent_chain"],
        "scenario_id": info.get("scenario_id"),
        "steps": info["steps"],
        "y_recorded": y_recorded,
        "v_first": v_first,
        "first_wrong": first_wrong,
        "telescoping_residual": residual,
        "hybrid_residual": hybrid_residual,
        "degenerate": bool(defined) and len(defined) == len(hybrid)
        and all(abs(d) < _ZERO for d in defined),
        "blame": blame(segments, first_wrong),
        "points": [{k: v for k, v in p.items() if k not in ("ys", "on_recorded")} for p in points],
        "segments": segments,
    }  # fmt: skip


def blame(segments: Sequence[Mapping[str, Any]], first_wrong: int | None) -> dict[str, Any]:
    """Where the largest negative contribution falls relative to the certified first wrong
    call (1-based), in segments: exact, within one segment, signed distance (chosen minus
    reference)."""
    if first_wrong is None:
        return {"scored": False, "why": "every call is a value match"}
    holding = next((s["index"] for s in segments if s["from"] <= first_wrong - 1 < s["to"]), None)
    if holding is None:
        return {"scored": False, "why": "the first wrong call precedes the first point"}
    negative = [s for s in segments if s["delta"] is not None and s["delta"] < -_ZERO]
    if not negative:
        return {"scored": False, "why": "no negative contribution", "reference": holding}
    # Tied minima (a deterministic model's contributions often tie): the closed-form
    # expectation over a uniform tie-break, never one arbitrary pick (the paper's B.5).
    low = min(s["delta"] for s in negative)
    tied = [s["index"] - holding for s in negative if s["delta"] <= low + _ZERO]
    return {
        "scored": True,
        "reference": holding,
        "chosen": [d + holding for d in tied],
        "exact": sum(d == 0 for d in tied) / len(tied),
        "within_one": sum(abs(d) <= 1 for d in tied) / len(tied),
        "signed": sum(tied) / len(tied),
        "chance_exact": 1 / len(segments),
    }
