"""The calls a sweep config plans, with the benchmark each belongs to: for a benchmark's own
commands that work from a config before any run exists (e.g. `tally dex answers`), so they need
neither the plan nor the config loader themselves (cli/kinds.py hands this on)."""

from collections.abc import Iterator
from pathlib import Path

from evaltally.benchmarks.base import Benchmark
from evaltally.records import PlannedCall


def planned_calls(config: Path) -> Iterator[tuple[Benchmark, PlannedCall]]:
    """Every call CONFIG plans, in plan order, with its bound benchmark."""
    from evaltally.benchmarks.binding import load_benchmarks
    from evaltally.config import load_config
    from evaltally.plan.sweep import iter_plan

    cfg = load_config(config)
    benchmarks = load_benchmarks(cfg)
    for call in iter_plan(cfg, benchmarks):
        yield benchmarks[call.benchmark], call
