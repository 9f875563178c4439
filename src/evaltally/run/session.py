"""One `tally run` / `tally resume` session: open the run (run/open.py), then drive what
remains.

config -> plan -> ledger(planned) -> pending chains (streamed in batches) -> scheduler ->
outcomes (batch-mode models: rounds of provider batches, docs/batch.md). A run directory
keeps a copy of the config it was started with (config/run_dir.py); resume reads that copy. The
copy is written right after the ledger is created, so a config copy beside a missing or empty
ledger means the ledger was lost.

Every way out of a session (success, Ctrl-C, SIGTERM, a failed ledger write, a bug) closes the
attempts in flight as interrupted where the ledger can still record, and closes the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from evaltally.config import SweepConfig
from evaltally.errors import RunTerminated
from evaltally.ledger import Ledger, PendingChain, PendingCount
from evaltally.ledger.status import LANE_RATE_PREFIX
from evaltally.run.open import open_run, record_plan
from evaltally.runner import clock as clk
from evaltally.runner.batch import BatchBudget, BatchDriver
from evaltally.runner.call import CallExecutor
from evaltally.runner.lane import Lane
from evaltally.runner.progress import ProgressReporter
from evaltally.runner.scheduler import BudgetCheck, ChainWork, Scheduler, first_error
from evaltally.runner.transport import AiohttpTransport, Transport
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
    superseded: dict[str, int] = field(default_factory=dict)
    """Model key -> its recorded calls this session superseded (`--replace-model`)."""
    mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    """The first failed calls of the session, one line each (runner/scheduler.KEPT_FAILURES)."""
    failed_calls: int = 0

    @property
    def complete(self) -> bool:
        # done < planned: calls left without an outcome (a batch still open at the provider).
        return all(
            lane.stats.failed == 0
            and lane.stats.blocked == 0
            and lane.stats.done >= lane.stats.planned
            for lane in self.lanes.values()
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
    start_over: bool = False,
    clock: clk.Clock = clk.monotonic,
    sleep: clk.Sleep = clk.sleep,
    replace: frozenset[str] = frozenset(),
) -> SessionResult:
    """Plan, record the plan, and drive every pending call to an outcome.

    `start_over`: the run's ledger was lost (see Ledger.open); begin it again from nothing.
    `clock`/`sleep`: the time the lanes read and the waits of lanes and retries
    (runner/clock.py; a VirtualClock makes every wait instant).
    `replace`: model keys whose recorded calls the changed config supersedes (run/open.py).
    """
    timing = (clock, sleep)
    with _sigterm_cancels() as terminated:
        try:
            return await _session(
                config, command, transport, env, progress, budget_usd, start_over, timing, replace
            )
        except asyncio.CancelledError:
            if not terminated:
                raise
            raise RunTerminated(
                "terminated (SIGTERM); attempts in flight were recorded as interrupted; "
                f"continue with `tally resume {config.run_dir}`"
            ) from None


async def _session(
    config: SweepConfig,
    command: str,
    transport: Transport | None,
    env: Mapping[str, str] | None,
    progress: TextIO | None,
    budget_usd: float | None,
    start_over: bool,
    timing: tuple[clk.Clock, clk.Sleep],
    replace: frozenset[str],
) -> SessionResult:
    run = await open_run(config, command, env, start_over, *timing, replace=replace)
    run_dir, ledger, benchmarks, units = run.run_dir, run.ledger, run.benchmarks, run.units
    own_transport = transport is None
    transport = transport or AiohttpTransport()
    pool = WorkerPool()
    verifier = Verifier(ledger, pool)
    try:
        delta, interrupted = await record_plan(run)
        counts = await ledger.pending_counts()
        result = SessionResult(run_dir, delta.total, delta.added, interrupted_attempts=interrupted)
        result.superseded = delta.superseded
        for key, count in counts.items():
            units[key].lane.stats.planned += count.calls
        result.lanes = {key: unit.lane for key, unit in units.items()}
        lanes = result.endpoint_lanes
        await _resume_lanes(ledger, lanes)
        limit = budget_usd if budget_usd is not None else config.budget_usd
        spent = _spent(lanes, _spent_before(run_dir, config) if limit is not None else 0.0)
        budget = _budget_check(limit, spent)
        # Answers a killed session recorded but never verified are verified now.
        await verify_recorded(ledger, verifier, benchmarks, unverified_only=True)
        executor = CallExecutor(ledger, transport, timing[1])
        on_ok = verifier.submit if any(b.verifies for b in benchmarks.values()) else None
        scheduler = Scheduler(ledger, executor, units, benchmarks, budget, on_ok)
        batch_budget = BatchBudget(limit, spent) if limit is not None else None
        batches = BatchDriver(scheduler, transport, batch_budget)
        batched = {key for key, unit in units.items() if unit.model.mode == "batch"}
        # Rounds span all of a batch-mode model's chains, so those are read at once; the rest
        # stream in bounded batches.
        batch_work = [
            ChainWork(chain, chain.attempts_so_far)
            for chain in (await ledger.pending_chains() if batched else [])
            if chain.calls[0].model in batched
        ]
        sync_counts = {key: count for key, count in counts.items() if key not in batched}
        source = _without(ledger.pending_batches(), batched)
        try:
            await _drive(
                scheduler,
                batches,
                (source, sync_counts),
                batch_work,
                ProgressReporter(lanes, progress or sys.stderr, config.run_dir),
            )
        finally:
            await _record_lanes(ledger, lanes)
        await verifier.drain()
        result.mismatches = scheduler.mismatches
        result.failures = scheduler.failures
        result.failed_calls = scheduler.failed_calls
        result.verified = dict(verifier.counts)
    except BaseExceptionGroup as group:
        # Workers fail together (a failed ledger write reaches every one of them): report the
        # cause once, preferring an error the user can act on.
        cause = first_error(group)
        if cause is group:
            raise
        raise cause from group
    finally:
        try:
            await verifier.cancel()
            await pool.close()
        finally:
            await _finish(ledger, transport if own_transport else None)
    return result


@contextlib.contextmanager
def _sigterm_cancels() -> Iterator[list[bool]]:
    """SIGTERM (containers, schedulers, `timeout`) stops the session the way Ctrl-C does: the
    running task is cancelled, so every finally block closes attempts and the ledger. The
    yielded list becomes non-empty once SIGTERM arrived."""
    terminated: list[bool] = []
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm() -> None:
        # Once only: a second SIGTERM must not cancel the clean-up that closes the ledger.
        if not terminated and task is not None:
            terminated.append(True)
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread's loop
        installed = False
    try:
        yield terminated
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


async def _finish(ledger: Ledger, transport: Transport | None) -> None:
    """Close what the session opened, whatever ended it. The ledger is closed last and always:
    its worker thread would otherwise keep the process alive after the error is printed."""
    try:
        if transport is not None:
            await transport.close()
        if ledger.healthy and ledger.open_attempts:
            # After Ctrl-C, SIGTERM or a crash, attempts that were in flight are closed as
            # interrupted now rather than left open for the next resume to find. (A session
            # that finished every attempt it started skips the search: with its flush it took
            # 26-65 ms past the last answer of a 2,000-call run at 0 ms.)
            await ledger.mark_interrupted()
    finally:
        await ledger.close()


Stream = tuple[AsyncGenerator[list[PendingChain]], Mapping[str, PendingCount]]
"""The synchronous chains as the scheduler reads them: batches of pending chains, and what
remains per model (sizes each lane's slots before the chains arrive)."""


async def _without(
    source: AsyncGenerator[list[PendingChain]], batched: set[str]
) -> AsyncGenerator[list[PendingChain]]:
    """The stream less the chains a batch-mode model answers (the chain's first step's model)."""
    try:
        async for batch in source:
            kept = [chain for chain in batch if chain.calls[0].model not in batched]
            if kept:
                yield kept
    finally:
        await source.aclose()


async def _drive(
    scheduler: Scheduler,
    batches: BatchDriver,
    sync: Stream,
    batch_work: list[ChainWork],
    reporter: ProgressReporter,
) -> None:
    """Synchronous lanes and batch-mode models (docs/batch.md) side by side."""
    task = asyncio.create_task(reporter.run())
    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(scheduler.run(*sync))
            group.create_task(batches.run(batch_work))
    finally:
        reporter.stop()
        await task


LANE_RATE_KEY = LANE_RATE_PREFIX
"""The rates a lane settled on, so the next session of the run starts where this one learned
the provider's limit."""


async def _resume_lanes(ledger: Ledger, lanes: Mapping[str, Lane]) -> None:
    meta = await ledger.meta()
    for lane in lanes.values():
        settled = meta.get(LANE_RATE_KEY + lane.name)
        if isinstance(settled, dict):
            lane.resume_from(settled)


async def _record_lanes(ledger: Ledger, lanes: Mapping[str, Lane]) -> None:
    for lane in lanes.values():
        settled = lane.settled()
        if settled is not None:
            await ledger.set_meta(LANE_RATE_KEY + lane.name, settled)


def _spent_before(run_dir: Path, config: SweepConfig) -> float:
    """What earlier sessions of the run spent: the budget covers the whole run. Read only when
    there is a budget (it reads every outcome's usage)."""
    from evaltally.ledger.audit import audit_run

    return sum(a.cost_usd or 0.0 for a in audit_run(run_dir, config))


def _spent(lanes: Mapping[str, Lane], spent_before: float) -> Callable[[], float]:
    """The whole run's priced spend: earlier sessions' plus this session's lanes'."""
    return lambda: spent_before + sum(lane.stats.cost_usd for lane in lanes.values())


def _budget_check(budget: float | None, spent_now: Callable[[], float]) -> BudgetCheck | None:
    if budget is None:
        return None

    def check() -> str | None:
        spent = spent_now()
        if spent >= budget:
            return (
                f"budget of ${budget:.2f} reached (spent ${spent:.2f}); "
                "continue with `tally resume RUN --budget USD`"
            )
        return None

    return check
