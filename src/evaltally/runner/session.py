"""One `tally run` / `tally resume` session: plan first, then drive what remains.

config -> plan -> ledger(planned) -> pending chains (streamed in batches) -> scheduler ->
outcomes. A run directory keeps a copy of the config it was started with (run_dir.py); resume
reads that copy.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from evaltally.audit import audit_run
from evaltally.benchmarks.enrich import data_sources, parents
from evaltally.benchmarks.registry import load_benchmarks
from evaltally.config import SweepConfig, read_api_keys
from evaltally.config_checks import make_run_dir
from evaltally.ledger import Ledger, PendingChain, PendingCount
from evaltally.plan import iter_plan
from evaltally.run_dir import CONFIG_COPY, keep_config_copy
from evaltally.runner.call import CallExecutor
from evaltally.runner.lane import Lane
from evaltally.runner.progress import ProgressReporter
from evaltally.runner.reused import check_reused
from evaltally.runner.scheduler import BudgetCheck, Scheduler
from evaltally.runner.transport import AiohttpTransport, Transport
from evaltally.runner.units import build_units
from evaltally.runner.verification import Verifier, verify_recorded
from evaltally.runner.workers import WorkerPool


@dataclass
class SessionResult:
    run_dir: Path
    planned: int
    added: int
    counts: dict[str, int] = field(default_factory=dict)
    lanes: dict[str, Lane] = field(default_factory=dict)
    """Model key -> the lane of its endpoint (models reaching one endpoint share it)."""
    verified: dict[str, int] = field(default_factory=dict)
    """Verdicts recorded this session, by status."""
    interrupted_attempts: int = 0
    mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return all(
            lane.stats.failed == 0 and lane.stats.blocked == 0 for lane in self.lanes.values()
        )

    @property
    def endpoint_lanes(self) -> dict[str, Lane]:
        """Each lane once, by its name."""
        return {lane.name: lane for lane in self.lanes.values()}


async def run_session(
    config: SweepConfig,
    *,
    command: str,
    transport: Transport | None = None,
    env: Mapping[str, str] | None = None,
    progress: TextIO | None = None,
    budget_usd: float | None = None,
) -> SessionResult:
    """Plan, record the plan, and drive every pending call to an outcome."""
    keys = read_api_keys(config, env)
    benchmarks = load_benchmarks(config)
    units = build_units(config, keys)
    # Before the run directory exists: a fork whose parent changed leaves nothing behind.
    check_reused(benchmarks)
    run_dir = make_run_dir(config)
    if not (run_dir / CONFIG_COPY).exists():
        # Written before the ledger exists, so a run killed while planning can be resumed.
        keep_config_copy(config, run_dir)
    ledger = await Ledger.open(run_dir, create=True, command=command)
    own_transport = transport is None
    transport = transport or AiohttpTransport()
    pool = WorkerPool()
    verifier = Verifier(ledger, pool)
    try:
        delta = await ledger.reconcile_plan(iter_plan(config, benchmarks))
        await ledger.set_meta("config", {"path": str(config.path), "text": config.text})
        await ledger.set_meta("data_sources", data_sources(benchmarks))
        lineage = parents(benchmarks)
        if lineage:
            await ledger.set_meta("parents", lineage)
        keep_config_copy(config, run_dir)
        interrupted = await ledger.mark_interrupted()
        counts = await ledger.pending_counts()
        result = SessionResult(run_dir, delta.total, delta.added, interrupted_attempts=interrupted)
        for key, count in counts.items():
            units[key].lane.stats.planned += count.calls
        result.lanes = {key: unit.lane for key, unit in units.items()}
        # The budget covers the whole run, so a resume counts what earlier sessions spent.
        spent_before = sum(a.cost_usd or 0.0 for a in audit_run(run_dir, config))
        lanes = result.endpoint_lanes
        budget = _budget_check(lanes, budget_usd or config.budget_usd, spent_before)
        # Answers a killed session recorded but never verified are verified now.
        await verify_recorded(ledger, verifier, benchmarks, unverified_only=True)
        executor = CallExecutor(ledger, transport)
        on_ok = verifier.submit if any(b.verifies for b in benchmarks.values()) else None
        scheduler = Scheduler(ledger, executor, units, benchmarks, budget, on_ok)
        await _drive(scheduler, ledger.pending_batches(), counts, lanes, progress)
        await verifier.drain()
        result.mismatches = scheduler.mismatches
        result.failures = scheduler.failures
        result.verified = dict(verifier.counts)
    finally:
        await verifier.cancel()
        await pool.close()
        if own_transport:
            await transport.close()
        # After Ctrl-C or a crash, attempts that were in flight are closed as interrupted
        # now rather than left open for the next resume to find.
        await ledger.mark_interrupted()
        await ledger.close()
    return result


async def _drive(
    scheduler: Scheduler,
    source: AsyncGenerator[list[PendingChain]],
    counts: Mapping[str, PendingCount],
    lanes: Mapping[str, Lane],
    stream: TextIO | None,
) -> None:
    reporter = ProgressReporter(lanes, stream or sys.stderr)
    task = asyncio.create_task(reporter.run())
    try:
        await scheduler.run(source, counts)
    finally:
        reporter.stop()
        await task


def _budget_check(
    lanes: Mapping[str, Lane], budget: float | None, spent_before: float
) -> BudgetCheck | None:
    if budget is None:
        return None

    def check() -> str | None:
        spent = spent_before + sum(lane.stats.cost_usd for lane in lanes.values())
        if spent >= budget:
            return (
                f"budget of ${budget:.2f} reached (spent ${spent:.2f}); "
                "continue with `tally resume RUN --budget USD`"
            )
        return None

    return check
