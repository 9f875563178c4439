"""The generic `prompts` benchmark: a JSONL file of items, single calls or multi-turn chains.
docs/benchmarks.md walks through it as the example of a whole benchmark kind."""

from evaltally.benchmarks.base import BenchmarkKind

KIND = BenchmarkKind(
    name="prompts",
    title="Prompts",
    benchmark="evaltally.benchmarks.prompts.benchmark:PromptsBenchmark",
    grader="evaltally.benchmarks.prompts.report:PromptsGrader",
    variant="evaltally.benchmarks.prompts.graded:benchmark_for",
)
