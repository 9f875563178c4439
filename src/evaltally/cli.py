"""`tally`: the command line. Each command is a thin shell over the library.

Exit statuses (docs/cli.md):
  0  every planned call ended ok or parse_error (or the command succeeded)
  2  bad input: config, data, credentials, a locked or mismatched run, a lost ledger
  3  the run is incomplete: some calls failed or are blocked, or the ledger could not be
     written (disk full); `tally resume RUN` continues it
  4  `tally verify` found a violated ledger invariant (tampering or corruption)
  5  `tally verify`: the history is intact but the last process did not close it (killed,
     full disk); `tally resume RUN` continues the run
  130 interrupted (Ctrl-C or SIGTERM); `tally resume RUN` continues it
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar, cast

import orjson
import typer
from rich.text import Text

from evaltally import startup
from evaltally.cli_group import RootGroup
from evaltally.errors import EvaltallyError
from evaltally.redact import RedactingStream
from evaltally.terminal import VisibleConsole

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_VERIFY_FAILED = 4
EXIT_VERIFY_INTERRUPTED = 5
EXIT_INTERRUPTED = 130
# The end-of-run summary names at most this many failed calls; the export has them all.
MAX_LISTED_FAILURES = 10
RESAMPLES_HELP = (
    "bootstrap resamples (default: each benchmark's own, CTE-Bench 2,000, CTXGAP 10,000)"
)

app = typer.Typer(
    cls=RootGroup,
    help="Plan-first LLM evaluation sweeps with an append-only ledger and exact resume.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Markup off: provider messages, model keys (`gpt-4o[t=0]`) and item ids are printed as text,
# never interpreted; the few styled labels are built as Text (`_labelled`).
out = VisibleConsole(
    soft_wrap=True, width=None if sys.stdout.isatty() else 200, markup=False, highlight=False
)
err = VisibleConsole(stderr=True, soft_wrap=True, markup=False, highlight=False)

T = TypeVar("T")


def _labelled(label: str, style: str, text: str) -> Text:
    """`label` styled, then untrusted `text` as plain text."""
    return Text.assemble((label, style), text)


def _guard(fn: Callable[[], T]) -> T:
    """Turn our errors into one clear line on stderr and the documented exit status."""
    startup.end()
    try:
        return fn()
    except EvaltallyError as exc:
        err.print(_labelled("error: ", "bold red", str(exc)))
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
        from rich.table import Table

        from evaltally.batch_plan import plan_batches
        from evaltally.benchmarks.registry import load_benchmarks
        from evaltally.cli_batch import plan_lines
        from evaltally.config import load_config
        from evaltally.config.checks import check_runs_dir
        from evaltally.plan import summarize_plan
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
                usd = row.input_tokens * price.input_per_mtok
                usd += row.output_tokens * price.output_per_mtok
                cost = f"${usd / 1e6:,.2f}"
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

    _guard(go)


_BUDGET_HELP = "stop sending at this spend (USD, >= 0; 0: send nothing that costs)"
_START_OVER_HELP = (
    "the run's ledger was lost (emptied, or its WAL deleted): start the run again from nothing"
)


def run_config(load: Callable[[], Any], budget: float | None, start_over: bool = False) -> None:
    """Run the sweep `load()` returns (plan, ledger, every pending call), print the summary and
    exit with the documented status. Shared by run, resume and the commands that start a run
    of their own (`tally fork`, `tally scae cte-judge`)."""
    from evaltally.config import check_budget
    from evaltally.runner.session import run_session

    def go() -> int:
        limit = check_budget(budget, "command line", "--budget")
        cfg = load()
        session = run_session(cfg, command=_command_line(), budget_usd=limit, start_over=start_over)
        result = asyncio.run(session)
        for line in result.failures[:MAX_LISTED_FAILURES]:
            err.print(f"failed: {line}")
        if len(result.failures) > MAX_LISTED_FAILURES:
            more = len(result.failures) - MAX_LISTED_FAILURES
            err.print(f"... and {more} more failed calls (reasons in `tally export`)")
        for line in result.mismatches:
            err.print(_labelled("warning: ", "yellow", line))
        lines = [f"run directory: {result.run_dir}"]
        lines.append(
            f"planned calls: {result.planned:,} ({result.added:,} new this session); "
            f"interrupted attempts marked: {result.interrupted_attempts}"
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
            lines.append("  verified this session: " + _verdict_counts(result.verified))
        lines.extend(_batch_rounds(result.run_dir))
        for line in lines:
            out.print(line)
        if not result.complete:
            err.print(f"incomplete: continue with `tally resume {result.run_dir}`")
            return EXIT_INCOMPLETE
        return EXIT_OK

    raise typer.Exit(_guard(go))


@app.command()
def run(
    config: Path = typer.Argument(..., help="sweep config (TOML)"),
    budget: float | None = typer.Option(None, "--budget", help=_BUDGET_HELP),
    start_over: bool = typer.Option(False, "--start-over", help=_START_OVER_HELP),
) -> None:
    """Plan the sweep into the ledger, then run every planned call."""
    from evaltally.config import load_config

    run_config(lambda: load_config(config), budget, start_over)


@app.command()
def resume(
    run_dir: Path = typer.Argument(..., help="run directory, e.g. runs/my-sweep"),
    budget: float | None = typer.Option(None, "--budget", help=_BUDGET_HELP),
    start_over: bool = typer.Option(False, "--start-over", help=_START_OVER_HELP),
) -> None:
    """Finish an interrupted run: re-run failed, blocked and unfinished calls, never an answer
    already recorded."""
    from evaltally.run_dir import load_run_config

    run_config(lambda: load_run_config(run_dir), budget, start_over)


@app.command()
def status(
    run_dir: Path = typer.Argument(..., help="run directory"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Counts by status and lane."""

    def go() -> None:
        from evaltally.audit import audit_run
        from evaltally.ledger import run_status
        from evaltally.run_dir import load_run_config
        from evaltally.runner.lane_states import read_lane_states

        data = run_status(run_dir).as_dict()
        data["lanes_waiting"] = read_lane_states(run_dir) if data.get("live") else {}
        audits = audit_run(run_dir, load_run_config(run_dir))
        data["models"] = [a.as_dict() for a in audits]
        if as_json:
            sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        _print_status(data)
        for a in audits:
            if a.flagged:
                err.print(_labelled("reasoning audit: ", "bold yellow", a.message()))

    _guard(go)


