"""`tally plan`, `tally run`, `tally resume`: planning a sweep and running it. `run_config` is
also how a benchmark's command starts a run of its own (cli/derived.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from evaltally.cli.options import Budget, ConfigFile, RunDir, StartOver
from evaltally.cli.output import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    command_line,
    err,
    guard,
    labelled,
    out,
    verdict_counts,
)

# The end-of-run summary names at most this many failed calls; the export has them all.
MAX_LISTED_FAILURES = 10


def plan(config: ConfigFile) -> None:
    """Print what a run would do: planned calls and estimated tokens. Sends nothing."""

    def go() -> None:
        from rich.table import Table

        from evaltally.benchmarks.binding import load_benchmarks
        from evaltally.cli.batch import plan_lines
        from evaltally.config import load_config
        from evaltally.config.checks import check_runs_dir
        from evaltally.plan import summarize_plan
        from evaltally.plan.batches import plan_batches
        from evaltally.records import SUBJECT

        cfg = load_config(config)
        check_runs_dir(cfg)
        benchmarks = load_benchmarks(cfg)
        summary = summarize_plan(cfg, benchmarks)
        prices = {m.key: m.price for m in cfg.models}
        table = Table(title=f"plan for {cfg.name} -> {cfg.run_dir}")
        # The role column appears once some step is answered by a role other than subject.
        roles = any(role != SUBJECT for (_, _, _, role) in summary.rows)
        columns = ("model", "benchmark", "protocol", *(("role",) if roles else ()), "chains")
        for col in (*columns, "calls", "input tokens (est.)"):
            table.add_column(col)
        table.add_column("output tokens (max)")
        table.add_column("cost (est.)")
        for (model, bench, protocol, role), row in summary.rows.items():
            price = prices[model]
            cost = "-"
            if price:
                cost = f"${price.usd(row.input_tokens, row.output_tokens):,.2f}"
            table.add_row(
                model,
                bench,
                protocol or "-",
                *((role,) if roles else ()),
                f"{row.chains:,}",
                f"{row.calls:,}",
                f"{row.input_tokens:,}",
                f"{row.output_tokens:,}",
                cost,
            )
        out.print(table)
        for line in plan_lines(plan_batches(cfg, benchmarks)):
            out.print(line, highlight=False, markup=False)
        out.print(f"total planned calls: {summary.total_calls:,} (nothing was sent)")

    guard(go, resumable=True)


def run_config(
    load: Callable[[], Any],
    budget: float | None,
    start_over: bool = False,
    replace: frozenset[str] = frozenset(),
) -> None:
    """Run the sweep `load()` returns (plan, ledger, every pending call), print the summary and
    exit with the documented status. Shared by run, resume and the commands that start a run
    of their own (`tally fork`, `tally scae cte-judge`)."""
    from evaltally.config import check_budget
    from evaltally.run.session import run_session

    opened: list[Any] = []

    def go() -> int:
        limit = check_budget(budget, "command line", "--budget")
        cfg = load()
        opened.append(cfg.run_dir)
        session = run_session(
            cfg, command=command_line(), budget_usd=limit, start_over=start_over, replace=replace
        )
        result = asyncio.run(session)
        listed = result.failures[:MAX_LISTED_FAILURES]
        for line in listed:
            err.print(f"failed: {line}")
        if result.failed_calls > len(listed):
            more = result.failed_calls - len(listed)
            err.print(f"... and {more} more failed calls (reasons in `tally export`)")
        for line in result.mismatches:
            err.print(labelled("warning: ", "yellow", line))
        lines = [f"run directory: {result.run_dir}"]
        lines.append(
            f"planned calls: {result.planned:,} ({result.added:,} new this session); "
            f"interrupted attempts marked: {result.interrupted_attempts}"
        )
        for key, n in result.superseded.items():
            lines.append(
                f"  {key}: {n:,} recorded call(s) superseded by --replace-model (kept in the "
                "ledger, out of every count)"
            )
        for name, lane in result.endpoint_lanes.items():
            s = lane.stats
            lines.append(
                f"  {name}: {s.done} finished this session: ok {s.ok}, parse_error "
                f"{s.parse_error}, failed {s.failed}, blocked {s.blocked}; retries {s.retries}"
            )
            if lane.stop_reason:
                lines.append(f"  {name}: lane stopped: {lane.stop_reason}")
        if result.verified:
            lines.append("  verified this session: " + verdict_counts(result.verified))
        lines.extend(_batch_rounds(result.run_dir))
        for line in lines:
            out.print(line)
        if not result.complete:
            resume = f"`tally resume {result.run_dir}`"
            if any(lane.stop_reason for lane in result.endpoint_lanes.values()):
                # A stopped lane's line names its own fix (a new model id is no resume).
                err.print(f"incomplete: a lane stopped; its line above says what to fix and how "
                          f"to continue (otherwise: {resume})")  # fmt: skip
            else:
                err.print(f"incomplete: continue with {resume}")
            return EXIT_INCOMPLETE
        return EXIT_OK

    raise typer.Exit(guard(go, resumable=True, run_dir=lambda: opened[0] if opened else None))


def _batch_rounds(run_dir: Path) -> list[str]:
    from evaltally.ledger import run_status

    rounds = run_status(run_dir).rounds
    if not rounds:
        return []
    from evaltally.cli.batch import rounds_summary

    return ["batch rounds (all sessions):", *rounds_summary(rounds)]


def run(
    config: ConfigFile,
    budget: Budget = None,
    start_over: StartOver = False,
    replace_model: list[str] = typer.Option(
        [],
        "--replace-model",
        metavar="KEY",
        help="the config changed this model (its id, params, reasoning): supersede its "
        "recorded calls (kept in the ledger, out of every count) and run its new ones; every "
        "other model's answers are kept. Repeat for several models",
    ),
) -> None:
    """Plan the sweep into the ledger, then run every planned call."""
    from evaltally.config import load_config

    run_config(lambda: load_config(config), budget, start_over, frozenset(replace_model))


def resume(run_dir: RunDir, budget: Budget = None, start_over: StartOver = False) -> None:
    """Finish an interrupted run: re-run failed, blocked and unfinished calls, never an answer
    already recorded."""
    from evaltally.config.run_dir import load_run_config

    run_config(lambda: load_run_config(run_dir), budget, start_over)
