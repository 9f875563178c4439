"""``tally scae ...``: check an episode file; judge a recorded CTE free-rollout run (mounted by
the root CLI from the registry)."""

from __future__ import annotations

import statistics
from pathlib import Path

import typer

from evaltally.cli import kinds
from evaltally.errors import ConfigError

app = typer.Typer(
    help="SCAE judges: check an episode file; judge the free rollouts of a recorded CTE run.",
    no_args_is_help=True,
)


@app.command()
def check(
    episodes: Path = typer.Argument(..., help="Episode file (.jsonl or .jsonl.gz)."),
    fraction: float = typer.Option(0.6, "--fraction", help="Prefix fraction to show k for."),
) -> None:
    """Validate an episode file (docs/scae.md) and describe it: steps, gold provenance, the
    prefix lengths and the chance rates the report compares judges with."""
    from .conditions import prefix_length
    from .episodes import load_episodes
    from .provenance import episode_provenance

    def run() -> list[str]:
        found = load_episodes(episodes)
        lengths = [e.total_steps for e in found]
        gold = [sum(p.gold for p in episode_provenance(e)) for e in found]
        try:
            shown = [prefix_length(t, fraction) for t in lengths]
        except ValueError as exc:
            raise ConfigError("--fraction", "", str(exc)) from None
        share = sum(g / t for g, t in zip(gold, lengths, strict=True)) / len(found)
        chance = sum(1 / t for t in lengths) / len(found)
        return [
            f"{episodes}: {len(found)} episodes from {len({e.repository for e in found})} "
            f"repositories, {sum(not e.outcome.success for e in found)} failing",
            f"steps: {sum(lengths)} (T from {min(lengths)} to {max(lengths)}, median "
            f"{statistics.median(lengths):g}); prefix at f = {fraction:g}: "
            f"{sum(shown)} steps shown in all",
            f"gold-provenance steps: {sum(gold)} (per-episode mean share {share:.3f} = the "
            f"enrichment baseline); episodes without any: {sum(g == 0 for g in gold)}",
            f"chance agreement of a uniform pick (mean 1/T): {chance:.3f}",
        ]

    for line in kinds.guard(run):
        typer.echo(line)


@app.command("cte-judge")
def cte_judge(
    run_dir: Path = typer.Argument(..., help="A recorded run with CTE-Bench free rollouts."),
    judges: Path = typer.Option(
        ..., "--judges", help="A TOML file whose [[models]] are the judges (any sweep config)."
    ),
    judge: list[str] = typer.Option(
        [], "--judge", help="Only this model key of --judges (repeatable; default: all)."
    ),
    fraction: float = typer.Option(0.6, "--fraction", help="Prefix fraction, fixed in advance."),
    condition: list[str] = typer.Option(
        [], "--condition", help="full or prefix (repeatable; default: both)."
    ),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Judge the first N chains."),
    out: Path | None = kinds.options.output("The new run directory."),
    name: str | None = typer.Option(None, "--name", help="The new run's name, beside RUN."),
    budget: kinds.options.Budget = None,
) -> None:
    """Ask judge models where each recorded free rollout first went wrong, under both
    visibility conditions, in a new run (resumable with `tally resume`); `tally report` on it
    scores them against the certified first wrong call."""
    parent = run_dir.resolve()
    target = kinds.guard(lambda: kinds.derived_run_dir(parent, out, name, "cte-judge"))

    def compose() -> str:
        from evaltally.config.run_dir import CONFIG_COPY, load_run_config
        from evaltally.config.toml_text import derived_config

        load_run_config(parent)  # a clear error when RUN is not a run directory
        try:
            text = judges.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(judges, "", f"cannot read the judges file: {exc}") from None
        bench: dict[str, object] = {"kind": "scae", "cte_run": str(parent), "fraction": fraction}
        if condition:
            bench["conditions"] = list(condition)
        if limit is not None:
            bench["limit"] = limit
        return derived_config(
            f"Written by `tally scae cte-judge` for {parent}; its judges come from {judges}.\n"
            f"Continue it with `tally resume {target}` (this file is the run's {CONFIG_COPY}).",
            {"name": target.name, "runs_dir": str(target.resolve().parent)},
            kinds.model_tables(judges, text, judge),
            bench,
        )

    kinds.start_derived_run(target, compose, budget)
