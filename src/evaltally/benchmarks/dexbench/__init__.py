"""DexBench: instances, coverage, prompts' parser, sandboxed verification, grading, report and
the `tally dex` sub-commands."""

from evaltally.benchmarks.base import BenchmarkKind

KIND = BenchmarkKind(
    name="dexbench",
    title="DexBench",
    benchmark="evaltally.benchmarks.dexbench.benchmark:DexBenchmark",
    grader="evaltally.benchmarks.dexbench.report:DexGrader",
    cli="evaltally.benchmarks.dexbench.cli:app",
    cli_help="DexBench data: build the instances",
    cli_name="dex",
)
