"""`tally status`, `tally export`, `tally verify`: reading what a run's ledger holds."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import typer

from evaltally.cli import options
from evaltally.cli.options import Force, RunDir
from evaltally.cli.output import (
    EXIT_OK,
    EXIT_VERIFY_FAILED,
    EXIT_VERIFY_INTERRUPTED,
    err,
    guard,
    labelled,
    out,
)


def status(
    run_dir: RunDir,
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Counts by status and lane."""

    def go() -> None:
        from evaltally.config.run_dir import load_run_config
        from evaltally.ledger import run_status
        from evaltally.ledger.audit import audit_run
        from evaltally.runner.lane_states import read_lane_states

        data = run_status(run_dir).as_dict()
        data["state"] = _state(run_dir)
        data["lanes_waiting"] = read_lane_states(run_dir) if data.get("live") else {}
        audits = audit_run(run_dir, load_run_config(run_dir))
        data["models"] = [a.as_dict() for a in audits]
        if as_json:
            sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        _print_status(data)
        for a in audits:
            if a.flagged:
                err.print(labelled("reasoning audit: ", "bold yellow", a.message()))
            elif a.calls_reasoning_inferred and (reasoned := a.reasoned()):
                err.print(labelled("reasoning audit: ", "bold", reasoned))

    guard(go, resumable=True)


def _state(run_dir: Path) -> str:
    from evaltally.ledger.browse import run_state

    return run_state(run_dir)


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
    from evaltally.ledger.browse import STATE_NOTES

    out.print(f"state: {data['state']} ({STATE_NOTES[data['state']]})", highlight=False)
    for lane, why in data.get("lanes_waiting", {}).items():
        out.print(f"lane {lane}: {why}", markup=False, highlight=False)
    from evaltally.ledger.lock import iso

    for sup in data.get("superseded", []):
        why = "; ".join(sup["changes"]) or "config changed"
        out.print(
            f"superseded: {sup['calls']:,} call(s) of {sup['model']} at {iso(sup['at'])} "
            f"({why}); kept in the ledger, out of every count",
            markup=False,
            highlight=False,
        )
    for lane, learned in data.get("lane_limits", {}).items():
        out.print(f"lane {lane} limits: {_limits_text(learned)}", markup=False, highlight=False)
    if data["batches"]:
        from evaltally.cli.batch import batches_line, rounds_table

        out.print(rounds_table(data["rounds"]))
        out.print(batches_line(data["batches"]))


def export_enricher(run_dir: Path) -> Callable[[dict[str, Any]], Any]:
    """Benchmark kind, role and oracle fields for export rows, from the run's config copy."""
    from evaltally.benchmarks.enrich import export_enricher as enricher
    from evaltally.config.run_dir import load_run_config

    return enricher(load_run_config(run_dir), run_dir)


def export(
    run_dir: RunDir,
    output: Path = options.output("file to write: .jsonl, .csv or .parquet (by extension)", ...),
    force: Force = False,
) -> None:
    """One row per planned call, as JSONL, CSV or Parquet (docs/export.md). Never writes over
    a run's own files."""

    def go() -> None:
        from evaltally.ledger.export import check_target
        from evaltally.ledger.export_formats import write_export
        from evaltally.ledger.export_meta import meta_path

        check_target(output, run_dir, force=force)  # before the config copy is even read
        n = write_export(run_dir, output, enrich=export_enricher(run_dir), force=force)
        meta = meta_path(output)
        out.print(f"wrote {n:,} rows to {output} (run metadata: {meta})", highlight=False)

    guard(go, resumable=True)


def verify(run_dir: RunDir) -> None:
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

    raise typer.Exit(guard(go, resumable=True))


_WINDOWS = {1.0: "second", 60.0: "minute", 3600.0: "hour", 86400.0: "day"}


def _limits_text(learned: dict[str, Any]) -> str:
    """What a lane adopted (its pace) and what the provider advertised, with each window."""
    parts = [f"paced at {learned[k]:,.0f} {k}" for k in ("rpm", "tpm") if k in learned]
    for what, shown in dict(learned.get("advertised") or {}).items():
        limit, window = shown
        per = _WINDOWS.get(float(window), f"{float(window):g} s")
        parts.append(f"advertised {int(limit):,} {what} per {per}")
    return "; ".join(parts) or "-"
