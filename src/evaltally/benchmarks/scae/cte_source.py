"""Judge items from a recorded CTE-Bench run: its free rollouts, each with the certified first
wrong call (docs/scae.md, "Judges against certified blame").

The run is read, never written: its config copy (for the scenarios), its export rows streamed
from the ledger opened read-only. Which chains are judged, and why the others are not, is
`cte_judge.rollouts` / `reference_counts`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaltally.benchmarks.base import DataSource
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.enrich import export_enricher
from evaltally.config.run_dir import load_run_config
from evaltally.errors import DataError
from evaltally.ledger import export_rows
from evaltally.ledger.files import ledger_path
from evaltally.records import content_hash

from .cte_judge import FIRST_WRONG_RUBRIC, Rollout, reference_counts, rollout_trajectory, rollouts
from .items import CTE_ROLLOUTS, JudgeItem


@dataclass(frozen=True)
class RolloutSource:
    run_dir: Path
    items: list[JudgeItem]
    counts: dict[str, int]
    """`cte_judge.reference_counts` over every free-rollout chain of the run."""
    sha256: str
    """SHA-256 of the canonical JSON of the judged chains' calls (status, prediction, target):
    the ledger file itself keeps growing while its run goes on."""
    data_sources: list[DataSource]


def rollout_source(run_dir: Path, *, limit: int | None = None) -> RolloutSource:
    run_dir = Path(run_dir).resolve()
    config = load_run_config(run_dir)
    cte = {label: b for label, b in load_benchmarks(config).items() if isinstance(b, CteBenchmark)}
    if not cte:
        raise DataError(f"{run_dir}: the run has no CTE-Bench benchmark to take rollouts from")
    enrich = export_enricher(config, run_dir, cte)
    found = rollouts(r for r in export_rows(run_dir, enrich=enrich) if r["benchmark"] in cte)
    counts = reference_counts(found)
    judged = [r for r in found if r.judgeable][:limit]
    if not judged:
        raise DataError(
            f"{run_dir}: no free-rollout chain to judge ({counts['chains']} chains: "
            f"{counts['all_correct']} all correct, {counts['incomplete']} with unanswered "
            "calls; a judged chain has every call answered and one wrong)"
        )
    items = [_item(r, cte[r.benchmark], counts) for r in judged]
    digest = content_hash(
        [[r.chain_id, [[c.status, c.prediction, c.target] for c in r.calls]] for r in judged]
    )
    what = "the judged chains' calls (status, prediction, target), not the file"
    sources = [DataSource(str(ledger_path(run_dir)), digest, what)]
    for label in sorted({r.benchmark for r in judged}):
        sources += cte[label].data_sources()
    return RolloutSource(run_dir, items, counts, digest, sources)


def _item(rollout: Rollout, bench: CteBenchmark, counts: dict[str, int]) -> JudgeItem:
    scenario = bench.scenarios.get(rollout.scenario_id)
    if scenario is None:
        raise DataError(
            f"chain {rollout.chain_id}: scenario {rollout.scenario_id!r} is not in the run's "
            f"data ({bench.data_path})"
        )
    trajectory = rollout_trajectory(rollout, scenario)
    fields: dict[str, Any] = {
        "rollout_model": rollout.model,
        "cte_benchmark": rollout.benchmark,
        "scenario_id": rollout.scenario_id,
        "first_wrong": rollout.first_wrong,
        "rollouts": counts,
    }
    return JudgeItem(
        id=rollout.chain_id,
        trajectory=trajectory,
        rubric=FIRST_WRONG_RUBRIC,
        item_hash=content_hash([dataclasses.asdict(trajectory), rollout.first_wrong], 32),
        source=CTE_ROLLOUTS,
        fields=fields,
    )
