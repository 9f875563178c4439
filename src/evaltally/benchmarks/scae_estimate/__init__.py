"""The SCAE replay estimator (issue 28; docs/scae.md, "The replay estimator"): step
contributions of recorded CTE free rollouts from replays of their recorded prefixes, in a new
run that names its parent; `tally scae estimate RUN ...` starts it.

`source` (the parent run: which chains, the estimation points, the recorded trace, read-only),
`outcome` (the terminal outcome Y and the alternative actions of the intervention branch),
`benchmark` (the replays as planned calls, rendered by the parent's benchmark through the
fork machinery), `stats` (exact tests, BH-FDR, rank correlation), `estimate` (the hybrid of
the paper's equation 14 per chain), `report` (the grader and its tables).
"""

from evaltally.benchmarks.base import BenchmarkKind

KIND = BenchmarkKind(
    name="scae_estimate",
    title="SCAE estimator",
    benchmark="evaltally.benchmarks.scae_estimate.benchmark:EstimateBenchmark",
    grader="evaltally.benchmarks.scae_estimate.report:EstimateGrader",
)