def _batch_rounds(run_dir: Path) -> list[str]:
    from evaltally.ledger import run_status

    rounds = run_status(run_dir).rounds
    if not rounds:
        return []
    from evaltally.cli_batch import rounds_summary

    return ["batch rounds (all sessions):", *rounds_summary(rounds)]


def _print_status(data: dict[str, Any]) -> None:
    from rich.table import Table

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
    )
    for lane, why in data.get("lanes_waiting", {}).items():
        out.print(f"lane {lane}: {why}", markup=False, highlight=False)
    if data["batches"]:
        from evaltally.cli_batch import batches_line, rounds_table

        out.print(rounds_table(data["rounds"]))
        out.print(batches_line(data["batches"]))


def _verdict_counts(counts: dict[str, int]) -> str:
    return ", ".join(
        f"{status} {counts.get(status, 0)}" for status in ("passed", "failed", "error")
    )


def _export_enricher(run_dir: Path) -> Callable[[dict[str, Any]], Any]:
    """Benchmark kind, role and oracle fields for export rows, from the run's config copy."""
    from evaltally.benchmarks.enrich import export_enricher
    from evaltally.run_dir import load_run_config

    return export_enricher(load_run_config(run_dir), run_dir)


@app.command()
def export(
    run_dir: Path = typer.Argument(..., help="run directory"),
    output: Path = typer.Option(
        ..., "-o", "--output", help="file to write: .jsonl, .csv or .parquet (by extension)"
    ),
    force: bool = typer.Option(False, "--force", help="replace OUTPUT if it exists"),
) -> None:
    """One row per planned call, as JSONL, CSV or Parquet (docs/export.md). Never writes over
    a run's own files."""

    def go() -> None:
        from evaltally.ledger.export import check_target
        from evaltally.ledger.export_formats import write_export

        check_target(output, run_dir, force=force)  # before the config copy is even read
        n = write_export(run_dir, output, enrich=_export_enricher(run_dir), force=force)
        out.print(f"wrote {n:,} rows to {output}", highlight=False)

    _guard(go)


@app.command()
def verify(run_dir: Path = typer.Argument(..., help="run directory")) -> None:
    """Check the ledger's invariants: exit 0 verified, 4 violated (tampering or corruption),
    5 interrupted (intact, but the last process did not close it: resume the run)."""

    def go() -> int:
        from evaltally.ledger import verify_run

        report = verify_run(run_dir)
        for note in report.notes:
            out.print(f"note: {note}")
        for problem in report.violations:
            err.print(f"violation: {problem}")
        for finding in report.interruptions:
            err.print(f"interrupted: {finding}")
        if report.violations:
            err.print(
                f"{run_dir}: the ledger's history was altered or damaged "
                f"({len(report.violations)} violation(s))",
            )
            return EXIT_VERIFY_FAILED
        if report.interruptions:
            err.print(
                f"{run_dir}: history intact, but the last process did not close the run "
                f"(killed, or stopped by a full disk); continue with `tally resume {run_dir}`",
            )
            return EXIT_VERIFY_INTERRUPTED
        out.print(f"{run_dir}: ledger verified, no violations")
        return EXIT_OK

    raise typer.Exit(_guard(go))


