"""CTE-Bench grading: pure functions over predictions and oracle fields (no I/O).

Input: one ``GradedCall`` per *planned* scored call (intention-to-evaluate: a call without a
usable answer has ``prediction=None`` and counts as wrong everywhere). All rates are fractions
in [0, 1] (reports multiply by 100). Definitions (see docs/cte.md):

- value match (VM): the parsed prediction equals the target as JSON (key order ignored,
  ``True != 1``, ``1 == 1.0``). all-call VM over every planned call; effect-step VM over calls
  whose target differs from the no-intervention response.
- status match: prediction and target are both, or both not, a dict with an ``error`` key.
- field match (the paper's reading): the oracle response is flattened to leaf paths (dict keys
  and list indices; an empty dict or list is itself a leaf); score = oracle leaves that the
  prediction holds with an equal value / |oracle leaves|. Extra predicted fields cost nothing, so
  a correct error code with an extra `message` scores 1. No prediction scores 0.
- field match, union reading (``field_match_union``): the same leaves, equal on both sides /
  |union of both sides' leaf paths|, so a missing and an extra leaf each cost one.
- release reading of value match (``all_call_vm_release``, ``effect_step_vm_release``): the
  release compares decoded JSON with Python equality, where ``true == 1``; ``vm_reading_differs``
  counts the predictions the two readings score differently, so a reader can tell whether the
  difference matters.
- parse-failure rate: answered-but-unparsed calls / planned calls; coverage: answered / planned.
- scored-only: the same rates over answered calls (parse failures still count as wrong).
- free rollout: whole-trace exact match = share of scenarios whose every planned call is a VM;
  first wrong call = 1-based position of the first non-VM call (parse failures and missing
  answers are wrong); its median and mean are over scenarios with at least one wrong call
  (fully correct scenarios are excluded from both, as in the paper; the median of an even count
  is the mean of the two middle values, ``statistics.median``);
  VM over calls 1-10 and 21-40 (future_index 0-9 and 20-39).
- 95% intervals: percentile bootstrap over scenarios. Scenarios are sorted by id;
  ``rng = random.Random(seed)``; for each of ``resamples`` rounds draw ``n`` indices with
  ``rng.randrange(n)``; the metric is recomputed on the resample (skipped when undefined); the
  interval is the 2.5th/97.5th percentile with linear interpolation at ``p * (R - 1)``.
  Breakdowns (by service/kind) resample within the group with a fresh ``Random(seed)``.
- equal-service view: the unweighted mean over services of each service's value.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaltally.report.bootstrap import draw_indices, percentile

from .records import Scenario, is_error, json_equal

RATE_METRICS = (
    "all_call_vm",
    "effect_step_vm",
    "status_match",
    "field_match",
    "field_match_union",
    "all_call_vm_release",
    "effect_step_vm_release",
    "parse_failure_rate",
    "coverage",
    "vm_calls_1_10",
    "vm_calls_21_40",
)
SCENARIO_METRICS = ("whole_trace_exact", "median_first_wrong", "mean_first_wrong")


@dataclass(frozen=True)
class GradedCall:
    """One planned scored call with its oracle fields and the model's (parsed) answer."""

    scenario_id: str
    service: str
    kind: str
    future_index: int  # 0-based position in the scored window
    is_effect_step: bool
    target: Any  # the intervention (counterfactual) response
    no_intervention: Any  # the response without the intervention
    prediction: Any | None  # parsed JSON, or None when there is no usable answer
    parsed_ok: bool
    answered: bool  # the model returned text (parsed or not)


def graded_call(
    scenario: Scenario,
    future_index: int,
    prediction: Any | None,
    *,
    parsed_ok: bool,
    answered: bool,
) -> GradedCall:
    """A ``GradedCall`` for scored call ``future_index`` of ``scenario`` with its oracle fields."""
    target = scenario.scored[future_index].response
    base = scenario.original[future_index].response
    return GradedCall(
        scenario_id=scenario.item_id,
        service=scenario.domain,
        kind=scenario.kind,
        future_index=future_index,
        is_effect_step=not json_equal(target, base),
        target=target,
        no_intervention=base,
        prediction=prediction if parsed_ok else None,
        parsed_ok=parsed_ok,
        answered=answered,
    )


def value_match(prediction: Any | None, target: Any) -> bool:
    """VM: the prediction equals the target as decoded JSON. No prediction never matches."""
    return prediction is not None and json_equal(prediction, target)


def status_match(prediction: Any | None, target: Any) -> bool:
    """Success-vs-error agreement (error codes not compared). No prediction never matches."""
    return prediction is not None and is_error(prediction) == is_error(target)


def flatten(value: Any, prefix: tuple[str | int, ...] = ()) -> dict[tuple[str | int, ...], Any]:
    """Leaf path -> scalar value. Empty dicts/lists are leaves (so ``{}`` is not "no fields")."""
    if isinstance(value, dict) and value:
        out: dict[tuple[str | int, ...], Any] = {}
        for k, v in value.items():
            out.update(flatten(v, (*prefix, str(k))))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, (*prefix, i)))
        return out
    return {prefix: value}


