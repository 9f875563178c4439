"""The options several commands share, each declared once: a command names the type
(`budget: Budget = None`) and gets the same flag, check and help as every other command.

`-o/--output` is what a command writes: a file where its help names a file, a directory where
it names one (`--out`, its earlier spelling, is still accepted)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

RESAMPLES_HELP = (
    "bootstrap resamples (default: each benchmark's own, CTE-Bench 2,000, CTXGAP 10,000)"
)

ConfigFile = Annotated[Path, typer.Argument(help="sweep config (TOML)")]
RunDir = Annotated[Path, typer.Argument(help="run directory, e.g. runs/my-sweep")]
Budget = Annotated[
    float | None,
    typer.Option(
        "--budget", help="stop sending at this spend (USD, >= 0; 0: send nothing that costs)"
    ),
]
StartOver = Annotated[
    bool,
    typer.Option(
        "--start-over",
        help="the run's ledger was lost (emptied, or its WAL deleted): start the run again from "
        "nothing",
    ),
]
Seed = Annotated[int, typer.Option("--seed", help="bootstrap seed")]
Resamples = Annotated[int | None, typer.Option("--resamples", min=0, help=RESAMPLES_HELP)]
Force = Annotated[bool, typer.Option("--force", help="replace OUTPUT if it exists")]


def output(help_text: str, default: Any = None) -> Any:
    """`-o/--output` with this command's own help (what it writes there); `...`: required."""
    return typer.Option(default, "-o", "--output", "--out", help=help_text)
