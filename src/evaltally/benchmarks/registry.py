"""The one list of benchmark kinds: each line names the folder (package) that defines `KIND`.

The binding of a config's benchmarks (benchmarks/binding.py), `provider = "baseline"`
predictors, `tally <kind> ...` sub-commands, export enrichment and grading all look kinds up
here; nothing else lists them. Kinds are imported on first use, so a sweep loads only what it
runs.
"""

from __future__ import annotations

from importlib import import_module

from evaltally.benchmarks.base import Benchmark, BenchmarkKind
from evaltally.config import BenchmarkConfig

_FOLDERS = {
    "prompts": "evaltally.benchmarks.prompts",
    "cte": "evaltally.benchmarks.cte",
    "ctxgap": "evaltally.benchmarks.ctxgap",
    "scae": "evaltally.benchmarks.scae",
    "fork": "evaltally.benchmarks.fork",
    "scae_estimate": "evaltally.benchmarks.scae_estimate",
    "dexbench": "evaltally.benchmarks.dexbench",
}

_registered: dict[str, BenchmarkKind] = {}


def register(kind: BenchmarkKind) -> None:
    """Add a kind defined outside this package, for the life of the process.

    For a launcher script of your own (and the test suite's two-role kinds): call it before
    `evaltally.cli.main()`. A kind listed above cannot be replaced."""
    if kind.name in _FOLDERS:
        raise ValueError(f"benchmark kind {kind.name!r} is built in and cannot be replaced")
    _registered[kind.name] = kind


def kind_names() -> tuple[str, ...]:
    return (*_FOLDERS, *_registered)


def get_kind(name: str) -> BenchmarkKind:
    if name in _registered:
        return _registered[name]
    kind = import_module(_FOLDERS[name]).KIND
    if not isinstance(kind, BenchmarkKind):
        raise TypeError(f"{_FOLDERS[name]}.KIND is not a BenchmarkKind")
    return kind


def load_benchmark(config: BenchmarkConfig) -> Benchmark:
    """One benchmark built from its config (bound first: benchmarks/binding.py)."""
    return benchmark_class(config)(config)


def benchmark_class(config: BenchmarkConfig) -> type[Benchmark]:
    """The `Benchmark` class that runs one config (its kind's class, or the variant its
    options choose)."""
    return get_kind(config.kind).class_for(config)