def _matched_leaves(prediction: Any, target: Any) -> tuple[int, int, int]:
    """(leaves equal on both sides, |oracle leaves|, |union of leaf paths|)."""
    p, t = flatten(prediction), flatten(target)
    matched = sum(1 for k in p.keys() & t.keys() if json_equal(p[k], t[k]))
    return matched, len(t), len(p.keys() | t.keys())


def field_match(prediction: Any | None, target: Any) -> float:
    """The paper's reading: oracle leaves the prediction matches / |oracle leaves|."""
    if prediction is None:
        return 0.0
    matched, oracle, _ = _matched_leaves(prediction, target)
    return matched / oracle


def field_match_union(prediction: Any | None, target: Any) -> float:
    """Matched leaves / |union of leaf paths| (a missing or an extra leaf each cost one)."""
    if prediction is None:
        return 0.0
    matched, _, union = _matched_leaves(prediction, target)
    return matched / union


def release_value_match(prediction: Any | None, target: Any) -> bool:
    """The release's reading: Python equality of the decoded JSON (``True == 1``)."""
    return prediction is not None and bool(prediction == target)


#: Per-scenario sums, in this order; every rate is a ratio of sums over scenarios, so a
#: bootstrap resample only has to add vectors. ``a_*`` restrict to answered calls.
_FIELDS = (
    "n", "vm", "sm", "fm", "fmu", "vm_rel", "vm_diff", "parse_fail", "answered", "eff_n",
    "eff_vm", "eff_vm_rel", "n_1_10", "vm_1_10", "n_21_40", "vm_21_40", "a_vm", "a_sm", "a_fm",
    "a_fmu",
    "a_eff_n", "a_eff_vm", "whole", "one",
)  # fmt: skip
_I = {name: i for i, name in enumerate(_FIELDS)}


@dataclass(frozen=True)
class _Agg:
    vec: tuple[float, ...]
    first_wrong: int | None  # 1-based; None when every call is a value match


def _scenario_agg(calls: Sequence[GradedCall]) -> _Agg:
    v = dict.fromkeys(_FIELDS, 0.0)
    first_wrong: int | None = None
    for c in sorted(calls, key=lambda c: c.future_index):
        ok = value_match(c.prediction, c.target)
        sm = status_match(c.prediction, c.target)
        fm = field_match(c.prediction, c.target)
        fmu = field_match_union(c.prediction, c.target)
        rel = release_value_match(c.prediction, c.target)
        v["n"] += 1
        v["vm"] += ok
        v["sm"] += sm
        v["fm"] += fm
        v["fmu"] += fmu
        v["vm_rel"] += rel
        v["vm_diff"] += rel != ok
        v["parse_fail"] += c.answered and not c.parsed_ok
        v["answered"] += c.answered
        if c.is_effect_step:
            v["eff_n"] += 1
            v["eff_vm"] += ok
            v["eff_vm_rel"] += rel
        if c.future_index < 10:
            v["n_1_10"] += 1
            v["vm_1_10"] += ok
        if 20 <= c.future_index < 40:
            v["n_21_40"] += 1
            v["vm_21_40"] += ok
        if c.answered:
            v["a_vm"] += ok
            v["a_sm"] += sm
            v["a_fm"] += fm
            v["a_fmu"] += fmu
            v["a_eff_n"] += c.is_effect_step
            v["a_eff_vm"] += c.is_effect_step and ok
        if not ok and first_wrong is None:
            first_wrong = c.future_index + 1
    v["whole"] = float(v["n"] > 0 and v["vm"] == v["n"])
    v["one"] = 1.0
    return _Agg(tuple(v[f] for f in _FIELDS), first_wrong)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _values(aggs: Sequence[_Agg]) -> dict[str, dict[str, float | None]]:
    """All metric values of a multiset of scenarios."""
    t = [sum(col) for col in zip(*(a.vec for a in aggs), strict=True)] or [0.0] * len(_FIELDS)

    def r(num: str, den: str) -> float | None:
        return _ratio(t[_I[num]], t[_I[den]])

    wrong = [a.first_wrong for a in aggs if a.first_wrong is not None]
    main = {
        "all_call_vm": r("vm", "n"),
        "effect_step_vm": r("eff_vm", "eff_n"),
        "status_match": r("sm", "n"),
        "field_match": r("fm", "n"),
        "field_match_union": r("fmu", "n"),
        "all_call_vm_release": r("vm_rel", "n"),
        "effect_step_vm_release": r("eff_vm_rel", "eff_n"),
        "parse_failure_rate": r("parse_fail", "n"),
        "coverage": r("answered", "n"),
        "vm_calls_1_10": r("vm_1_10", "n_1_10"),
        "vm_calls_21_40": r("vm_21_40", "n_21_40"),
        "whole_trace_exact": r("whole", "one"),
        "median_first_wrong": float(statistics.median(wrong)) if wrong else None,
        "mean_first_wrong": statistics.fmean(wrong) if wrong else None,
    }
    scored_only = {
        "all_call_vm": r("a_vm", "answered"),
        "effect_step_vm": r("a_eff_vm", "a_eff_n"),
        "status_match": r("a_sm", "answered"),
        "field_match": r("a_fm", "answered"),
        "field_match_union": r("a_fmu", "answered"),
        "parse_failure_rate": r("parse_fail", "answered"),
    }
    return {"metrics": main, "scored_only": scored_only}


