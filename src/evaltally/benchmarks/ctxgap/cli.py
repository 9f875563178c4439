"""``tally ctxgap ...``: check data, export what observers see, score a labels file."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import orjson
import typer

from evaltally.cli import kinds
from evaltally.errors import EvaltallyError
from evaltally.terminal import VisibleConsole

if TYPE_CHECKING:
    from .data import InvalidProbe, Probe, View

app = typer.Typer(
    help="CTXGAP: validate probe data, export observer inputs, score labeled verdicts.",
    no_args_is_help=True,
)
out = VisibleConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 200)

DATA_HELP = 'Data directory with views.jsonl and probes.jsonl, or "example".'


def _names(option: str, value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    names = tuple(v.strip() for v in value.split(","))
    if not all(names):
        raise EvaltallyError(f"{option}: give view names separated by commas, got {value!r}")
    return names


def _print_invalid(invalid: list[InvalidProbe], label: str) -> None:
    for item in invalid:
        where = f" in view {item.view}" if item.view else ""
        out.print(f"{label}: {item.probe_id}{where}: {item.reason}", markup=False, highlight=False)


@app.command()
def check(data: str = typer.Argument(..., help=DATA_HELP)) -> None:
    """Validate a data directory and describe it (nothing is sent anywhere)."""
    from .data import load_dataset

    ds = kinds.guard(lambda: load_dataset(data))
    planned = sum(1 for _ in ds.planned())
    out.print(
        f"{data}: {len(ds.task_ids)} tasks, {len(ds.views)} checkpoints, views "
        f"{', '.join(ds.view_names)}; {len(ds.probes)} probes; {planned} planned "
        "(probe, view) units",
        markup=False,
        highlight=False,
    )
    _print_invalid(ds.invalid(), "invalid")


@app.command("export-observer-inputs")
def export_observer_inputs(
    data: str | None = typer.Argument(None, help=DATA_HELP + " Or give --config or --run."),
    output: Path = kinds.options.output("JSONL file to write (must not exist).", ...),
    config: Path | None = typer.Option(
        None, "--config", help="A sweep config: the units its ctxgap benchmark plans."
    ),
    run: Path | None = typer.Option(
        None, "--run", help="A run directory: the units its copy of the config plans."
    ),
    benchmark: str | None = typer.Option(
        None, "--benchmark", help="The ctxgap benchmark's name, when the config has several."
    ),
) -> None:
    """Write exactly what observers see: one row per planned (probe, view)."""
    from .chain import observer_row
    from .output import refuse_existing, write_new_jsonl

    def go() -> None:
        refuse_existing(output)
        given = [x for x in (data, config, run) if x is not None]
        if len(given) != 1:
            raise EvaltallyError(
                f"give one of: a data directory, --config CONFIG or --run RUN ({len(given)} given)"
            )
        units, invalid = _planned_units(data, config, run, benchmark)
        n = write_new_jsonl(output, (observer_row(p, v) for p, v in units))
        out.print(f"wrote {n:,} observer inputs to {output}", markup=False, highlight=False)
        _print_invalid(invalid, "left out (invalid)")

    kinds.guard(go)


def _planned_units(
    data: str | None, config: Path | None, run: Path | None, name: str | None
) -> tuple[list[tuple[Probe, View]], list[InvalidProbe]]:
    """The (probe, view) units observers are asked, from a data directory (all of them) or
    from a sweep's ctxgap benchmark (the views it runs)."""
    from evaltally.benchmarks.registry import load_benchmark
    from evaltally.config import load_config
    from evaltally.config.run_dir import load_run_config

    from .benchmark import CtxgapBenchmark
    from .data import load_dataset

    if data is not None:
        ds = load_dataset(data)
        return list(ds.planned()), ds.invalid()
    sweep = load_config(config) if config is not None else load_run_config(cast(Path, run))
    found = [b for b in sweep.benchmarks if b.kind == "ctxgap"]
    if name is not None:
        found = [b for b in found if b.label == name]
    if len(found) != 1:
        labels = ", ".join(b.label for b in sweep.benchmarks if b.kind == "ctxgap") or "none"
        if name is not None:
            why = f"no ctxgap benchmark is named {name!r}"
        elif found:
            why = "several ctxgap benchmarks: name one with --benchmark"
        else:
            why = "no ctxgap benchmark"
        raise EvaltallyError(f"{sweep.path}: {why} (ctxgap benchmarks: {labels})")
    bench = cast(CtxgapBenchmark, load_benchmark(found[0]))
    return bench.planned, bench.invalid()


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
    output: Path | None = kinds.options.output("JSON report (must not exist)."),
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

    kinds.guard(go)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
