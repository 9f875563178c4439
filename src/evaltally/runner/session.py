"""One `tally run` / `tally resume` session: plan first, then drive what remains.

config -> plan -> ledger(planned) -> pending chains -> scheduler -> outcomes. A run directory
keeps a copy of the config it was started with; resume reads that copy, so editing the original
file never silently changes a run in progress.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from evaltally.adapters.base import Endpoint, HttpAdapter, OfflineAdapter
from evaltally.benchmarks.registry import load_benchmarks
from evaltally.config import ModelConfig, SweepConfig, load_config, read_api_keys
from evaltally.errors import CredentialError, LedgerError
from evaltally.ledger import Ledger
from evaltally.plan import iter_plan
from evaltally.runner.call import CallExecutor, LaneUnit
from evaltally.runner.lane import Lane
from evaltally.runner.progress import ProgressReporter
from evaltally.runner.scheduler import BudgetCheck, ChainWork, Scheduler
from evaltally.runner.transport import AiohttpTransport, Transport

CONFIG_COPY = "config.toml"


@dataclass
class SessionResult:
    run_dir: Path
    planned: int
    added: int
    counts: dict[str, int] = field(default_factory=dict)
    lanes: dict[str, Lane] = field(default_factory=dict)
    interrupted_attempts: int = 0
    mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return all(
            lane.stats.failed == 0 and lane.stats.blocked == 0 for lane in self.lanes.values()
        )


def load_run_config(run_dir: Path) -> SweepConfig:
    """The config a run was started with, paths resolved as they were at the start."""
    copy = run_dir / CONFIG_COPY
    if not copy.exists():
        raise LedgerError(
            f"{run_dir}: not a run directory (no {CONFIG_COPY}); start with tally run"
        )
    base_file = run_dir / ".config_dir"
    base = Path(base_file.read_text().strip()) if base_file.exists() else run_dir
    config = load_config(copy, base_dir=base)
    # The run directory is wherever the run lives now, even if it was moved.
    return replace(config, path=copy, name=run_dir.name, runs_dir=run_dir.parent)


def build_unit(model: ModelConfig, api_key: str | None, lane: Lane) -> LaneUnit:
    if model.provider == "baseline":
        from evaltally.adapters.baseline import baseline_adapter

        adapter: HttpAdapter | OfflineAdapter = baseline_adapter(model.model)
        return LaneUnit(model=model, lane=lane, adapter=adapter, endpoint=None)
    from evaltally.adapters import http_adapter, resolve_provider

    preset = resolve_provider(model.provider)
    extra = {"reasoning": model.reasoning, "preset": preset.name, **dict(model.extra)}
    endpoint = Endpoint(
        model=model.model,
        base_url=model.base_url,
        api_key=api_key,
        params=model.params,
        extra=extra,
    )
    adapter = http_adapter(model.provider, key_env=model.api_key_env)
    # Building one request up front surfaces missing credentials (Bedrock's AWS variables,
    # region) for every model before anything is planned or sent.
    adapter.build_request(endpoint, [{"role": "user", "content": "credential check"}])
    return LaneUnit(model=model, lane=lane, adapter=adapter, endpoint=endpoint)


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
    units = _build_units(config, keys)
    run_dir = config.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    if not (run_dir / CONFIG_COPY).exists():
        # Written before the ledger exists, so a run killed while planning can be resumed.
        _keep_config_copy(config, run_dir)
    ledger = await Ledger.open(run_dir, create=True, command=command)
    own_transport = transport is None
    transport = transport or AiohttpTransport()
    try:
        delta = await ledger.reconcile_plan(iter_plan(config, benchmarks))
        await ledger.set_meta("config", {"path": str(config.path), "text": config.text})
        _keep_config_copy(config, run_dir)
        await _resume_lanes(ledger, units)
        interrupted = await ledger.mark_interrupted()
        pending = await ledger.pending_chains()
        result = SessionResult(run_dir, delta.total, delta.added, interrupted_attempts=interrupted)
        work = [ChainWork(chain, chain.attempts_so_far) for chain in pending]
        for item in work:
            units[item.chain.calls[0].model].lane.stats.planned += item.remaining
        result.lanes = {key: unit.lane for key, unit in units.items()}
        budget = _budget_check(result.lanes, budget_usd or config.budget_usd, run_dir, config)
        scheduler = Scheduler(ledger, CallExecutor(ledger, transport), units, benchmarks, budget)
        try:
            await _drive(scheduler, work, result.lanes, progress)
        finally:
            await _record_lanes(ledger, units)
        result.mismatches = scheduler.mismatches
        result.failures = scheduler.failures
    finally:
        if own_transport:
            await transport.close()
        # After Ctrl-C or a crash, attempts that were in flight are closed as interrupted
        # now rather than left open for the next resume to find.
        await ledger.mark_interrupted()
        await ledger.close()
    return result


LANE_RATE_KEY = "lane_rate:"
"""Meta key prefix of the rates a lane settled on (one row per lane and session; the latest
row wins), so the next session of the run starts where this one learned the provider's limit."""


