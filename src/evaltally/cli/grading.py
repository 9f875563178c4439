"""`tally grade`, `tally report`, `tally regrade`: metrics from an export or a run, and the
answers' checks run again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from evaltally.cli import options
from evaltally.cli.ledger import export_enricher
from evaltally.cli.options import Resamples, RunDir, Seed
from evaltally.cli.output import command_line, err, guard, out, verdict_counts


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


def grade(
    export_file: Path = typer.Argument(
        ..., help="export written by `tally export` (.jsonl, .csv or .parquet)"
    ),
    output: Path | None = options.output("directory for report files"),
    config: Path | None = typer.Option(
        None, "--config", help="the run's config (reasoning audit and data sources)"
    ),
    resamples: Resamples = None,
    seed: Seed = 0,
) -> None:
    """Every benchmark's metrics from an export file alone, by benchmark kind."""

    def go() -> None:
        from evaltally.benchmarks.binding import load_benchmarks
        from evaltally.benchmarks.enrich import data_sources
        from evaltally.benchmarks.grading import grade_export
        from evaltally.config import load_config

        modes = sources = None
        if config is not None:
            cfg = load_config(config)
            modes = {m.key: m.reasoning.mode for m in cfg.models}
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

    guard(go, resumable=True)


def report(run_dir: RunDir, resamples: Resamples = None, seed: Seed = 0) -> None:
    """Export the run, grade the export, write report.md/report.json/PNGs into the run."""

    def go() -> None:
        import tempfile

        from evaltally.benchmarks.grading import grade_export
        from evaltally.config.run_dir import load_run_config
        from evaltally.errors import DataError
        from evaltally.ledger import export_run, latest_meta

        config = load_run_config(run_dir)
        modes = {m.key: m.reasoning.mode for m in config.models}
        with tempfile.TemporaryDirectory(prefix="tally-report-") as tmp:
            export = Path(tmp) / "export.jsonl"
            export_run(run_dir, export, enrich=export_enricher(run_dir))
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

    guard(go, resumable=True)


def regrade(run_dir: RunDir) -> None:
    """Re-run the verification of every recorded answer from the ledger (no model request);
    the new verdicts are appended and used by export and report."""

    def go() -> None:
        from evaltally.runner.regrade import regrade_run

        result = asyncio.run(regrade_run(run_dir, command=command_line()))
        out.print(
            f"{run_dir}: {result.checked:,} answers verified again: "
            f"{verdict_counts(result.counts)}; {result.changed:,} verdicts changed",
            highlight=False,
        )

    guard(go, resumable=True)
