"""The parent of an estimate: a recorded run's CTE free rollouts, which of them are estimated,
and at which points (docs/scae.md, "The replay estimator").

Read only, through the fork machinery: each estimated chain is a `fork.parent.ParentChain`
(its recorded prefix as each step saw it, the requests to re-build byte for byte), one per
estimation point. Only complete chains (every call answered, `ok` or `parse_error`) are
estimated: Y of the recorded trace (v_T) must exist. The chains and the points are fixed here,
before any replay: `all`, the given ids, or a seeded sample of the complete chains of one model;
points = the distinct floor(j * T / k) for j = 0..k-1 (k equidistant points starting at 0), or
the steps given.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaltally.benchmarks.binding import load_benchmarks
from evaltally.benchmarks.cte.benchmark import CteBenchmark
from evaltally.benchmarks.enrich import export_enricher
from evaltally.benchmarks.fork.parent import ParentChain, ParentError
from evaltally.benchmarks.scae.cte_judge import Rollout, rollouts
from evaltally.config.run_dir import load_run_config
from evaltally.errors import LedgerError
from evaltally.ledger import export_rows
from evaltally.ledger.recorded import MIN_PREFIX, read_chain
from evaltally.records import content_hash


def equidistant_points(steps: int, k: int) -> tuple[int, ...]:
    return tuple(sorted({(j * steps) // k for j in range(k)}))


@dataclass(frozen=True)
class EstimatedChain:
    rollout: Rollout
    parent: ParentChain
    """The recorded chain (its `at` is the last point: the prefix the replays reuse most)."""
    points: tuple[int, ...]

    @property
    def steps(self) -> int:
        return len(self.rollout.calls)

    def at(self, point: int) -> ParentChain:
        return dataclasses.replace(self.parent, at=point)

    @property
    def hits(self) -> list[bool]:
        return [c.correct for c in self.rollout.calls]


@dataclass(frozen=True)
class Selection:
    run_dir: Path
    model: str
    chains: list[EstimatedChain]
    counts: dict[str, int]
    """`complete` and `incomplete` chains of the model, and how many were `selected`."""
    digest: str
    """Hash of what the estimate reuses: each chain's id, calls' status, answer and target."""


def _pick_model(found: Sequence[Rollout], model: str | None) -> str:
    models = sorted({r.model for r in found})
    if model is not None:
        if model not in models:
            raise ParentError("model", f"no free rollout answered by {model!r}; models: {models}")
        return model
    if len(models) != 1:
        raise ParentError("model", f"free rollouts of several models {models}; name one")
    return models[0]


def _chosen(ids: list[str], refs: Sequence[str] | None, sample: int | None, seed: int) -> list[str]:
    if refs:
        out = []
        for ref in refs:
            hit = [c for c in ids if c.startswith(ref.strip().lower())]
            if len(ref.strip()) < MIN_PREFIX or len(hit) != 1:
                why = "several" if len(hit) > 1 else "no"
                raise ParentError(
                    "chains",
                    f"{ref!r}: {why} complete free-rollout chain of the model starts with it "
                    f"(give at least {MIN_PREFIX} hex characters of a chain_id)",
                )
            out.append(hit[0])
        return sorted(set(out))
    if sample is not None:
        if sample > len(ids):
            raise ParentError("sample", f"{sample} chains asked, {len(ids)} complete ones exist")
        return sorted(random.Random(seed).sample(ids, sample))
    return ids


def select(
    run_dir: Path,
    *,
    model: str | None,
    chains: Sequence[str] | None,
    sample: int | None,
    seed: int,
    points: int,
    at: Sequence[int] | None,
) -> Selection:
    run_dir = Path(run_dir).resolve()
    try:
        config = load_run_config(run_dir)
    except LedgerError as exc:
        raise ParentError("parent", str(exc)) from None
    benches = load_benchmarks(config)
    cte = {label: b for label, b in benches.items() if isinstance(b, CteBenchmark)}
    if not cte:
        raise ParentError("parent", f"{run_dir}: the run has no CTE-Bench benchmark")
    enrich = export_enricher(config, run_dir, cte)
    found = rollouts(r for r in export_rows(run_dir, enrich=enrich) if r["benchmark"] in cte)
    if not found:
        raise ParentError("parent", f"{run_dir}: the run has no CTE free-rollout chain")
    key = _pick_model(found, model)
    mine = [r for r in found if r.model == key]
    complete = {r.chain_id: r for r in mine if r.complete}
    picked = _chosen(sorted(complete), chains, sample, seed)
    if not picked:
        raise ParentError("chains", f"{run_dir}: no complete free rollout of {key!r}")
    out = []
    for chain_id in picked:
        rollout = complete[chain_id]
        steps = len(rollout.calls)
        pts = tuple(sorted(set(at))) if at else equidistant_points(steps, points)
        if pts[-1] >= steps:
            raise ParentError("at", f"chain {chain_id} has steps 0-{steps - 1}; no point {pts[-1]}")
        recorded = read_chain(run_dir, chain_id)
        parent = ParentChain(run_dir, config, benches[rollout.benchmark], recorded, pts[-1])
        out.append(EstimatedChain(rollout, parent, pts))
    digest = content_hash(
        [[c.rollout.chain_id, [[k.status, k.prediction, k.target] for k in c.rollout.calls]]
         for c in out]
    )  # fmt: skip
    counts = {"complete": len(complete), "incomplete": len(mine) - len(complete)}
    return Selection(run_dir, key, out, {**counts, "selected": len(out)}, digest)
