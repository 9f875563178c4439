"""CTXGAP: how much of a coding task's state observers recover from different views of it.

Users bring their own probes (`docs/ctxgap.md` is the input format). Each probe is asked of an
observer model once per view of its checkpoint, and a judge model scores every answer against
the probe's reference; the statistics (importance-weighted accuracy per view, the gap between
two views, a paired task-cluster bootstrap) are pure functions over those scored units.
"""

from evaltally.benchmarks.base import BenchmarkKind

KIND = BenchmarkKind(
    name="ctxgap",
    title="CTXGAP",
    benchmark="evaltally.benchmarks.ctxgap.benchmark:CtxgapBenchmark",
    grader="evaltally.benchmarks.ctxgap.grade:CtxgapGrader",
    cli="evaltally.benchmarks.ctxgap.cli:app",
    cli_help="CTXGAP data: check, export observer inputs, score labeled verdicts",
    resamples=10_000,
)
