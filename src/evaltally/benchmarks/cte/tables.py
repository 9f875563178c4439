"""CTE-Bench report tables (terminal and markdown through report/tables.py).

Each row starts with the model; a `benchmark` column follows when the report holds more than
one CTE-Bench benchmark (two data sets, say), so their rows cannot be confused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaltally.report.tables import Table, num, pct


def _who(g: Mapping[str, Any], labelled: bool) -> tuple[str, ...]:
    return (g["model"], g["benchmark"]) if labelled else (g["model"],)


def _cols(labelled: bool) -> tuple[str, ...]:
    return ("model", "benchmark") if labelled else ("model",)


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
                pct(m["parse_failure_rate"]),
                pct(m["coverage"]),
                f"{g['summary']['n_calls']:,}",
            )
        )
    return Table(
        "Headline (intention-to-evaluate, %)",
        (*_cols(labelled), "protocol", "effect-step VM", "all-call VM", "status", "field",
         "parse fail", "coverage", "calls"),
        rows,
        "VM = value match; ± = half-width of the 95% scenario-bootstrap interval.",
        left=3 + labelled,
    )  # fmt: skip


def free_rollout_table(groups: Sequence[Mapping[str, Any]], labelled: bool) -> Table | None:
    rows = []
    for g in groups:
        if g["protocol"] != "free_rollout":
            continue
        m = g["summary"]["metrics"]
        rows.append(
            (
                *_who(g, labelled),
                pct(m["whole_trace_exact"], interval=True),
                num(m["median_first_wrong"]),
                pct(m["vm_calls_1_10"], interval=True),
                pct(m["vm_calls_21_40"], interval=True),
            )
        )
    if not rows:
        return None
    return Table(
        "Free rollout",
        (*_cols(labelled), "whole-trace exact %", "median first wrong call", "VM calls 1-10 %",
         "VM calls 21-40 %"),
        rows,
        "First wrong call is 1-based, over scenarios with a wrong call (parse failures count).",
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
    labelled = len({g["benchmark"] for g in groups}) > 1
    tables = [main_table(groups, labelled)]
    fr = free_rollout_table(groups, labelled)
    if fr is not None:
        tables.append(fr)
    tables += [
        breakdown_table(groups, "by_service", "service", labelled),
        breakdown_table(groups, "by_kind", "intervention kind", labelled),
        equal_service_table(groups, labelled),
    ]
    return tables
