"""CTE-Bench: scenarios, oracle, sandbox, prompts' inputs, parsing, grading, report, baselines
and the `tally cte` sub-commands."""

from evaltally.benchmarks.base import BenchmarkKind

KIND = BenchmarkKind(
    name="cte",
    title="CTE-Bench",
    benchmark="evaltally.benchmarks.cte.benchmark:CteBenchmark",
    grader="evaltally.benchmarks.cte.report:CteGrader",
    cli="evaltally.benchmarks.cte.cli:app",
    cli_help="CTE-Bench data: fetch, verify, stats, generate",
)
