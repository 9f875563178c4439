"""``tally dex ...``: DexBench data commands (mounted by the root CLI)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import typer

from evaltally.cli import kinds
from evaltally.errors import DataError, EvaltallyError
from evaltally.terminal import visible

app = typer.Typer(
    help="DexBench: build the instances from CRUXEval, HumanEval and (your copy of) PythonSaga.",
    no_args_is_help=True,
)


@app.callback()
def dex() -> None:
    """DexBench data commands (more than one command keeps ``tally dex build`` a sub-command)."""


def _refuse_existing(out: Path, *, force: bool) -> None:
    if out.exists() and not force:
        raise DataError(f"{out}: already exists; pass --force to overwrite it")


def _write_whole(text: str, out: Path) -> None:
    """Write ``out`` through a temporary file, so a failed write leaves no half file."""
    tmp = out.with_name(out.name + ".part")
    try:
        tmp.write_text(text, encoding="utf-8", newline="\n")
        tmp.replace(out)
    except OSError as exc:
        raise DataError(f"{out}: cannot write the instance file: {exc.strerror or exc}") from exc


@app.command()
def build(
    out: Path = kinds.options.output("Instance file to write (JSON Lines).", ...),
    pythonsaga: Path | None = typer.Option(
        None, "--pythonsaga", help="Your copy of PythonSaga's basic185.jsonl (never shipped)."
    ),
    cruxeval: Path | None = typer.Option(None, help="CRUXEval file (default: the packaged one)."),
    humaneval: Path | None = typer.Option(None, help="HumanEval file (default: the packaged one)."),
    jobs: int | None = typer.Option(None, "--jobs", min=1, help="Sandboxes at once (CPU count)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
    sandbox: str = typer.Option(
        "os", "--sandbox", help='"os" (bubblewrap; the default) or the weaker "process"'
    ),
) -> None:
    """Build the instances; each program runs in a sandbox to measure its coverage."""
    from evaltally.sandbox.boundary import Boundary

    from .build import CRUXEVAL_FILE, HUMANEVAL_FILE
    from .build import build as run_build
    from .instances import dumps

    started = time.monotonic()
    try:
        _refuse_existing(out, force=force)  # before the build, not after it
        warning = Boundary(sandbox).require("running the source programs")
        if warning:
            typer.echo(f"warning: {warning}", err=True)
        result = run_build(
            sandbox=sandbox,
            cruxeval=cruxeval or CRUXEVAL_FILE,
            humaneval=humaneval or HUMANEVAL_FILE,
            pythonsaga=pythonsaga,
            jobs=jobs,
        )
        text = dumps(result.instances)
        _refuse_existing(out, force=force)
        _write_whole(text, out)
    except EvaltallyError as exc:
        typer.echo(f"error: {visible(str(exc), newlines=True)}", err=True)
        raise typer.Exit(exc.exit_code) from None
    for source, c in result.counts.items():
        typer.echo(
            f"{source}: {c.records} records -> {c.control_flow} with control flow -> "
            f"{c.runs} run -> {c.kept} instances ({c.known_good} with a known-good input)"
        )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    typer.echo(f"{out}: {len(result.instances)} instances, SHA-256 {digest}")
    typer.echo(f"built in {time.monotonic() - started:.1f} s")


@app.command()
def answers(
    config: Path = typer.Argument(..., help="A sweep config with DexBench benchmarks."),
    out: Path = kinds.options.output("Answers file to write (JSON Lines).", ...),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
) -> None:
    """Write a `tally mock-server --answers-file` script answering every DexBench call of
    CONFIG as the offline `oracle` predictor does (docs/dexbench.md, "Rehearsal"): a rehearsal
    against the mock then shows verification passing."""
    import orjson

    def go() -> int:
        _refuse_existing(out, force=force)
        lines: dict[str, bytes] = {}
        for bench, call in kinds.planned_calls(config):
            if bench.kind != "dexbench":
                continue
            messages = bench.render(call, [])
            last = next(m["content"] for m in reversed(messages) if m["role"] == "user")
            digest = hashlib.sha256(str(last).encode("utf-8")).hexdigest()
            if digest not in lines:
                answer = bench.predictors["oracle"](bench.offline_context(call, []))
                lines[digest] = orjson.dumps({"sha256": digest, "answer": answer})
        if not lines:
            raise DataError(f"{config}: no DexBench call to answer")
        _write_whole(b"\n".join(lines.values()).decode("utf-8") + "\n", out)
        return len(lines)

    n = kinds.guard(go)
    kinds.out.print(f"wrote {n:,} scripted answers to {out}", highlight=False)