async def _resume_lanes(ledger: Ledger, units: Mapping[str, LaneUnit]) -> None:
    meta = await ledger.meta()
    for unit in units.values():
        settled = meta.get(LANE_RATE_KEY + unit.lane.name)
        if isinstance(settled, dict):
            unit.lane.resume_from(settled)


async def _record_lanes(ledger: Ledger, units: Mapping[str, LaneUnit]) -> None:
    for unit in units.values():
        settled = unit.lane.settled()
        if settled is not None:
            await ledger.set_meta(LANE_RATE_KEY + unit.lane.name, settled)


def _build_units(config: SweepConfig, keys: Mapping[str, str]) -> dict[str, LaneUnit]:
    """One lane per model; every model's credential problem is reported together."""
    units: dict[str, LaneUnit] = {}
    problems: list[str] = []
    for m in config.models:
        try:
            units[m.key] = build_unit(m, keys.get(m.key), Lane(m.key, m.limits))
        except CredentialError as exc:
            problems.append(f"  model {m.key!r}: {exc}")
    if problems:
        raise CredentialError("credentials are missing:\n" + "\n".join(problems))
    return units


async def _drive(
    scheduler: Scheduler, work: list[ChainWork], lanes: Mapping[str, Lane], stream: TextIO | None
) -> None:
    reporter = ProgressReporter(lanes, stream or sys.stderr)
    task = asyncio.create_task(reporter.run())
    try:
        await scheduler.run(work)
    finally:
        reporter.stop()
        await task


def _budget_check(
    lanes: Mapping[str, Lane], budget: float | None, run_dir: Path, config: SweepConfig
) -> BudgetCheck | None:
    if budget is None:
        return None
    from evaltally.audit import audit_run

    # The budget covers the whole run, so a resume counts what earlier sessions spent.
    spent_before = sum(a.cost_usd or 0.0 for a in audit_run(run_dir, config))

    def check() -> str | None:
        spent = spent_before + sum(lane.stats.cost_usd for lane in lanes.values())
        if spent >= budget:
            return (
                f"budget of ${budget:.2f} reached (spent ${spent:.2f}); "
                "continue with `tally resume RUN --budget USD`"
            )
        return None

    return check


def _keep_config_copy(config: SweepConfig, run_dir: Path) -> None:
    """Keep the config the run now follows (an extension replaces the copy; the ledger's
    meta keeps the history)."""
    copy = run_dir / CONFIG_COPY
    unchanged = copy.exists() and copy.read_text(encoding="utf-8") == config.text
    if config.path.resolve() != copy.resolve() and not unchanged:
        tmp = copy.with_suffix(".tmp")
        tmp.write_text(config.text, encoding="utf-8")
        tmp.replace(copy)
        (run_dir / ".config_dir").write_text(str(config.path.parent.resolve()))