def _equal_service(
    aggs: Sequence[_Agg], services: Sequence[str], metrics: Mapping[str, float | None]
) -> dict[str, dict[str, float | None]]:
    if len(set(services)) <= 1:
        # One service: its mean is its own value (the common case of every by-service group).
        return {"equal_service": {n: metrics[n] for n in (*RATE_METRICS, "whole_trace_exact")}}
    groups: dict[str, list[_Agg]] = {}
    for a, s in zip(aggs, services, strict=True):
        groups.setdefault(s, []).append(a)
    per = [_values(g)["metrics"] for g in groups.values()]
    out: dict[str, float | None] = {}
    for name in (*RATE_METRICS, "whole_trace_exact"):
        vals = [v for p in per if (v := p[name]) is not None]
        out[name] = sum(vals) / len(vals) if vals else None
    return {"equal_service": out}


Compute = Callable[[Sequence[_Agg], Sequence[str]], dict[str, dict[str, float | None]]]


def _with_intervals(
    aggs: Sequence[_Agg],
    services: Sequence[str],
    compute: Compute,
    seed: int,
    resamples: int,
    level: float,
) -> dict[str, dict[str, dict[str, float | None]]]:
    point = compute(aggs, services)
    draws: dict[tuple[str, str], list[float]] = {}
    rng = random.Random(seed)
    n = len(aggs)
    for _ in range(resamples if n else 0):
        idx = draw_indices(rng, n)
        res = compute([aggs[i] for i in idx], [services[i] for i in idx])
        for section, vals in res.items():
            for name, v in vals.items():
                if v is not None:
                    draws.setdefault((section, name), []).append(v)
    alpha = (1 - level) / 2
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for section, vals in point.items():
        out[section] = {}
        for name, v in vals.items():
            d = sorted(draws.get((section, name), []))
            out[section][name] = {
                "value": v,
                "ci_low": percentile(d, alpha) if d else None,
                "ci_high": percentile(d, 1 - alpha) if d else None,
            }
    return out


def _group_summary(
    by_scenario: Mapping[str, list[GradedCall]], seed: int, resamples: int, level: float
) -> dict[str, Any]:
    ids = sorted(by_scenario)
    aggs = [_scenario_agg(by_scenario[i]) for i in ids]
    services = [by_scenario[i][0].service for i in ids]

    def both(a: Sequence[_Agg], s: Sequence[str]) -> dict[str, dict[str, float | None]]:
        values = _values(a)
        return {**values, **_equal_service(a, s, values["metrics"])}

    out: dict[str, Any] = {
        "n_scenarios": len(ids),
        "n_calls": int(sum(a.vec[_I["n"]] for a in aggs)),
        "n_effect_steps": int(sum(a.vec[_I["eff_n"]] for a in aggs)),
        "vm_reading_differs": int(sum(a.vec[_I["vm_diff"]] for a in aggs)),
    }
    out.update(_with_intervals(aggs, services, both, seed, resamples, level))
    return out


def _by_scenario(calls: Iterable[GradedCall]) -> dict[str, list[GradedCall]]:
    groups: dict[str, list[GradedCall]] = {}
    for c in calls:
        groups.setdefault(c.scenario_id, []).append(c)
    return groups


def summarize(
    calls: Iterable[GradedCall], *, seed: int = 0, resamples: int = 2000, level: float = 0.95
) -> dict[str, Any]:
    """Every metric with its bootstrap interval, overall and ``by_service`` / ``by_kind``.

    Shape: ``{"n_scenarios", "n_calls", "n_effect_steps", "metrics": {name: {"value", "ci_low",
    "ci_high"}}, "scored_only": {...}, "equal_service": {...}, "by_service": {service: {...same
    without equal_service...}}, "by_kind": {...}, "bootstrap": {...}}``. Undefined values
    (empty denominators) are ``None``."""
    groups = _by_scenario(calls)
    out = _group_summary(groups, seed, resamples, level)
    for key, attr in (("by_service", "service"), ("by_kind", "kind")):
        parts: dict[str, dict[str, list[GradedCall]]] = {}
        for sid, cs in groups.items():
            parts.setdefault(getattr(cs[0], attr), {})[sid] = cs
        out[key] = {}
        for name in sorted(parts):
            sub = _group_summary(parts[name], seed, resamples, level)
            sub.pop("equal_service")
            out[key][name] = sub
    out["bootstrap"] = {
        "resamples": resamples,
        "seed": seed,
        "level": level,
        "method": "percentile, scenarios resampled, sorted by id, random.Random(seed)",
    }
    return out
