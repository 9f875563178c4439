"""``tally cte ...``: fetch, verify, stats and generate (mounted by the root CLI)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import typer

from evaltally.cli import kinds
from evaltally.errors import EvaltallyError
from evaltally.terminal import VisibleConsole, visible

app = typer.Typer(
    help="CTE-Bench: fetch the official data, replay it to check it, describe and generate it.",
    no_args_is_help=True,
)


@app.command()
def fetch(
    out: Path = kinds.options.output("Target directory.", Path("data/cte-bench")),
    url: list[str] = typer.Option(
        [], "--url", help="Download from this URL instead (repeatable; tried in order)."
    ),
) -> None:
    """Download the official Core-v1 file (pinned SHA-256, resumable)."""
    from .fetch import OFFICIAL_URLS
    from .fetch import fetch as do_fetch

    path = kinds.guard(lambda: do_fetch(out, urls=url or OFFICIAL_URLS))
    typer.echo(f"{path}: SHA-256 verified")


@app.command()
def replay(
    data: Path = typer.Argument(..., help="Scenario file (.jsonl or .jsonl.gz)."),
    sandbox: str = typer.Option(
        "os", "--sandbox", help='"os" (bubblewrap; the default) or the weaker "process"'
    ),
) -> None:
    """Replay every record in the sandbox and compare with its stored traces and states."""
    from .sandbox import Limits, boundary_of
    from .verify import render, verify_file

    limits = kinds.guard(lambda: Limits(sandbox=sandbox))
    warning = kinds.guard(lambda: boundary_of(limits).require("CTE replay of data-file services"))
    if warning:
        typer.echo(f"warning: {visible(warning)}", err=True)
    report = kinds.guard(lambda: verify_file(data, limits=limits))
    for line in render(report):
        typer.echo(visible(line))
    if not report.ok:
        raise typer.Exit(1)


@app.command("verify", hidden=True)
def verify(
    data: Path = typer.Argument(..., help="Scenario file (.jsonl or .jsonl.gz)."),
    sandbox: str = typer.Option(
        "os", "--sandbox", help='"os" (bubblewrap; the default) or the weaker "process"'
    ),
) -> None:
    """The earlier name of `replay` (`verify` now means only `tally verify RUN`)."""
    kinds.err.print("note: `tally cte verify` is now `tally cte replay`")
    replay(data, sandbox)


@app.command()
def stats(
    data: str = typer.Argument("builtin", help='Scenario file, or "builtin".'),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Composition per service x intervention kind: scenarios, scored calls, effect steps."""
    from .stats import file_stats, render_table

    result: dict[str, Any] = kinds.guard(lambda: file_stats(data))
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        VisibleConsole(width=120).print(render_table(result, title=str(data)))


@app.command()
def generate(
    seed: int = typer.Option(..., "--seed", help="Generator seed."),
    out: Path = kinds.options.output("Output JSONL file.", ...),
    probe: str | None = typer.Option(
        None,
        "--probe",
        help="'no-effect': 106 scenarios whose intervention changes no response (replay: 100%).",
    ),
) -> None:
    """Generate fresh scenarios from the project's own services."""

    def run() -> int:
        try:
            gen = importlib.import_module("evaltally.benchmarks.cte.generate")
        except ImportError as exc:
            raise EvaltallyError(f"the scenario generator is unavailable: {exc}") from exc
        if probe is None:
            return int(gen.write_generated(seed, out))
        try:
            return int(gen.write_generated(seed, out, probe))
        except ValueError as exc:  # an unknown probe name, checked before any work
            raise EvaltallyError(f"--probe: {exc}") from None

    n = kinds.guard(run)
    typer.echo(f"{out}: {n} scenarios")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
