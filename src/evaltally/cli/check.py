"""`tally check CONFIG`: one smallest call per model before a sweep (run/check.py), as a table;
exit 2 when any model's calls would fail. Writes nothing."""

from __future__ import annotations

import asyncio

import typer

from evaltally.cli.options import ConfigFile
from evaltally.cli.output import EXIT_BAD_INPUT, EXIT_OK, err, guard, labelled, out


def check(config: ConfigFile) -> None:
    """Send one smallest request per model: key, model id, reasoning switch, advertised
    limits, price and the sweep's estimated cost. Writes nothing."""

    def go() -> int:
        from rich.table import Table

        from evaltally.benchmarks.binding import load_benchmarks
        from evaltally.config import load_config
        from evaltally.plan import summarize_plan
        from evaltally.run.check import check_models

        cfg = load_config(config)
        costs: dict[str, float | None] = {m.key: None for m in cfg.models}
        prices = {m.key: m.price for m in cfg.models}
        for (model, _, _, _), row in summarize_plan(cfg, load_benchmarks(cfg)).rows.items():
            price = prices[model]
            if price is not None:
                costs[model] = (costs[model] or 0.0) + price.usd(
                    row.input_tokens, row.output_tokens
                )
        checks = asyncio.run(check_models(cfg, costs))
        table = Table(title=f"check of {cfg.path} (one request per model; nothing written)")
        for col in (
            "model",
            "key",
            "model found",
            "reasoning",
            "limits advertised",
            "price",
            "sweep cost (est.)",
            "ok",
        ):
            table.add_column(col)
        for c in checks:
            shown = (
                "unknown"
                if c.price is None
                else f"${c.price.input_per_mtok:g}/${c.price.output_per_mtok:g} per Mtok"
            )
            cost = "-" if c.cost_usd is None else f"${c.cost_usd:,.2f}"
            table.add_row(
                c.model, c.key, c.found, c.reasoning, c.limits, shown, cost, "yes" if c.ok else "NO"
            )
        out.print(table)
        for c in checks:
            if c.detail and not c.ok:
                err.print(labelled(f"{c.model}: ", "bold red", c.detail))
            elif c.detail:
                err.print(labelled(f"{c.model}: ", "yellow", c.detail))
        failing = [c.model for c in checks if not c.ok]
        if failing:
            err.print(f"would fail: {', '.join(failing)} (fix the config before `tally run`)")
            return EXIT_BAD_INPUT
        return EXIT_OK

    raise typer.Exit(guard(go))
