"""CTXGAP statistics over scored units (pure; docs/ctxgap.md has every formula).

An *analysis* is a set of views scored on the same probes: the probes planned in every one of
those views (valid in all of them), with category weights counted over exactly those probes,
so all its views share identical weights. Inside an analysis:

- per task t and view v: `A_t(v) = Σ_{i∈t} w_i s_i(v) / Σ_{i∈t} w_i`, intention-to-evaluate
  (a unit that is not `scored` has s = 0 and stays in the sum of weights);
- the primary accuracy gives every task equal weight: `A(v) = mean_t A_t(v)` over the tasks
  with positive weight; pooled accuracy `P(v) = Σ_i w_i s_i(v) / Σ_i w_i` is reported beside it;
- a difference between two views is `A(b) - A(a)` (the gap Δ = A(T) - A(U) with a = U,
  b = T); the difference of pooled accuracies is shown too but is not the gap;
- scored-only accuracy is the same equal-task mean over covered units only; coverage is the
  share of planned units that were covered (answered and judged, or answered empty).

Sub-tables (per checkpoint, per category) keep the analysis' weights and restrict the units.

Repeated judgments (several judge models, or `samples` > 1): a binding's repeated samples of a
unit are pooled into one unit whose score is their mean; per observer, every judgment of every
judge model and sample is pooled the same way into the `pooled` analysis (judge named
"pooled: ..."). Pooling happens inside a unit, so the task-cluster bootstrap resamples tasks
with all their judgments; coverage is the share of covered judgments, scored-only accuracy
uses the mean over covered judgments.
Intervals need at least two weighted tasks (one task resampled is always itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from evaltally.errors import DataError

from .bootstrap import Clusters, Resamples, cell, resample
from .units import OUTCOMES, Unit, pool
from .weights import CategoryWeight, category_weights

#: Fewest weighted tasks for a bootstrap interval.
MIN_TASKS = 2
POOLED_NOTE = (
    "Pooled accuracy weighs each task by its total probe weight; the difference of pooled "
    "accuracies is not the gap, which gives every task equal weight."
)


@dataclass(frozen=True)
class Options:
    views: tuple[str, ...] | None = None
    """Order of views in reports; default: order of first appearance in the units."""
    gap: tuple[str, str] | None = None
    """(U, T): the gap is A(T) - A(U); default the first two views."""
    variants: tuple[str, ...] = ()
    """Report variants compared pairwise on the probes valid in all of them (e.g. U_A, U_B)."""
    resamples: int = 10_000
    seed: int = 0
    level: float = 0.95


def _in_order(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def paired_units(units: Sequence[Unit], views: Sequence[str]) -> list[Unit]:
    """The units of `views` on the probes planned in every one of them."""
    wanted = set(views)
    have: dict[str, set[str]] = {}
    for u in units:
        if u.view in wanted:
            have.setdefault(u.probe_id, set()).add(u.view)
    keep = {p for p, seen in have.items() if seen == wanted}
    return [u for u in units if u.view in wanted and u.probe_id in keep]


def clusters(
    units: Sequence[Unit], views: Sequence[str], weights: dict[str, CategoryWeight]
) -> tuple[Clusters, list[str]]:
    """Per-task sums (tasks sorted by id) and the tasks left out for having no weight."""
    tasks = sorted({u.task_id for u in units})
    row = {t: i for i, t in enumerate(tasks)}
    col = {v: j for j, v in enumerate(views)}
    num = np.zeros((len(tasks), len(views)))
    den = np.zeros(len(tasks))
    for u in units:
        w = weights[u.category].weight
        num[row[u.task_id], col[u.view]] += w * u.score
        if u.view == views[0]:  # paired units: every view has the same probes and weights
            den[row[u.task_id]] += w
    keep = den > 0
    dropped = [t for t, k in zip(tasks, keep, strict=True) if not k]
    kept = tuple(t for t, k in zip(tasks, keep, strict=True) if k)
    return Clusters(kept, tuple(views), num[keep], den[keep]), dropped


def scored_only(units: Sequence[Unit], weights: dict[str, CategoryWeight]) -> float | None:
    """Equal-task accuracy of one view's units over its covered units only."""
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for u in units:
        score = u.covered_score
        if score is not None:
            w = weights[u.category].weight
            num[u.task_id] = num.get(u.task_id, 0.0) + w * score
            den[u.task_id] = den.get(u.task_id, 0.0) + w
    per_task = [num[t] / den[t] for t in den if den[t] > 0]
    return sum(per_task) / len(per_task) if per_task else None


def measure(
    units: Sequence[Unit], views: Sequence[str], weights: dict[str, CategoryWeight], opts: Options
) -> dict[str, Any]:
    """Accuracies of `views` over paired `units` with fixed `weights`, and every pairwise
    difference (later view minus earlier view), each with its bootstrap interval."""
    sums, dropped = clusters(units, views, weights)
    # One task resampled is the same task every time: a zero-width interval would claim a
    # precision the data cannot give, so there is none.
    rs = resample(sums, opts.resamples if len(sums.tasks) >= MIN_TASKS else 0, opts.seed)
    eq = sums.equal_task() if sums.tasks else None
    pool = sums.pooled() if sums.tasks else None
    out: dict[str, Any] = {
        "n_probes": len({u.probe_id for u in units}),
        "n_tasks": len(sums.tasks),
        "tasks_without_weight": dropped,
        "accuracy": {},
        "pooled": {},
        "scored_only": {},
        "coverage": {},
        "outcomes": {},
    }
    for j, v in enumerate(views):
        mine = [u for u in units if u.view == v]
        out["accuracy"][v] = cell(
            None if eq is None else float(eq[j]), rs.equal_task[:, j], opts.level
        )
        out["pooled"][v] = cell(
            None if pool is None else float(pool[j]), rs.pooled[:, j], opts.level
        )
        out["scored_only"][v] = scored_only(mine, weights)
        out["coverage"][v] = sum(u.covered for u in mine) / len(mine) if mine else None
        out["outcomes"][v] = {o: sum(u.outcome_counts()[o] for u in mine) for o in OUTCOMES}
    out["differences"] = [
        _difference(views, a, b, eq, pool, rs, opts) for a, b in combinations(views, 2)
    ]
    return out


