"""Zero-LLM rules against the full-trace judge, with closed-form chance rates (Table 4).

A rule reads only the episode's per-step provenance and names one step, or none when the
episode has no step of the kind it looks for (an abstention never agrees). Over the episodes
the full-trace judge answered (docs/scae.md, "Zero-LLM rules"):

- agreement = mean 1[rule_i = t_i] (exact same step);
- chance = mean 1/T_i: the exact expected agreement of a rule picking a uniform random step,
  so it carries no Monte Carlo noise; diff = agreement - chance = mean(1[rule_i = t_i] - 1/T_i)
  with its bootstrap interval (significant when the interval excludes 0);
- within-class chance = mean 1[t_i has gold provenance] / g_i: the exact expected agreement of
  a rule picking a uniform random gold-provenance step (0 for an episode with none), which is
  what the best rule should be compared with once the judge's class of choice is explained.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .provenance import StepProvenance
from .rows import JudgeRow
from .stats import excludes_zero, gold_steps, interval_cell

Rule = Callable[[Sequence[StepProvenance]], int | None]


def _first(prov: Sequence[StepProvenance], keep: Callable[[StepProvenance], bool]) -> int | None:
    return next((s for s, p in enumerate(prov, 1) if keep(p)), None)


def _last(prov: Sequence[StepProvenance], keep: Callable[[StepProvenance], bool]) -> int | None:
    return next((s for s in range(len(prov), 0, -1) if keep(prov[s - 1])), None)


def _most_revealing(prov: Sequence[StepProvenance]) -> int | None:
    best = max((p.reveals for p in prov), default=0)
    return _first(prov, lambda p: p.reveals == best) if best else None


#: name -> (label, rule), in the paper's order with the first gold-provenance step added.
RULES: dict[str, tuple[str, Rule]] = {
    "first_revealing": (
        "First step revealing a gold object", lambda p: _first(p, lambda s: s.reveals > 0)),
    "first_operating": (
        "First step operating on a gold object", lambda p: _first(p, lambda s: s.operates)),
    "first_gold": ("First gold-provenance step", lambda p: _first(p, lambda s: s.gold)),
    "last_gold": ("Last gold-provenance step", lambda p: _last(p, lambda s: s.gold)),
    "last_step": ("Last step of the trace (position only)", lambda p: len(p) or None),
    "most_revealing": (
        "Step revealing the most gold objects (earliest on ties)", _most_revealing),
}  # fmt: skip


def rule_agreement(full_rows: Sequence[JudgeRow], *, seed: int, resamples: int) -> dict[str, Any]:
    """Agreement of every rule with the full-trace judge's `ok` rows, plus the chance rates."""
    chance = [1 / r.total_steps for r in full_rows]
    rules: dict[str, dict[str, Any]] = {}
    best = 0.0
    for name, (label, rule) in RULES.items():
        agree = [float(rule(r.provenance) == r.step) for r in full_rows]
        best = max(best, sum(agree) / len(agree) if agree else 0.0)
        diff = interval_cell([a - c for a, c in zip(agree, chance, strict=True)], seed=seed,
                             resamples=resamples)  # fmt: skip
        rules[name] = {
            "label": label,
            "agreement": sum(agree) / len(agree) if agree else None,
            "diff": diff,
            "significant": excludes_zero(diff),
        }
    within = [(1 / len(g)) if r.step in (g := gold_steps(r)) else 0.0 for r in full_rows]
    n = len(full_rows)
    within_chance = sum(within) / n if n else None
    return {
        "n": n,
        "chance": sum(chance) / n if n else None,
        "within_class_chance": within_chance,
        "gold_steps_per_episode": sum(len(gold_steps(r)) for r in full_rows) / n if n else None,
        "best_over_within_class": best / within_chance if within_chance else None,
        "rules": rules,
    }
