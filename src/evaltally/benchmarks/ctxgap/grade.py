"""The CTXGAP report section, from export rows alone (`tally report RUN`, `tally grade EXPORT`).

A chain's two rows (step 0 answered by the observer, step 1 by the judge) make one scored unit
(units.py): the models of the two rows are the binding, the statuses its outcome, the judge's
parsed verdict its score. Each row carries the probe's oracle fields and the run's `analysis`
(views in report order, the gap pair, the variants); the first observer row of each binding
carries the benchmark's `invalid_probes` (docs/ctxgap.md, "Export fields"). Statistics are
stats.analyze per benchmark: observers side by side, then one set of tables per (observer,
judge) pairing and per observer's pooled judgments.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evaltally.errors import DataError
from evaltally.report.section import GradeSettings, Section
from evaltally.report.tables import Table

from . import report
from .data import InvalidProbe
from .stats import POOLED_NOTE, Options, analyze
from .units import Unit, check_units, unit_from_row

PROBE_FIELDS = (
    "probe_id",
    "task_id",
    "checkpoint",
    "category",
    "view",
    "importance",
    "atom_id",
    "probe_index",
)
STEP_ROLES = ("observer", "judge")


class _Benchmark:
    """What the rows of one CTXGAP benchmark (label) say, collected as they arrive."""

    def __init__(self, analysis: dict[str, Any]) -> None:
        self.analysis = analysis
        self.invalid: list[dict[str, Any]] | None = None
        self.halves: dict[str, dict[str, Any]] = {}
        """chain id -> the row of the step seen first, until its other step arrives."""
        self.units: list[tuple[tuple[str, str, int, int, int], str, Unit]] = []
        """(order, where, unit): units are analyzed in data order, whatever the rows' order."""

    def add(self, row: dict[str, Any]) -> None:
        chain = str(row["chain_id"])
        if row["analysis"] != self.analysis:
            raise ValueError(f"chain {chain}: analysis {row['analysis']} differs from earlier rows")
        invalid = row["invalid_probes"]
        if invalid is not None:
            if self.invalid is not None and invalid != self.invalid:
                raise ValueError(f"chain {chain}: invalid_probes differ from an earlier row")
            self.invalid = list(invalid)
        step = row["step"]
        if step not in (0, 1) or row["role"] != STEP_ROLES[step]:
            raise ValueError(f"chain {chain}: step {step!r} answered by role {row['role']!r}")
        other = self.halves.pop(chain, None)
        if other is None:
            self.halves[chain] = row
            return
        observer, judge = (other, row) if step == 1 else (row, other)
        if observer["step"] == judge["step"]:
            raise ValueError(f"chain {chain}: step {step} given twice")
        for f in PROBE_FIELDS:
            if observer[f] != judge[f]:
                raise ValueError(f"chain {chain}: the two steps disagree on {f}")
        both_ok = observer["status"] == judge["status"] == "ok"
        where = f"chain {chain}"
        try:
            unit = unit_from_row(
                where,
                {
                    **{f: observer[f] for f in PROBE_FIELDS if f != "probe_index"},
                    "observer_model": observer["model"],
                    "judge_model": judge["model"],
                    "observer_status": observer["status"],
                    "judge_status": judge["status"],
                    "verdict": judge["parsed"] if both_ok else None,
                    "sample": observer.get("sample", 0),
                },
            )
        except DataError as exc:
            raise ValueError(str(exc)) from None
        index = observer["probe_index"]
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"chain {chain}: probe_index must be an integer")
        views = self.analysis["views"]
        if unit.view not in views:
            raise ValueError(f"chain {chain}: view {unit.view!r} is not among {views}")
        order = (unit.observer_model, unit.judge_model, index, views.index(unit.view), unit.sample)
        self.units.append((order, where, unit))

    def result(self, label: str, settings: GradeSettings) -> dict[str, Any]:
        if self.halves:
            chain = next(iter(self.halves))
            raise DataError(
                f"benchmark {label!r}: chain {chain} has one of its two steps in the export; "
                "grade a whole export"
            )
        if self.invalid is None:
            raise DataError(f"benchmark {label!r}: no row carries invalid_probes")
        gap = self.analysis["gap"]
        opts = Options(
            views=tuple(self.analysis["views"]),
            gap=(gap[0], gap[1]) if gap else None,
            variants=tuple(self.analysis["variants"] or ()),
            resamples=settings.resamples,
            seed=settings.seed,
            level=settings.level,
        )
        try:
            units = check_units((where, u) for _, where, u in sorted(self.units))
            found = analyze(units, opts)
        except DataError as exc:
            raise DataError(f"benchmark {label!r}: {exc}") from None
        return {
            "benchmark": label,
            "analysis": self.analysis,
            "invalid_probes": self.invalid,
            "bindings": found["bindings"],
            "pooled": found["pooled"],
        }


class CtxgapGrader:
    legacy_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.benchmarks: dict[str, _Benchmark] = {}

    def add(self, row: dict[str, Any]) -> None:
        label = str(row["benchmark"])
        bench = self.benchmarks.get(label)
        if bench is None:
            bench = self.benchmarks[label] = _Benchmark(row["analysis"])
        bench.add(row)

    def section(self, settings: GradeSettings) -> Section:
        results = [b.result(label, settings) for label, b in self.benchmarks.items()]
        labelled = len(results) > 1
        tables: list[Table] = []
        for r in results:
            label = r["benchmark"] if labelled else None
            invalid = [
                InvalidProbe(i["probe_id"], i["view"], i["reason"]) for i in r["invalid_probes"]
            ]
            tables += report.tables(r, invalid, label)
        data = {
            "bootstrap": {
                "resamples": settings.resamples,
                "seed": settings.seed,
                "level": settings.level,
                "unit": "task",
            },
            "benchmarks": results,
        }
        intro = (
            "Importance-weighted accuracy of each view, every task weighing the same; every "
            "planned (probe, view) unit is in the denominator (missing, failed and "
            "invalid-verdict units count 0), with coverage and scored-only accuracy beside it. "
            f"Intervals: {settings.level:.0%}, from {settings.resamples:,} paired task-cluster "
            f"bootstrap resamples (seed {settings.seed}). {POOLED_NOTE} The first table puts "
            "the observers side by side; then one set of tables per (observer, judge) pairing "
            "and, for an observer judged more than once per unit (several judge models or "
            "samples), one for all its judgments pooled."
        )
        return Section(intro, tables, data)