def _difference(
    views: Sequence[str], a: str, b: str, eq: Any, pool: Any, rs: Resamples, opts: Options
) -> dict[str, Any]:
    i, j = views.index(a), views.index(b)
    value = None if eq is None else float(eq[j] - eq[i])
    diff = cell(value, rs.equal_task[:, j] - rs.equal_task[:, i], opts.level)
    pooled = None if pool is None else float(pool[j] - pool[i])
    return {"from": a, "to": b, **diff, "pooled_difference": pooled}


def _weights_table(weights: dict[str, CategoryWeight]) -> list[dict[str, Any]]:
    return [
        {
            "category": w.category,
            "n_probes": w.n_probes,
            "n_important_atoms": w.n_important_atoms,
            "weight": w.weight,
        }
        for w in weights.values()
    ]


def analysis(units: Sequence[Unit], views: Sequence[str], opts: Options) -> dict[str, Any]:
    paired = paired_units(units, views)
    weights = category_weights(paired)
    return {
        "views": list(views),
        "weights": _weights_table(weights),
        **measure(paired, views, weights, opts),
    }


def breakdown(
    units: Sequence[Unit], views: Sequence[str], key: str, opts: Options
) -> list[dict[str, Any]]:
    """The analysis of `views` restricted to each value of `key` (checkpoint or category),
    with the whole analysis' weights."""
    paired = paired_units(units, views)
    weights = category_weights(paired)
    out = []
    for value in _in_order([getattr(u, key) for u in paired]):
        subset = [u for u in paired if getattr(u, key) == value]
        out.append({key: value, **measure(subset, views, weights, opts)})
    return out


def _check_views(name: str, wanted: Sequence[str], views: Sequence[str]) -> None:
    for v in wanted:
        if v not in views:
            raise DataError(
                f"{name}: no view {v!r} in the scored units (views: {', '.join(views)})"
            )
    if len(set(wanted)) != len(wanted):
        raise DataError(f"{name}: a view is named twice")


def analyze_binding(units: Sequence[Unit], opts: Options) -> dict[str, Any]:
    """Every table of one (observer model, judge model) binding."""
    seen = _in_order([u.view for u in units])
    first = [v for v in opts.views or () if v in seen]
    views = first + [v for v in seen if v not in first]
    gap = list(opts.gap) if opts.gap else views[:2]
    _check_views("gap", gap, views)
    _check_views("variants", opts.variants, views)
    out: dict[str, Any] = {
        "observer_model": units[0].observer_model,
        "judge_model": units[0].judge_model,
        "views": views,
        "by_view": [analysis(units, (v,), opts) for v in views],
        "gap": None,
        "by_checkpoint": [],
        "by_category": [],
        "variants": None,
    }
    if len(gap) == 2:
        out["gap"] = analysis(units, gap, opts)
        out["by_checkpoint"] = breakdown(units, gap, "checkpoint", opts)
        out["by_category"] = breakdown(units, gap, "category", opts)
    if opts.variants:
        out["variants"] = analysis(units, opts.variants, opts)
    return out


def analyze(units: Sequence[Unit], opts: Options | None = None) -> dict[str, Any]:
    """Every binding's tables, bindings in order of first appearance, and per observer with
    more than one judgment per unit (several judge models or samples) the pooled analysis."""
    opts = opts or Options()
    if len(opts.variants) == 1:
        raise DataError("variants: name at least two views to compare")
    groups: dict[tuple[str, str], list[Unit]] = {}
    for u in units:
        groups.setdefault((u.observer_model, u.judge_model), []).append(u)
    bindings = []
    for (_, judge), group in groups.items():
        # several samples of a unit: their mean is the unit's score (a binding is one judge)
        repeated = len({(u.probe_id, u.view) for u in group}) < len(group)
        bindings.append(analyze_binding(pool(group, judge) if repeated else group, opts))
    pooled = []
    for observer in _in_order([u.observer_model for u in units]):
        mine = [u for u in units if u.observer_model == observer]
        judges = _in_order([u.judge_model for u in mine])
        samples = len({u.sample for u in mine})
        if len(judges) > 1 or samples > 1:
            label = f"pooled: {', '.join(judges)} x {samples} sample(s)"
            pooled.append({**analyze_binding(pool(mine, label), opts), "judges": judges,
                           "samples": samples})  # fmt: skip
    return {
        "bootstrap": {
            "resamples": opts.resamples,
            "seed": opts.seed,
            "level": opts.level,
            "unit": "task",
            "method": "percentile, tasks resampled, numpy default_rng",
        },
        "bindings": bindings,
        "pooled": pooled,
    }
