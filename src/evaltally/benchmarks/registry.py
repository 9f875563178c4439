"""Benchmark kind -> implementation, imported lazily so a sweep loads only what it runs."""

from __future__ import annotations

from importlib import import_module

from evaltally.benchmarks.base import Benchmark
from evaltally.config import BenchmarkConfig, SweepConfig

_KINDS = {
    "prompts": ("evaltally.benchmarks.prompts", "PromptsBenchmark"),
    "cte": ("evaltally.benchmarks.cte.benchmark", "CteBenchmark"),
}


def load_benchmark(config: BenchmarkConfig) -> Benchmark:
    module, name = _KINDS[config.kind]
    cls: type[Benchmark] = getattr(import_module(module), name)
    return cls(config)


def load_benchmarks(config: SweepConfig) -> dict[str, Benchmark]:
    return {b.label: load_benchmark(b) for b in config.benchmarks}
