"""`tally`: the command line. Each command is a thin shell over the library.

Exit statuses (docs/cli.md):
  0  every planned call ended ok or parse_error (or the command succeeded)
  2  bad input: config, data, credentials, a locked or mismatched run
  3  the run is incomplete: some calls failed or are blocked; `tally resume RUN` continues it
  4  `tally verify` found a violated ledger invariant
  130 interrupted (Ctrl-C); `tally resume RUN` continues it
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson
import typer
from rich.console import Console
from rich.table import Table

from evaltally.errors import EvaltallyError

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_VERIFY_FAILED = 4
EXIT_INTERRUPTED = 130
# The end-of-run summary names at most this many failed calls; the export has them all.
MAX_LISTED_FAILURES = 10

app = typer.Typer(
    help="Plan-first LLM evaluation sweeps with an append-only ledger and exact resume.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, soft_wrap=True)

T = TypeVar("T")


def _guard(fn: Callable[[], T]) -> T:
    """Turn our errors into one clear line on stderr and the documented exit status."""
    try:
        return fn()
    except EvaltallyError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err.print("interrupted; continue with `tally resume RUN`")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _command_line() -> str:
    return "tally " + " ".join(shlex.quote(a) for a in sys.argv[1:])


@app.command()
def plan(config: Path = typer.Argument(..., help="sweep config (TOML)")) -> None:
    """Print what a run would do: planned calls and estimated tokens. Sends nothing."""

    def go() -> None:
        from evaltally.benchmarks.registry import load_benchmarks
        from evaltally.config import load_config
        from evaltally.plan import summarize_plan

        cfg = load_config(config)
        summary = summarize_plan(cfg, load_benchmarks(cfg))
        prices = {m.key: m.price for m in cfg.models}
        table = Table(title=f"plan for {cfg.name} -> {cfg.run_dir}")
        for col in ("model", "benchmark", "protocol", "chains", "calls", "input tokens (est.)"):
            table.add_column(col)
        table.add_column("output tokens (max)")
        table.add_column("cost (est.)")
        for (model, bench, protocol), row in summary.rows.items():
            price = prices[model]
            cost = "-"
            if price:
                usd = row.input_tokens * price.input_per_mtok
                usd += row.output_tokens * price.output_per_mtok
                cost = f"${usd / 1e6:,.2f}"
            table.add_row(
                model,
                bench,
                protocol or "-",
                f"{row.chains:,}",
                f"{row.calls:,}",
                f"{row.input_tokens:,}",
                f"{row.output_tokens:,}",
                cost,
            )
        out.print(table)
        out.print(f"total planned calls: {summary.total_calls:,} (nothing was sent)")

    _guard(go)


def _run(load: Callable[[], Any], budget: float | None) -> None:
    from evaltally.runner.session import run_session

    def go() -> int:
        cfg = load()
        result = asyncio.run(run_session(cfg, command=_command_line(), budget_usd=budget))
        for line in result.failures[:MAX_LISTED_FAILURES]:
            err.print(f"failed: {line}", highlight=False, markup=False)
        if len(result.failures) > MAX_LISTED_FAILURES:
            more = len(result.failures) - MAX_LISTED_FAILURES
            err.print(f"... and {more} more failed calls (reasons in `tally export`)")
        for line in result.mismatches:
            err.print(f"[yellow]warning:[/] {line}", highlight=False)
        lines = [f"run directory: {result.run_dir}"]
        lines.append(
            f"planned calls: {result.planned:,} ({result.added:,} new this session); "
            f"interrupted attempts marked: {result.interrupted_attempts}"
        )
        for name, lane in result.lanes.items():
            s = lane.stats
            lines.append(
                f"  {name}: {s.done} finished this session: ok {s.ok}, parse_error "
                f"{s.parse_error}, failed {s.failed}, blocked {s.blocked}; retries {s.retries}"
            )
            if lane.stop_reason:
                lines.append(f"  {name}: lane stopped: {lane.stop_reason}")
        for line in lines:
            out.print(line, highlight=False)
        if not result.complete:
            err.print(f"incomplete: continue with `tally resume {result.run_dir}`")
            return EXIT_INCOMPLETE
        return EXIT_OK

    raise typer.Exit(_guard(go))


@app.command()
def run(
    config: Path = typer.Argument(..., help="sweep config (TOML)"),
    budget: float | None = typer.Option(None, "--budget", help="stop sending at this spend (USD)"),
) -> None:
    """Plan the sweep into the ledger, then run every planned call."""
    from evaltally.config import load_config

    _run(lambda: load_config(config), budget)


@app.command()
def resume(
    run_dir: Path = typer.Argument(..., help="run directory, e.g. runs/my-sweep"),
    budget: float | None = typer.Option(None, "--budget", help="stop sending at this spend (USD)"),
) -> None:
    """Finish an interrupted run: re-run failed, blocked and unfinished calls, never an answer
    already recorded."""
    from evaltally.runner.session import load_run_config

    _run(lambda: load_run_config(run_dir), budget)


@app.command()
def status(
    run_dir: Path = typer.Argument(..., help="run directory"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Counts by status and lane."""

    def go() -> None:
        from evaltally.audit import audit_run
        from evaltally.ledger import run_status
        from evaltally.runner.session import load_run_config

        data = run_status(run_dir).as_dict()
        audits = audit_run(run_dir, load_run_config(run_dir))
        data["models"] = [a.as_dict() for a in audits]
        if as_json:
            sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        _print_status(data)
        for a in audits:
            if a.flagged:
                err.print(f"[bold yellow]reasoning audit:[/] {a.message()}", highlight=False)

    _guard(go)


