"""Fork-resampling (docs/fork.md): replays of any recorded chain from a step on, in a new run
that names its parent run and chain; `tally fork RUN --chain ID --at STEP --replays M`.

`parent` (the recorded chain, read-only, and what a fork reuses of it), `benchmark` (the
replays as planned calls rendered by the parent's benchmark), `stats` (entropy, outcome
spread, reproduction), `report` (the grader), `cli` (the command).
"""

from evaltally.benchmarks.base import BenchmarkKind

KIND = BenchmarkKind(
    name="fork",
    title="Fork resampling",
    benchmark="evaltally.benchmarks.fork.benchmark:ForkBenchmark",
    grader="evaltally.benchmarks.fork.report:ForkGrader",
    command="evaltally.benchmarks.fork.cli:fork",
    cli_help="Replay a recorded chain from a step on, M times, in a new run (docs/fork.md).",
)
