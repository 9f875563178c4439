"""What a run's benchmarks add to its export and report.

Export rows (docs/export.md): each row's `benchmark_kind`, its step's `role`, its answer's
`verification` verdict (the benchmark's check, recorded in the ledger's verifications table),
the model's `provider` and requested `reasoning` mode (from the run's config: a regrader can
tell offline predictors and reasoning settings apart without it), whether the answer came after
a later step of its chain had been answered (`answered_after_later_steps`) and the benchmark's
oracle fields. Report: each benchmark's data sources with their SHA-256. Ledger meta: the runs a
benchmark was built from (`parents`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evaltally.benchmarks.base import Benchmark
from evaltally.benchmarks.binding import load_benchmarks
from evaltally.config import SweepConfig
from evaltally.errors import BenchmarkError
from evaltally.ledger import ExportRow
from evaltally.ledger.late_steps import answered_after_later_steps
from evaltally.ledger.verifications import latest_verdicts
from evaltally.records import PlannedCall

CORE = (
    "benchmark_kind",
    "role",
    "verification",
    "provider",
    "reasoning",
    "answered_after_later_steps",
)
_CALL_FIELDS = ("call_id", "chain_id", "step", "model", "benchmark", "item_id", "sample")


def export_enricher(
    config: SweepConfig, run_dir: Path, benchmarks: Mapping[str, Benchmark] | None = None
) -> Callable[[ExportRow], Mapping[str, Any]]:
    """Fields for each export row of a run, from the run's own config and verdicts (and its
    benchmarks, when the caller has them loaded already)."""
    benchmarks = load_benchmarks(config) if benchmarks is None else benchmarks
    verdicts = latest_verdicts(run_dir)
    late = answered_after_later_steps(run_dir)
    models = {m.key: m for m in config.models}

    def enrich(row: ExportRow) -> Mapping[str, Any]:
        bench = benchmarks.get(row["benchmark"])
        if bench is None:
            return {}
        call = PlannedCall(**{f: row[f] for f in (*_CALL_FIELDS, "protocol", "spec")})
        fields = {**bench.export_fields(call), **bench.answer_fields(call, row)}
        clash = sorted(set(fields) & set(CORE))
        if clash:
            raise BenchmarkError(
                f"benchmark {bench.label!r}: export_fields returns {clash}, which the export "
                "sets itself; rename the benchmark's fields"
            )
        verdict = verdicts.get(call.call_id)
        model = models.get(call.model)
        return {
            "benchmark_kind": bench.kind,
            "role": call.role,
            "verification": verdict,
            "provider": model.provider if model else None,
            "reasoning": model.reasoning.mode if model else None,
            "answered_after_later_steps": call.call_id in late,
            **fields,
        }

    return enrich


def data_sources(benchmarks: Mapping[str, Benchmark]) -> dict[str, dict[str, object]]:
    """Benchmark label -> its kind and data files with their SHA-256 (recorded in the ledger's
    meta at plan time; the report shows them)."""
    return {
        label: {
            "kind": bench.kind,
            "files": [
                {"path": d.path, "sha256": d.sha256, **({"hashed": d.hashed} if d.hashed else {})}
                for d in bench.data_sources()
            ],
        }
        for label, bench in benchmarks.items()
    }


def parents(benchmarks: Mapping[str, Benchmark]) -> dict[str, list[dict[str, Any]]]:
    """Benchmark label -> the runs its items were built from (only benchmarks that have any);
    recorded in the ledger's meta under `parents`."""
    found = {label: bench.parents() for label, bench in benchmarks.items()}
    return {label: runs for label, runs in found.items() if runs}
