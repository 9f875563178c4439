"""SCAE judge experiments (issue 12; docs/scae.md): a benchmark kind whose judges name the
step of a trajectory they blame under two information sets, and `tally scae ...`.

The runnable kind: `benchmark` (items, the two judge calls, parsing, oracle fields), `items`
(episodes -> judge items), `cte_source` (judge items from a recorded CTE free-rollout run),
`offline` (offline judges), `report` (the grader), `cli` (`tally scae check/cte-judge`).
Pure parts, one job per module: `episodes` (the input format), `provenance` (gold provenance
per step), `conditions` (full vs prefix view, the prefix rule), `parse` (the judge's answer),
`rows` (one judge call as the statistics read it), `stats` (displacement, sign test,
enrichment, late bias), `rules` (zero-LLM rules and chance rates), `judges` (several judges,
heterogeneity), `cte_judge` (judges against CTE's certified first wrong call), `tables`
(report tables), `summary` (everything at once, JSON-ready).
"""

from evaltally.benchmarks.base import BenchmarkKind

KIND = BenchmarkKind(
    name="scae",
    title="SCAE judges",
    benchmark="evaltally.benchmarks.scae.benchmark:ScaeBenchmark",
    grader="evaltally.benchmarks.scae.report:ScaeGrader",
    cli="evaltally.benchmarks.scae.cli:app",
    cli_help="SCAE: check episodes; judge, estimate (by replay) and compare CTE free rollouts",
)
