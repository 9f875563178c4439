"""CTE-Bench report tables (terminal and markdown through report/tables.py).

Each row starts with the model; a `benchmark` column follows when the report holds more than
one CTE-Bench benchmark (two data sets, say), so their rows cannot be confused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaltally.benchmarks.cte.paper_tables import cols as _cols
from evaltally.benchmarks.cte.paper_tables import paper_tables, probe_tables
from evaltally.benchmarks.cte.paper_tables import who as _who
from evaltally.report.tables import Table, pct


def main_table(groups: Sequence[Mapping[str, Any]], labelled: bool) -> Table:
    rows = []
    for g in groups:
        m = g["summary"]["metrics"]
        rows.append(
            (
                *_who(g, labelled),
                g["protocol"],
                pct(m["effect_step_vm"], interval=True),
                pct(m["all_call_vm"], interval=True),
                pct(m["status_match"]),
                pct(m["field_match"]),
                pct(m["field_match_union"]),
                pct(m["parse_failure_rate"]),
                pct(m["coverage"]),
                f"{g['summary']['n_calls']:,}",
            )
        )
    return Table(
        "Headline (intention-to-evaluate, %)",
        (*_cols(labelled), "protocol", "effect-step VM", "all-call VM", "status", "field",
         "field (union)", "parse fail", "coverage", "calls"),
        rows,
        "VM = value match; ± = half-width of the 95% scenario-bootstrap interval. Field match "
        "is the paper's (oracle fields as the denominator); the union reading also counts "
        "extra predicted fields.",
        left=3 + labelled,
    )  # fmt: skip


def breakdown_table(
    groups: Sequence[Mapping[str, Any]], key: str, label: str, labelled: bool
) -> Table:
    rows = []
    for g in groups:
        for name, sub in g["summary"].get(key, {}).items():
            m = sub["metrics"]
            rows.append(
                (
                    *_who(g, labelled),
                    g["protocol"],
                    name,
                    str(sub["n_scenarios"]),
                    pct(m["effect_step_vm"], interval=True),
                    pct(m["all_call_vm"]),
                    pct(m["status_match"]),
                )
            )
    return Table(
        f"By {label} (%)",
        (*_cols(labelled), "protocol", label, "scenarios", "effect-step VM", "all-call VM",
         "status"),
        rows,
        left=3 + labelled,
    )  # fmt: skip


def equal_service_table(groups: Sequence[Mapping[str, Any]], labelled: bool) -> Table:
    rows = []
    for g in groups:
        e = g["summary"]["equal_service"]
        rows.append(
            (
                *_who(g, labelled),
                g["protocol"],
                pct(e["effect_step_vm"], interval=True),
                pct(e["all_call_vm"], interval=True),
                pct(e["status_match"]),
            )
        )
    return Table(
        "Equal-service view (unweighted mean over services, %)",
        (*_cols(labelled), "protocol", "effect-step VM", "all-call VM", "status"),
        rows,
        "Sensitivity view: each service weighs the same whatever its scenario count.",
        left=3 + labelled,
    )


def all_tables(groups: Sequence[Mapping[str, Any]]) -> list[Table]:
    """The main set's tables, then the paper's layouts, then each probe set's own table."""
    labelled = len({g["benchmark"] for g in groups}) > 1
    main = [g for g in groups if g.get("scenario_set", "main") == "main"]
    tables = [main_table(main, labelled)] if main else []
    tables += paper_tables(main, labelled)
    if main:
        tables += [
            breakdown_table(main, "by_service", "service", labelled),
            breakdown_table(main, "by_kind", "intervention kind", labelled),
            equal_service_table(main, labelled),
        ]
    return tables + probe_tables(groups, labelled)
