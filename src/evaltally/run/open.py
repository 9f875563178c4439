"""Opening a run: everything a session needs before its first call is scheduled.

Keys are read, benchmarks loaded and lanes built before the run directory exists, so a bad
config, a missing key or a fork whose parent changed leaves nothing behind. Then the ledger is
opened, the config copy kept and the plan recorded (config/run_dir.py, docs/ledger.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evaltally.benchmarks.base import Benchmark
from evaltally.benchmarks.binding import bind_benchmarks, load_benchmarks
from evaltally.benchmarks.enrich import data_sources, parents
from evaltally.config import SweepConfig, read_api_keys
from evaltally.config.changes import config_changes, describe_changes
from evaltally.config.checks import make_run_dir
from evaltally.config.run_dir import CONFIG_COPY, keep_config_copy, load_run_config
from evaltally.errors import EvaltallyError, PlanMismatchError
from evaltally.ledger import Ledger, PlanDelta
from evaltally.plan import plan_rows
from evaltally.runner import clock as clk
from evaltally.runner.batch import refuse_open_batches_in_sync_mode
from evaltally.runner.call import LaneUnit
from evaltally.runner.reused import check_reused
from evaltally.runner.units import build_units
from evaltally.runner.verification import check_verification


@dataclass
class OpenRun:
    """A run whose ledger is open (the caller closes it, whatever happens next)."""

    config: SweepConfig
    run_dir: Path
    ledger: Ledger
    benchmarks: dict[str, Benchmark]
    units: dict[str, LaneUnit]
    started: bool
    """An earlier session kept the config copy: this one continues the run."""


async def open_run(
    config: SweepConfig,
    command: str,
    env: Mapping[str, str] | None,
    start_over: bool,
    clock: clk.Clock = clk.monotonic,
    sleep: clk.Sleep = clk.sleep,
) -> OpenRun:
    """Keys, benchmarks and lanes (reading `clock`, waiting with `sleep`), then the run
    directory and its ledger.

    `start_over`: the run's ledger was lost (see Ledger.open); begin it again from nothing.
    """
    bind_benchmarks(config)  # the config's own errors first, as when it was loaded
    keys = read_api_keys(config, env)
    benchmarks = load_benchmarks(config)
    units = build_units(config, keys, clock, sleep)
    # Before the run directory exists: a fork whose parent changed leaves nothing behind.
    check_reused(benchmarks)
    check_verification(benchmarks)
    run_dir = make_run_dir(config)
    started = (run_dir / CONFIG_COPY).exists()
    ledger = await Ledger.open(
        run_dir, create=True, command=command, started=started, start_over=start_over
    )
    return OpenRun(config, run_dir, ledger, benchmarks, units, started)


async def record_plan(run: OpenRun) -> tuple[PlanDelta, int]:
    """Keep the config copy, record the plan (extending it where the config grew) and the run's
    meta, and mark attempts an earlier session left open as interrupted (how many: the second
    value)."""
    config, ledger, benchmarks = run.config, run.ledger, run.benchmarks
    if not run.started:
        # Kept before the plan is written, so a run killed while planning can be resumed.
        keep_config_copy(config, run.run_dir)
    try:
        delta = await ledger.record_plan(lambda: plan_rows(config, benchmarks))
    except PlanMismatchError as exc:
        raise _naming_changes(exc, run) from None
    await ledger.set_meta("config", {"path": str(config.path), "text": config.text})
    await ledger.set_meta("data_sources", data_sources(benchmarks))
    lineage = parents(benchmarks)
    if lineage:
        await ledger.set_meta("parents", lineage)
    keep_config_copy(config, run.run_dir)  # only now: a refused plan leaves the copy as it was
    interrupted = await ledger.mark_interrupted()
    await refuse_open_batches_in_sync_mode(ledger, run.units)
    return delta, interrupted


def _naming_changes(exc: PlanMismatchError, run: OpenRun) -> PlanMismatchError:
    """The refusal, with what changed since the run started named key by key."""
    try:
        changes = config_changes(load_run_config(run.run_dir), run.config)
    except EvaltallyError:
        return exc  # the copy is unreadable: the count and examples are all there is
    if not changes:
        return exc
    return PlanMismatchError(
        f"{exc} What changed since the run started: {describe_changes(changes)}."
    )
