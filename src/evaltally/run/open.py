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
from evaltally.config.run_dir import (
    CONFIG_COPY,
    STAGED_COPY,
    keep_config_copy,
    load_run_config,
    stage_config_copy,
)
from evaltally.errors import ConfigError, EvaltallyError, PlanMismatchError
from evaltally.ledger import Ledger, PlanDelta
from evaltally.ledger.supersede import REPLACE_OPTION, Replacement
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
    command: str = ""
    replace: frozenset[str] = frozenset()
    """Model keys whose recorded calls the config may replace (`--replace-model`)."""


async def open_run(
    config: SweepConfig,
    command: str,
    env: Mapping[str, str] | None,
    start_over: bool,
    clock: clk.Clock = clk.monotonic,
    sleep: clk.Sleep = clk.sleep,
    replace: frozenset[str] = frozenset(),
) -> OpenRun:
    """Keys, benchmarks and lanes (reading `clock`, waiting with `sleep`), then the run
    directory and its ledger.

    `start_over`: the run's ledger was lost (see Ledger.open); begin it again from nothing.
    `replace`: model keys whose recorded calls a changed config supersedes (docs/ledger.md).
    """
    bind_benchmarks(config)  # the config's own errors first, as when it was loaded
    _check_replace(config, replace)
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
    for unit in units.values():
        unit.fix_hint = _fix_hint(config, run_dir)
    return OpenRun(config, run_dir, ledger, benchmarks, units, started, command, replace)


def _check_replace(config: SweepConfig, replace: frozenset[str]) -> None:
    keys = [m.key for m in config.models]
    for name in sorted(replace):
        if name not in keys:
            raise ConfigError(
                config.path,
                "models",
                f"{REPLACE_OPTION} {name}: the config has no model with key {name!r} "
                f"(models: {', '.join(keys)})",
            )


def _fix_hint(config: SweepConfig, run_dir: Path) -> tuple[str, str]:
    """(the config file to edit, the run directory) as a lane's stop reason names them: the
    user's own file, not the run's copy, which `tally run` would read as a new run."""
    copy = run_dir / CONFIG_COPY
    path = config.path if config.path.resolve() != copy.resolve() else None
    return (str(path) if path else "CONFIG", str(run_dir))


async def record_plan(run: OpenRun) -> tuple[PlanDelta, int]:
    """Keep the config copy, record the plan (extending it where the config grew) and the run's
    meta, and mark attempts an earlier session left open as interrupted (how many: the second
    value)."""
    config, ledger, benchmarks = run.config, run.ledger, run.benchmarks
    if not run.started:
        # Kept before the plan is written, so a run killed while planning can be resumed.
        keep_config_copy(config, run.run_dir)
    else:
        stage_config_copy(config, run.run_dir)
    try:
        delta = await ledger.record_plan(
            lambda: plan_rows(config, benchmarks),
            replace=_replacement(run),
            meta=[("config", {"path": str(config.path), "text": config.text})],
        )
    except PlanMismatchError as exc:
        (run.run_dir / STAGED_COPY).unlink(missing_ok=True)
        raise _naming_changes(exc, run) from None
    await ledger.set_meta("data_sources", data_sources(benchmarks))
    lineage = parents(benchmarks)
    if lineage:
        await ledger.set_meta("parents", lineage)
    keep_config_copy(config, run.run_dir)  # only now: a refused plan leaves the copy as it was
    interrupted = await ledger.mark_interrupted()
    await refuse_open_batches_in_sync_mode(ledger, run.units)
    return delta, interrupted


def _changes(run: OpenRun) -> list[str] | None:
    """What changed since the run's config copy, key by key (None: the copy is unreadable)."""
    try:
        return config_changes(load_run_config(run.run_dir), run.config)
    except EvaltallyError:
        return None


def _replacement(run: OpenRun) -> Replacement | None:
    if not run.replace or not run.started:
        return None
    changes = _changes(run) or []
    return Replacement(run.replace, tuple(changes), run.command)


def _naming_changes(exc: PlanMismatchError, run: OpenRun) -> PlanMismatchError:
    """The refusal, with what changed since the run started named key by key, and the
    `tally run ... --replace-model` that replaces the changed models' calls when only models
    changed."""
    changes = _changes(run)
    if not changes:
        return exc  # the copy is unreadable: the count and examples are all there is
    text = f"{exc} What changed since the run started: {describe_changes(changes)}."
    models = {c[len("models[") : c.index("]")] for c in changes if c.startswith("models[")}
    kept = {m.key for m in run.config.models}
    only_models = all(c.startswith("models[") for c in changes)
    if models and only_models and models <= kept and not models <= run.replace:
        options = " ".join(f"{REPLACE_OPTION} {m}" for m in sorted(models))
        text += (
            " To replace the changed models' calls instead (the old ones stay in the ledger, "
            "superseded) and keep every other model's answers: "
            f"`tally run {run.config.path} {options}`."
        )
    return PlanMismatchError(text)
