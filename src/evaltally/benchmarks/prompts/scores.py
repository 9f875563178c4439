"""Accuracy of a `prompts` benchmark's scored calls, per model, from export rows alone.

Per model and benchmark, over the planned scored calls (the last step of each chain):
- accuracy under intention-to-evaluate: the mean score, a call without a score (failed,
  blocked, unfinished) counting 0, an unparsed answer scoring 0;
- coverage: the share of planned scored calls that have a score;
- scored-only accuracy: the mean score of the calls that have one.
Each has a percentile-bootstrap interval over items (an item's value is the mean over its
samples), and with more than one sample per item also one over the (item, sample) calls.
Models of one benchmark are compared on the items both were planned on: the mean paired
difference of their per-item intention-to-evaluate accuracy, with a bootstrap interval drawn
over those items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from evaltally.report.bootstrap import mean_interval, ratio_interval
from evaltally.report.section import GradeSettings


@dataclass
class Scores:
    """The scores of one model on one benchmark: item id -> sample -> score (None: none)."""

    scorer: Mapping[str, Any]
    by_item: dict[str, dict[int, float | None]] = field(default_factory=dict)

    def add(self, item_id: str, sample: int, score: float | None) -> None:
        self.by_item.setdefault(item_id, {})[sample] = score


def _cell(value: float | None, ci: tuple[float | None, float | None]) -> dict[str, Any]:
    return {"value": value, "ci_low": ci[0], "ci_high": ci[1]}


def _ite(scores: Mapping[int, float | None]) -> float:
    return sum(s or 0.0 for s in scores.values()) / len(scores)


def summarise(scores: Scores, settings: GradeSettings) -> dict[str, Any]:
    items = sorted(scores.by_item)
    calls = [s for i in items for _, s in sorted(scores.by_item[i].items())]
    scored = [s for s in calls if s is not None]
    boot: dict[str, Any] = {
        "seed": settings.seed,
        "resamples": settings.resamples,
        "level": settings.level,
    }

    def per_item() -> dict[str, Any]:
        ite = [_ite(scores.by_item[i]) for i in items]
        cover = [
            sum(s is not None for s in scores.by_item[i].values()) / len(scores.by_item[i])
            for i in items
        ]
        nums = [sum(s for s in scores.by_item[i].values() if s is not None) for i in items]
        dens = [float(sum(s is not None for s in scores.by_item[i].values())) for i in items]
        return {
            "accuracy_ite": mean_interval(ite, **boot),
            "coverage": mean_interval(cover, **boot),
            "accuracy_scored": ratio_interval(nums, dens, **boot),
        }

    def per_call() -> dict[str, Any]:
        return {
            "accuracy_ite": mean_interval([s or 0.0 for s in calls], **boot),
            "coverage": mean_interval([float(s is not None) for s in calls], **boot),
            "accuracy_scored": mean_interval(scored, **boot),
        }

    values = {
        "accuracy_ite": sum(scored) / len(calls),
        "coverage": len(scored) / len(calls),
        "accuracy_scored": sum(scored) / len(scored) if scored else None,
    }
    over_items = per_item()
    multi = any(len(v) > 1 for v in scores.by_item.values())
    over_calls = per_call() if multi else None
    return {
        "scorer": dict(scores.scorer),
        "items": len(items),
        "calls": len(calls),
        "scored": len(scored),
        **{k: _cell(v, over_items[k]) for k, v in values.items()},
        "over_samples": (
            {k: _cell(v, over_calls[k]) for k, v in values.items()} if over_calls else None
        ),
    }


def paired(models: Mapping[str, Scores], settings: GradeSettings) -> list[dict[str, Any]]:
    """Every pair of models, on the items both were planned on: A minus B."""
    out = []
    for a, b in combinations(sorted(models), 2):
        common = sorted(set(models[a].by_item) & set(models[b].by_item))
        diffs: Sequence[float] = [
            _ite(models[a].by_item[i]) - _ite(models[b].by_item[i]) for i in common
        ]
        ci = mean_interval(
            diffs, seed=settings.seed, resamples=settings.resamples, level=settings.level
        )
        mean = sum(diffs) / len(diffs) if diffs else None
        out.append({"a": a, "b": b, "items": len(common), **_cell(mean, ci)})
    return out