def _print_status(data: dict[str, Any]) -> None:
    table = Table(title=f"{data['run_dir']}")
    columns = ("ok", "parse_error", "failed", "blocked", "unfinished")
    for col in ("lane", *columns, "tokens in/out", "reasoning", "cost"):
        table.add_column(col)
    spend = {m["model"]: m for m in data["models"]}
    for name, counts in data["by_model"].items():
        m = spend.get(name, {})
        cost = m.get("cost_usd")
        table.add_row(
            name,
            *(str(counts.get(c, 0)) for c in columns),
            f"{m.get('input_tokens', 0):,}/{m.get('output_tokens', 0):,}",
            f"{m.get('reasoning_tokens', 0):,}",
            "-" if cost is None else f"${cost:,.2f}",
        )
    out.print(table)
    live = data.get("live")
    out.print(
        f"sessions: {data['sessions']}; attempts: {data['attempts']} "
        f"(retried {data['retried_attempts']}, interrupted {data['interrupted_attempts']})"
        + (f"; live: {live}" if live else ""),
        highlight=False,
    )


def _export_enricher(run_dir: Path) -> Callable[[dict[str, Any]], Any]:
    """Benchmark oracle fields for export rows, from the run's own config copy."""
    from evaltally.benchmarks.registry import load_benchmarks
    from evaltally.records import PlannedCall
    from evaltally.runner.session import load_run_config

    benchmarks = load_benchmarks(load_run_config(run_dir))

    def enrich(row: dict[str, Any]) -> Any:
        bench = benchmarks.get(row["benchmark"])
        if bench is None:
            return {}
        fields = ("call_id", "chain_id", "step", "model", "benchmark", "item_id", "sample")
        call = PlannedCall(**{f: row[f] for f in (*fields, "protocol", "spec")})
        return bench.export_fields(call)

    return enrich


@app.command()
def export(
    run_dir: Path = typer.Argument(..., help="run directory"),
    output: Path = typer.Option(..., "-o", "--output", help="JSONL file to write"),
) -> None:
    """One JSONL row per planned call (docs/export.md)."""

    def go() -> None:
        from evaltally.ledger import export_run

        n = export_run(run_dir, output, enrich=_export_enricher(run_dir))
        out.print(f"wrote {n:,} rows to {output}", highlight=False)

    _guard(go)


@app.command()
def verify(run_dir: Path = typer.Argument(..., help="run directory")) -> None:
    """Check the ledger's invariants; exit 4 with precise messages when one is violated."""

    def go() -> int:
        from evaltally.ledger import verify_run

        report = verify_run(run_dir)
        for note in report.notes:
            out.print(f"note: {note}", highlight=False, markup=False)
        if report.ok:
            out.print(f"{run_dir}: ledger verified, no violations", highlight=False)
            return EXIT_OK
        for problem in report.violations:
            err.print(f"violation: {problem}", highlight=False, markup=False)
        return EXIT_VERIFY_FAILED

    raise typer.Exit(_guard(go))


def _print_report(result: Any) -> None:
    from evaltally.report.tables import to_rich

    for table in result.tables:
        out.print(to_rich(table))
    for line in result.audit:
        err.print(f"reasoning audit: {line}", highlight=False, markup=False)
    for path in result.files:
        out.print(f"wrote {path}", highlight=False)


@app.command()
def grade(
    export_file: Path = typer.Argument(..., help="export JSONL written by `tally export`"),
    output: Path | None = typer.Option(None, "-o", "--output", help="directory for report files"),
    config: Path | None = typer.Option(
        None, "--config", help="the run's config (for the reasoning audit)"
    ),
    resamples: int = typer.Option(2000, "--resamples", min=0, help="bootstrap resamples"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
) -> None:
    """CTE-Bench metrics from an export file alone (docs/cte-protocols.md)."""

    def go() -> None:
        from evaltally.config import load_config
        from evaltally.report import grade_export

        modes = None
        if config is not None:
            modes = {m.key: m.reasoning for m in load_config(config).models}
        result = grade_export(
            export_file, output, requested_reasoning=modes, resamples=resamples, seed=seed
        )
        _print_report(result)

    _guard(go)


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="run directory"),
    resamples: int = typer.Option(2000, "--resamples", min=0, help="bootstrap resamples"),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
) -> None:
    """Export the run, grade the export, write report.md/report.json/PNGs into the run."""

    def go() -> None:
        import tempfile

        from evaltally.ledger import export_run
        from evaltally.report import grade_export
        from evaltally.runner.session import load_run_config

        modes = {m.key: m.reasoning for m in load_run_config(run_dir).models}
        with tempfile.TemporaryDirectory(prefix="tally-report-") as tmp:
            export = Path(tmp) / "export.jsonl"
            export_run(run_dir, export, enrich=_export_enricher(run_dir))
            result = grade_export(
                export, run_dir, requested_reasoning=modes, resamples=resamples, seed=seed
            )
        _print_report(result)

    _guard(go)


def _mount_subcommands() -> None:
    from evaltally.benchmarks.cte.cli import app as cte_app
    from evaltally.mockserver.cli import mock_server_command

    app.add_typer(cte_app, name="cte", help="CTE-Bench data: fetch, verify, stats, generate")
    app.command("mock-server")(mock_server_command)


_mount_subcommands()


def main() -> None:
    try:
        app()
    except SystemExit as done:
        if sys.getprofile() is not None or sys.gettrace() is not None:
            raise  # a profiler or coverage tool writes its data at exit
        # The command has finished: ledgers are closed, temporary directories removed (every
        # one is a `with` block). Skip the interpreter's teardown of every loaded module and
        # object, which took a one-call `tally run` 0.1-0.5 s (bench/fixed_cost.py).
        code = done.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code if isinstance(code, int) else int(code is not None))