def _print_report(result: Any) -> None:
    from evaltally.report.tables import to_rich

    for title, section in result.sections:
        if len(result.sections) > 1:
            out.rule(title)
        for table in section.tables:
            out.print(to_rich(table))
    for line in result.audit:
        err.print(f"reasoning audit: {line}")
    for path in result.files:
        out.print(f"wrote {path}")


@app.command()
def grade(
    export_file: Path = typer.Argument(
        ..., help="export written by `tally export` (.jsonl, .csv or .parquet)"
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="directory for report files"),
    config: Path | None = typer.Option(
        None, "--config", help="the run's config (reasoning audit and data sources)"
    ),
    resamples: int | None = typer.Option(None, "--resamples", min=0, help=RESAMPLES_HELP),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
) -> None:
    """Every benchmark's metrics from an export file alone, by benchmark kind."""

    def go() -> None:
        from evaltally.benchmarks.enrich import data_sources
        from evaltally.benchmarks.registry import load_benchmarks
        from evaltally.config import load_config
        from evaltally.report import grade_export

        modes = sources = None
        if config is not None:
            cfg = load_config(config)
            modes = {m.key: m.reasoning for m in cfg.models}
            sources = data_sources(load_benchmarks(cfg))
        result = grade_export(
            export_file,
            output,
            requested_reasoning=modes,
            resamples=resamples,
            seed=seed,
            data_sources=sources,
        )
        _print_report(result)

    _guard(go)


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="run directory"),
    resamples: int | None = typer.Option(None, "--resamples", min=0, help=RESAMPLES_HELP),
    seed: int = typer.Option(0, "--seed", help="bootstrap seed"),
) -> None:
    """Export the run, grade the export, write report.md/report.json/PNGs into the run."""

    def go() -> None:
        import tempfile

        from evaltally.errors import DataError
        from evaltally.ledger import export_run, latest_meta
        from evaltally.report import grade_export
        from evaltally.run_dir import load_run_config

        config = load_run_config(run_dir)
        modes = {m.key: m.reasoning for m in config.models}
        with tempfile.TemporaryDirectory(prefix="tally-report-") as tmp:
            export = Path(tmp) / "export.jsonl"
            export_run(run_dir, export, enrich=_export_enricher(run_dir))
            try:
                result = grade_export(
                    export,
                    run_dir,
                    requested_reasoning=modes,
                    resamples=resamples,
                    seed=seed,
                    data_sources=latest_meta(run_dir, "data_sources"),
                )
            except DataError as exc:
                # The export is a temporary file the user never saw: name the run instead.
                reason = str(exc).replace(str(export), f"the export of {run_dir}")
                raise DataError(reason) from None
        _print_report(result)

    _guard(go)


@app.command()
def regrade(run_dir: Path = typer.Argument(..., help="run directory")) -> None:
    """Re-run the verification of every recorded answer from the ledger (no model request);
    the new verdicts are appended and used by export and report."""

    def go() -> None:
        from evaltally.runner.regrade import regrade_run

        result = asyncio.run(regrade_run(run_dir, command=_command_line()))
        out.print(
            f"{run_dir}: {result.checked:,} answers verified again: "
            f"{_verdict_counts(result.counts)}; {result.changed:,} verdicts changed",
            highlight=False,
        )

    _guard(go)


@app.command()
def view(
    run_dirs: list[Path] = typer.Argument(..., help="run directories to show"),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="TCP port (0: a free one)"),
    host: str | None = typer.Option(
        None, "--host", help="listen on this address instead of 127.0.0.1 (exposes every answer)"
    ),
    ready_file: Path | None = typer.Option(None, "--ready-file", hidden=True),
) -> None:
    """Serve a read-only web page over runs: overview, calls, one call, report (docs/view.md)."""

    def go() -> None:
        from evaltally.view import LOOPBACK, is_loopback, serve

        if host is not None and not is_loopback(host):
            err.print(
                f"warning: listening on {host}: anyone who can reach it reads every prompt and "
                "answer of these runs (there is no login); the default is 127.0.0.1",
                highlight=False,
                markup=False,
            )

        def say(line: str) -> None:
            out.print(line, highlight=False, markup=False)

        asyncio.run(
            serve(
                run_dirs,
                host=host or LOOPBACK,
                port=port,
                ready_file=ready_file,
                say=say,
            )
        )

    _guard(go)


def main() -> None:
    # Parsing the command line runs without the cyclic garbage collector, until the command's
    # work begins: `_guard`, or a mounted command when it is built (cli_group; evaltally.startup).
    startup.begin()
    # Everything this process prints, tracebacks included, passes redaction (evaltally.redact).
    sys.stdout = cast(TextIO, RedactingStream(sys.stdout))
    sys.stderr = cast(TextIO, RedactingStream(sys.stderr))
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
