"""One `tally run` / `tally resume` session: plan first, then drive what remains.

config -> plan -> ledger(planned) -> pending chains -> scheduler -> outcomes. A run directory
keeps a copy of the config it was started with; resume reads that copy, so editing the original
file never silently changes a run in progress. The copy is written right after the ledger is
created, so a config copy beside a missing or empty ledger means the ledger was lost.

Every way out of a session (success, Ctrl-C, SIGTERM, a failed ledger write, a bug) closes the
attempts in flight as interrupted where the ledger can still record, and closes the ledger.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from evaltally.adapters.base import Endpoint, HttpAdapter, OfflineAdapter
from evaltally.audit import audit_run
from evaltally.benchmarks.registry import load_benchmarks
from evaltally.config import ModelConfig, SweepConfig, load_config, read_api_keys
from evaltally.errors import CredentialError, EvaltallyError, LedgerError, RunTerminated
from evaltally.ledger import Ledger
from evaltally.ledger.files import CONFIG_COPY, CONFIG_DIR_FILE, write_failure
from evaltally.plan import iter_plan
from evaltally.runner.call import CallExecutor, LaneUnit
from evaltally.runner.lane import Lane
from evaltally.runner.progress import ProgressReporter
from evaltally.runner.scheduler import BudgetCheck, ChainWork, Scheduler
from evaltally.runner.transport import AiohttpTransport, Transport


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
    if run_dir.is_file():
        raise LedgerError(
            f"{run_dir} is a file, not a run directory; to start or continue the run a config "
            f"describes, use `tally run {run_dir}`"
        )
    if not copy.exists():
        raise LedgerError(
            f"{run_dir}: not a run directory (no {CONFIG_COPY}); start the run with "
            "`tally run CONFIG`"
        )
    base_file = run_dir / CONFIG_DIR_FILE
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
    start_over: bool = False,
) -> SessionResult:
    """Plan, record the plan, and drive every pending call to an outcome.

    `start_over`: the run's ledger was lost (see Ledger.open); begin it again from nothing.
    """
    with _sigterm_cancels() as terminated:
        try:
            return await _session(config, command, transport, env, progress, budget_usd, start_over)
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
) -> SessionResult:
    keys = read_api_keys(config, env)
    benchmarks = load_benchmarks(config)
    units = _build_units(config, keys)
    run_dir = config.run_dir
    started = (run_dir / CONFIG_COPY).exists()
    ledger = await Ledger.open(
        run_dir, create=True, command=command, started=started, start_over=start_over
    )
    own_transport = transport is None
    transport = transport or AiohttpTransport()
    try:
        if not started:
            # Kept before the plan is written, so a run killed while planning can be resumed.
            _keep_config_copy(config, run_dir)
        delta = await ledger.reconcile_plan(iter_plan(config, benchmarks))
        await ledger.set_meta("config", {"path": str(config.path), "text": config.text})
        _keep_config_copy(config, run_dir)  # only now: a refused plan leaves the copy as it was
        interrupted = await ledger.mark_interrupted()
        pending = await ledger.pending_chains()
        result = SessionResult(run_dir, delta.total, delta.added, interrupted_attempts=interrupted)
        work = [ChainWork(chain, chain.attempts_so_far) for chain in pending]
        for item in work:
            units[item.chain.calls[0].model].lane.stats.planned += item.remaining
        result.lanes = {key: unit.lane for key, unit in units.items()}
        # The budget covers the whole run, so a resume counts what earlier sessions spent.
        spent_before = sum(a.cost_usd or 0.0 for a in audit_run(run_dir, config))
        budget = budget_usd if budget_usd is not None else config.budget_usd
        check = _budget_check(result.lanes, budget, spent_before)
        scheduler = Scheduler(ledger, CallExecutor(ledger, transport), units, benchmarks, check)
        await _drive(scheduler, work, result.lanes, progress)
        result.mismatches = scheduler.mismatches
        result.failures = scheduler.failures
    except BaseExceptionGroup as group:
        raise _first_cause(group) from group
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


def _first_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """Workers fail together (a failed ledger write reaches every one of them); report the
    cause once, preferring an error the user can act on."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        exc = stack.pop(0)
        if isinstance(exc, BaseExceptionGroup):
            stack[:0] = exc.exceptions
        else:
            leaves.append(exc)
    return next((e for e in leaves if isinstance(e, EvaltallyError)), leaves[0])


async def _finish(ledger: Ledger, transport: Transport | None) -> None:
    """Close what the session opened, whatever ended it. The ledger is closed last and always:
    its worker thread would otherwise keep the process alive after the error is printed."""
    try:
        if transport is not None:
            await transport.close()
        if ledger.healthy:
            # After Ctrl-C, SIGTERM or a crash, attempts that were in flight are closed as
            # interrupted now rather than left open for the next resume to find.
            await ledger.mark_interrupted()
    finally:
        await ledger.close()


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


def _keep_config_copy(config: SweepConfig, run_dir: Path) -> None:
    """Keep the config the run now follows (an extension replaces the copy; the ledger's
    meta keeps the history)."""
    copy = run_dir / CONFIG_COPY
    try:
        unchanged = copy.exists() and copy.read_text(encoding="utf-8") == config.text
        if config.path.resolve() != copy.resolve() and not unchanged:
            tmp = copy.with_suffix(".tmp")
            tmp.write_text(config.text, encoding="utf-8")
            tmp.replace(copy)
            (run_dir / CONFIG_DIR_FILE).write_text(str(config.path.parent.resolve()))
    except OSError as exc:
        raise write_failure(exc, copy, "keep the config copy") from exc
