"""``tally fork RUN --chain ID --at STEP --replays M``: start (or continue) a fork run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from evaltally.cli import kinds


def fork(
    run_dir: Path = typer.Argument(..., help="The parent run directory."),
    chain: str = typer.Option(
        ..., "--chain", help="The chain to fork: its chain_id (export) or a unique prefix."
    ),
    at: int = typer.Option(
        ..., "--at", min=0, help="First step sampled anew (0-based); earlier steps are reused."
    ),
    replays: int = typer.Option(..., "--replays", min=1, help="How many continuations."),
    model: str | None = typer.Option(
        None,
        "--model",
        help="A model key of the parent's config (default: the model that answered step AT).",
    ),
    bucket: str = typer.Option(
        "value", "--bucket", help="Entropy buckets: value, or key paths such as tool,target."
    ),
    out: Path | None = kinds.options.output("The new run directory."),
    name: str | None = typer.Option(None, "--name", help="The new run's name, beside RUN."),
    budget: kinds.options.Budget = None,
) -> None:
    """Replay a recorded chain from step AT on, REPLAYS times, in a new run that names its
    parent; the parent's ledger is only read. `tally report` on the new run gives the entropy
    at AT, the outcome spread and how often the recorded continuation is reproduced."""
    parent = run_dir.resolve()
    target = kinds.guard(
        lambda: kinds.derived_run_dir(parent, out, name, f"fork-{chain[:8]}-at{at}")
    )

    def compose() -> str:
        from evaltally.config.run_dir import CONFIG_COPY, load_run_config
        from evaltally.config.toml_text import derived_config
        from evaltally.ledger.recorded import read_chain, resolve_chain

        parent_config = load_run_config(parent)  # a clear error when RUN is not a run directory
        chain_id = resolve_chain(parent, chain)
        calls = read_chain(parent, chain_id).calls
        key = model or calls[min(at, len(calls) - 1)].model
        _refuse_offline(parent_config, key, chain_id)
        copy = parent / CONFIG_COPY
        bench = {
            "kind": "fork",
            "parent": str(parent),
            "chain": chain_id,
            "at": at,
            "samples": replays,
            "bucket": bucket,
        }
        return derived_config(
            f"Written by `tally fork` for chain {chain_id} of {parent} at step {at}.\n"
            f"Continue it with `tally resume {target}` (this file is the run's {CONFIG_COPY}).",
            {"name": target.name, "runs_dir": str(target.resolve().parent)},
            kinds.model_tables(copy, copy.read_text(encoding="utf-8"), [key]),
            bench,
        )

    kinds.start_derived_run(target, compose, budget)


def _refuse_offline(config: Any, key: str, chain_id: str) -> None:
    """Replays of an offline predictor are all the same answer: say so, and what to fork."""
    from evaltally.errors import DataError

    found = next((m for m in config.models if m.key == key), None)
    if found is not None and found.provider == "baseline":
        raise DataError(
            f"chain {chain_id} was answered by {key!r}, an offline predictor (provider "
            '"baseline"), whose replays would all be the same; fork a chain a hosted model '
            "answered (a run against the mock provider will do), or pass --model naming a "
            "hosted model of the run's config"
        )
