"""``tally ctxgap ...``: check data, export what observers see, score a labels file."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import typer
from rich.console import Console

from evaltally.benchmarks.cli_common import guard
from evaltally.errors import EvaltallyError

if TYPE_CHECKING:
    from .data import Dataset

app = typer.Typer(
    help="CTXGAP: validate probe data, export observer inputs, score labeled verdicts.",
    no_args_is_help=True,
)
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 200)

DATA_HELP = 'Data directory with views.jsonl and probes.jsonl, or "example".'


def _names(option: str, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    names = tuple(v.strip() for v in value.split(","))
    if not all(names):
        raise EvaltallyError(f"{option}: give view names separated by commas, got {value!r}")
    return names


def _print_invalid(ds: Dataset, label: str) -> None:
    for item in ds.invalid():
        where = f" in view {item.view}" if item.view else ""
        out.print(f"{label}: {item.probe_id}{where}: {item.reason}", markup=False, highlight=False)


@app.command()
def check(data: str = typer.Argument(..., help=DATA_HELP)) -> None:
    """Validate a data directory and describe it (nothing is sent anywhere)."""
    from .data import load_dataset

    ds = guard(lambda: load_dataset(data))
    planned = sum(1 for _ in ds.planned())
    out.print(
        f"{data}: {len(ds.task_ids)} tasks, {len(ds.views)} checkpoints, views "
        f"{', '.join(ds.view_names)}; {len(ds.probes)} probes; {planned} planned "
        "(probe, view) units",
        markup=False,
        highlight=False,
    )
    _print_invalid(ds, "invalid")


@app.command("export-observer-inputs")
def export_observer_inputs(
    data: str = typer.Argument(..., help=DATA_HELP),
    output: Path = typer.Option(
        ..., "-o", "--output", help="JSONL file to write (must not exist)."
    ),
) -> None:
    """Write exactly what observers see: one row per planned (probe, view)."""
    from .chain import observer_rows
    from .data import load_dataset
    from .output import refuse_existing, write_new_jsonl

    def go() -> None:
        refuse_existing(output)
        ds = load_dataset(data)
        n = write_new_jsonl(output, observer_rows(ds))
        out.print(f"wrote {n:,} observer inputs to {output}", markup=False, highlight=False)
        _print_invalid(ds, "left out (invalid)")

    guard(go)


def _options(
    gap: str | None, variants: str | None, views: str | None, resamples: int, seed: int
) -> Any:
    from .stats import Options

    pair = _names("--gap", gap)
    if gap is not None and len(pair) != 2:
        raise EvaltallyError(f"--gap: name exactly two views, got {gap!r}")
    return Options(
        views=_names("--views", views) or None,
        gap=(pair[0], pair[1]) if pair else None,
        variants=_names("--variants", variants),
        resamples=resamples,
        seed=seed,
    )


@app.command("score-labels")
def score_labels(
    data: str = typer.Argument(..., help=DATA_HELP),
    labels: str = typer.Option(..., "--labels", help='Labels JSONL file, or "example".'),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="JSON report (must not exist)."
    ),
    markdown_out: Path | None = typer.Option(
        None, "--markdown", help="Markdown report (must not exist)."
    ),
    gap: str | None = typer.Option(
        None, "--gap", help="U,T: the gap is A(T) - A(U); default the first two views."
    ),
    variants: str | None = typer.Option(
        None, "--variants", help="Views compared pairwise on the probes valid in all (A,B,C)."
    ),
    views: str | None = typer.Option(None, "--views", help="Order of views in the report."),
    resamples: int = typer.Option(10_000, "--resamples", min=0, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
) -> None:
    """Score verdicts from a labels file (no judge model): the same statistics as a run."""
    from evaltally.report.tables import to_rich

    from . import report
    from .data import example_dir, load_dataset
    from .labels import units_from_labels
    from .output import refuse_existing, write_new
    from .stats import analyze

    def go() -> None:
        refuse_existing(*(p for p in (output, markdown_out) if p is not None))
        opts = _options(gap, variants, views, resamples, seed)
        ds = load_dataset(data)
        labels_path = example_dir() / "labels.jsonl" if labels == "example" else Path(labels)
        result = analyze(units_from_labels(labels_path, ds), opts)
        made = report.tables(result, ds.invalid())
        for table in made:
            out.print(to_rich(table))
        source = {
            "data": data,
            "data_sha256": ds.content_hash(),
            "labels": str(labels_path),
            "labels_sha256": hashlib.sha256(labels_path.read_bytes()).hexdigest(),
        }
        if output is not None:
            doc = report.document(result, ds.invalid(), source)
            write_new(output, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
            out.print(f"wrote {output}", markup=False, highlight=False)
        if markdown_out is not None:
            write_new(markdown_out, report.markdown(made, result).encode())
            out.print(f"wrote {markdown_out}", markup=False, highlight=False)

    guard(go)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
