"""``tally scae ...``: check an episode file; judge a recorded CTE free-rollout run; estimate its
step contributions by replay and compare them with the judges (mounted by the root CLI from the
registry)."""

from __future__ import annotations

import statistics
from pathlib import Path

import typer

from evaltally.cli import kinds
from evaltally.errors import ConfigError
from evaltally.terminal import visible

app = typer.Typer(
    help="SCAE: check an episode file; judge or estimate (by replay) the free rollouts of a "
    "recorded CTE run; compare estimator and judges.",
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
        typer.echo(visible(line))


@app.command("cte-judge")
def cte_judge(
    run_dir: Path = typer.Argument(..., help="A recorded run with CTE-Bench free rollouts."),
    judges: Path = typer.Option(
        ...,
        "--judges",
        help=r"A TOML file whose \[\[models]] are the judges (any sweep config).",
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


@app.command()
def estimate(
    run_dir: Path = typer.Argument(..., help="A recorded run with CTE-Bench free rollouts."),
    model: str | None = typer.Option(
        None, "--model", help="The parent model whose rollouts are estimated and replayed."
    ),
    chain: list[str] = typer.Option(
        [], "--chain", help="A chain id or unique prefix (repeatable; default: all complete)."
    ),
    sample: int | None = typer.Option(None, "--sample", min=1, help="A seeded sample of N chains."),
    seed: int = typer.Option(0, "--seed", help="The sample's seed."),
    points: int = typer.Option(5, "--points", min=1, help="Equidistant estimation points."),
    at: list[int] = typer.Option([], "--at", help="An estimation point (repeatable; 0-based)."),
    replays: int = typer.Option(8, "--replays", min=1, help="m: replays per point and arm."),
    probe: int | None = typer.Option(
        None, "--probe", min=1, help="Replays whose entropy picks the branch (min(4, m))."
    ),
    outcome: str = typer.Option("share", "--outcome", help="Y: share, final or exact."),
    tau_h: float = typer.Option(0.0, "--tau-h", help="Entropy threshold of the branches (nats)."),
    bucket: str = typer.Option("value", "--bucket", help="Action buckets: value or key paths."),
    plan_only: bool = typer.Option(
        False, "--plan", help="Write the run's config and show its plan and cost; send nothing."
    ),
    out: Path | None = kinds.options.output("The new run directory."),
    name: str | None = typer.Option(None, "--name", help="The new run's name, beside RUN."),
    budget: kinds.options.Budget = None,
) -> None:
    """Estimate step contributions of recorded free rollouts from replays of their recorded
    prefixes (SCAE Algorithm 1), in a new run (resumable with `tally resume`); `tally report`
    on it gives the hybrid estimates, their tests and their score against the certified first
    wrong call."""
    parent = run_dir.resolve()
    target = kinds.guard(lambda: kinds.derived_run_dir(parent, out, name, "scae-estimate"))

    def compose() -> str:
        import tomllib

        from evaltally.config.run_dir import CONFIG_COPY, load_run_config
        from evaltally.config.toml_text import derived_config

        load_run_config(parent)  # a clear error when RUN is not a run directory
        copy = parent / CONFIG_COPY
        text = copy.read_text(encoding="utf-8")
        keys = [str(m.get("key")) for m in tomllib.loads(text).get("models", [])]
        if model is None and len(keys) != 1:
            raise ConfigError(copy, "models", f"several models ({', '.join(keys)}); use --model")
        key = model or keys[0]
        bench: dict[str, object] = {"kind": "scae_estimate", "parent": str(parent),
                                    "model": key, "seed": seed, "points": points,
                                    "replays": replays, "outcome": outcome, "tau_h": tau_h,
                                    "bucket": bucket}  # fmt: skip
        if probe is not None:
            bench["probe"] = probe
        if chain:
            bench["chains"] = list(chain)
        if sample is not None:
            bench["sample"] = sample
        if at:
            bench["at"] = list(at)
        return derived_config(
            f"Written by `tally scae estimate` for {parent} (model {key}).\n"
            f"Continue it with `tally resume {target}` (this file is the run's {CONFIG_COPY}).",
            {"name": target.name, "runs_dir": str(target.resolve().parent)},
            kinds.model_tables(copy, text, [key]),
            bench,
        )

    if plan_only:
        from evaltally.config.run_dir import write_derived_config

        kinds.plan(kinds.guard(lambda: write_derived_config(target, compose())))
        return
    kinds.start_derived_run(target, compose, budget)


@app.command()
def compare(
    estimate_export: Path = typer.Argument(..., help="The export of a `tally scae estimate` run."),
    judge_export: Path = typer.Argument(..., help="The export of a `tally scae cte-judge` run."),
) -> None:
    """The estimator's largest negative contribution and the judges' blamed steps, scored
    against the certified first wrong call on the same chains, in segments."""
    from evaltally.benchmarks.scae_estimate.compare import compare as run
    from evaltally.benchmarks.scae_estimate.report import BLAME_STATEMENT
    from evaltally.report.tables import Table, to_markdown

    def go() -> str:
        scores = run(estimate_export, judge_export)
        rows = [
            (s["selector"], str(s["chains"]), f"{s['exact']:.3f}", f"{s['within_one']:.3f}",
             f"{s['signed']:+.3f}", "-" if s["step_hit"] is None else f"{s['step_hit']:.3f}")
            for s in scores
        ]  # fmt: skip
        header = ("selector", "chains", "exact segment", "within 1", "signed", "step hit")
        return to_markdown(Table("Estimator and judges on the same chains", header, rows,
                                 BLAME_STATEMENT, left=1))  # fmt: skip

    typer.echo(kinds.guard(go))
