"""SCAE judge experiments (issue 12; docs/scae.md).

One job per module: `episodes` (the input format), `provenance` (gold provenance per step),
`conditions` (full vs prefix view, the prefix rule), `parse` (the judge's answer), `rows`
(one judge call as the statistics read it), `stats` (displacement, sign test, enrichment, late
bias), `rules` (zero-LLM rules and chance rates), `judges` (several judges, heterogeneity),
`fork` (fork-resampling statistics), `cte_judge` (judges against CTE's certified first wrong
call), `tables` (report tables), `summary` (everything at once, JSON-ready).
"""
